"""`analyze` and `search` over the local index: what has been tried, what holds up, what to do next."""

from __future__ import annotations

import time
from collections.abc import Iterable

from ..errors import AgoraError
from ..project import Project


def analyze(project: Project, views: Iterable[str] = (), limit: int = 10, model: str | None = None, embed: bool = True):
    """The frontier (`frontier.analyze.AnalyzeResult`): summary, the three UCB slots, the views and
    the diversity of recent work. `model`: the embedding model ('hashing': the lexical fallback).
    `embed=False`: use only the vectors already cached, never load an encoder (clusters are then
    missing, with a note saying why, when too few descriptions have one)."""
    from ..embedding.cache import cached_embeddings, read_embeddings
    from ..frontier.analyze import AnalyzeConfig
    from ..frontier.analyze import analyze as compute
    from ..index.followons_cache import cached_counter
    from .indexing import load

    index = load(project, ANALYZE_COLUMNS)  # descriptions only if something must be embedded
    model_id: str | None
    if embed:
        embeddings, model_id = cached_embeddings(
            project.repo,
            index.contributions,
            _model(project, model),
            project.feedback,
            lambda: load(project).contributions,
        )
    else:
        embeddings, model_id = read_embeddings(project.repo), _cached_model_id(_model(project, model))
    try:
        config = AnalyzeConfig.from_project(
            project.config, limit=limit, views=tuple(views) or None, embedding_model=model_id, now=time.time()
        )
    except ValueError as exc:
        raise AgoraError(f"agora.toml {exc}") from None
    counter = cached_counter(project.repo)  # n(v) updated from the last run's, not recounted
    result = compute(index.contributions, None, None, embeddings, config, index.cross_refs, counter)
    return _with_tamper_notes(project, result)


def _with_tamper_notes(project: Project, result):
    """Unacknowledged tamper reports lead the summary notes (`git agora status --ack ID` ends them)."""
    from dataclasses import replace

    from ..trust import tamper_reports

    reports = tamper_reports(project.repo)
    if not reports:
        return result
    notes = tuple(f"tampering: {r.describe()} (git agora status --ack {r.id})" for r in reports)
    return replace(result, summary=replace(result.summary, notes=notes + result.summary.notes))


def search(project: Project, query: str, limit: int = 10, model: str | None = None):
    """The contributions nearest to a free-text idea (`frontier.search.SearchResult`): embedding
    similarity, keyword match as the fallback."""
    from ..embedding.backends import HASHING, backend_for
    from ..embedding.cache import cached_embeddings, row_reader
    from ..frontier.search import search as nearest
    from ..frontier.search import with_claims
    from .indexing import load

    if not query.strip():
        raise AgoraError("empty query: say what you are looking for")
    contributions = load(project, SEARCH_COLUMNS).contributions  # descriptions only if they are needed
    embeddings, model_id = cached_embeddings(
        project.repo, contributions, _model(project, model), project.feedback, lambda: load(project).contributions
    )
    backend = backend_for(HASHING if model_id.startswith(HASHING) else model_id, threads=1)  # one short text
    if backend.notice:
        project.feedback.notice(backend.notice)  # a fallback, or an export that just happened
    read = row_reader(project.repo, embeddings)  # every vector is scanned: plain reads, not a mapping
    found = nearest(query, contributions, embeddings, k=limit, backend=backend, model=model_id, read=read)
    if found.method == "keyword" and "description" not in contributions.column_names:  # keywords read descriptions
        contributions = load(project).contributions
        found = nearest(query, contributions, embeddings, k=limit, backend=backend, model=model_id, read=read)
    return with_claims(found, _claims(project, contributions))


def _claims(project: Project, contributions):
    """The active claims; what they read (metadata, parents) is loaded only when some row is `wip`."""
    import pyarrow.compute as pc

    from ..frontier.claims import active_claims
    from .indexing import load

    if not pc.any(pc.equal(pc.list_flatten(contributions["tags"]), "wip")).as_py():
        return []
    if not {"metadata", "parents"} <= set(contributions.column_names):
        contributions = load(project, (*SEARCH_COLUMNS, "metadata", "parents")).contributions
    return active_claims(contributions, time.time())


# what analyze reads: everything but the descriptions (the largest column), which only embedding needs
ANALYZE_COLUMNS = (
    "account",
    "log_seq",
    "title",
    "tags",
    "metrics",
    "primary_metric",
    "metadata",
    "parents",
    "tree",
    "code_bearing",
    "target",
    "verdict",
    "valid",
    "reasons",
    "policy",
)
# what search reads of the contributions when every description already has a vector
SEARCH_COLUMNS = ("valid", "title", "account", "primary_metric", "tags")


def _cached_model_id(model: str | None) -> str | None:
    """The id vectors of `model` are cached under (None: whichever model has the most vectors)."""
    from ..embedding.backends import HASHING, hashing_model_id

    return hashing_model_id() if model == HASHING else model


def _model(project: Project, model: str | None) -> str | None:
    return model or project.config.sections.get("embeddings", {}).get("model")
