"""`analyze` and `search` over the local index: what has been tried, what holds up, what to do next."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..contribution import TAG_PATTERN, WIP
from ..errors import AgoraError
from ..feedback import when_slow
from ..project import Project

if TYPE_CHECKING:
    import pyarrow as pa

    from ..embedding.plan import EmbedBudget
    from ..frontier.analyze import AnalyzeResult
    from ..frontier.clusters import ClusterParams
    from ..frontier.search import SearchResult


def analyze(
    project: Project,
    views: Iterable[str] = (),
    limit: int = 10,
    model: str | None = None,
    embed: bool = True,
    budget: EmbedBudget | None = None,
    clusters: ClusterParams | None = None,
) -> AnalyzeResult:
    """The frontier (`frontier.analyze.AnalyzeResult`): summary, the three UCB slots, the views and
    the diversity of recent work. `model`: the embedding model ('hashing': the lexical fallback).
    `embed`: first embed the descriptions whose vectors the frontier reads (`frontier.needs`; what
    arrived since the last analysis is among them), then older ones within `budget`
    (`embedding.plan.EmbedBudget`; None: none unless `AGORA_EMBED_BUDGET` gives seconds, so a warm
    analysis with nothing new loads no encoder); a notice says how many remain. `embed=False`: use
    only the vectors already cached, never load an encoder (clusters are then missing, with a note
    saying why, when too few descriptions have one).
    `clusters`: `frontier.clusters.ClusterParams` (None: the defaults, a window of 5,000)."""

    from ..embedding.cache import read_embeddings
    from ..frontier.analyze import AnalyzeConfig
    from ..frontier.analyze import analyze as compute
    from ..frontier.needs import vectors_needed
    from .embedding import backlog_budget, project_model, update_embeddings
    from .frame_cache import analysis_frame, writes_aside
    from .indexing import load, load_rows
    from .link_cache import kept_linker
    from .standing import root_and_config

    index = load(project, ANALYZE_COLUMNS)  # descriptions only if something must be embedded
    root, policy = root_and_config(project, index.contributions)
    try:
        config = AnalyzeConfig.from_project(
            project.config, limit=limit, views=tuple(views) or None, now=time.time(), root=root
        )
        config = config if clusters is None else replace(config, clusters=clusters)
    except ValueError as exc:
        raise AgoraError(f"agora.toml {exc}") from None
    with writes_aside() as aside:  # the kept state is written while the analysis goes on
        # kept from the last analysis, grown by what is new
        frame = analysis_frame(project, index.contributions, config, aside)
        model = project_model(project, model)
        model_id: str | None
        if embed:
            needed = frame.table["sha"].take(vectors_needed(frame, config.clusters, config.ucb))
            report = update_embeddings(
                project,
                index.contributions,
                model,
                needed,
                budget if budget is not None else backlog_budget(),
                lambda shas: load_rows(project, TEXT_COLUMNS, shas, timestamps_of(index.contributions, shas)),
            )
            embeddings, model_id = report.cache, report.model
        else:
            embeddings, model_id = read_embeddings(project.repo), _cached_model_id(model)
        config = replace(config, embedding_model=model_id)
        link = kept_linker(project)
        result = compute(
            index.contributions,
            embeddings=embeddings,
            config=config,
            cross_refs=index.cross_refs,
            frame=frame,
            link=link,
        )
    return _with_notes(project, index.contributions, policy, result)


def timestamps_of(contributions: pa.Table, shas: Sequence[str]) -> list[int] | None:
    """The timestamps of `shas` in `contributions` (None when one is missing: then nothing is pruned)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    hit = contributions.filter(pc.is_in(contributions["sha"], value_set=pa.array(sorted(set(shas)), pa.string())))
    stamps = hit["timestamp"].to_pylist()
    return None if len(stamps) < len(set(shas)) or None in stamps else stamps


def _with_notes(project: Project, contributions, policy, result):
    """Unacknowledged tamper reports lead the summary notes (`git agora status --ack ID` ends them);
    accounts whose names look like earlier ones follow them, and so do the current policy's (`policy`, a
    `ProjectConfig`) CI accounts without a pinned key (`standing.ci_pin_notes`)."""
    from ..trust import tamper_reports
    from .standing import ci_pin_notes, look_alike_notes

    tampering = [f"tampering: {r.describe()} (git agora status --ack {r.id})" for r in tamper_reports(project.repo)]
    notes = (*tampering, *result.summary.notes, *look_alike_notes(contributions), *ci_pin_notes(policy))
    return replace(result, summary=replace(result.summary, notes=notes))


def search(
    project: Project,
    query: str,
    limit: int = 10,
    model: str | None = None,
    budget: EmbedBudget | None = None,
    tags: Iterable[str] = (),
) -> SearchResult:
    """The contributions nearest to a free-text idea (`frontier.search.SearchResult`): embedding
    similarity over the contributions with a vector, keyword match for those without one (and as the
    fallback). Embeds at most what `budget` allows (as analyze: newest first; None: 5 s or
    `AGORA_EMBED_BUDGET`), never the whole project; `coverage` says how many have a vector. `tags`:
    only contributions with one of these tags, and none with a tag named with a leading ``-``
    (``tags=["-verification", "-witness"]`` leaves out verdicts and witness records)."""

    from ..embedding.backends import backend_for
    from ..embedding.cache import row_reader
    from ..frontier.search import search as nearest
    from ..frontier.search import with_claims
    from .embedding import EMBED_COMMAND, model_id, project_model, update_embeddings
    from .indexing import load

    if not query.strip():
        raise AgoraError("empty query: say what you are looking for")
    picked = _tag_filter(tags)
    wanted = project_model(project, model)
    encoded = _encoded_query(project, query, model_id(wanted))  # before the index: its encoder is gone by then
    contributions = picked(load(project, SEARCH_COLUMNS).contributions)  # descriptions only if they are needed
    report = update_embeddings(
        project,
        contributions,
        wanted,
        budget=budget,
        described=lambda shas: load(project, KEYWORD_COLUMNS).contributions,  # keywords need them all
        remind=False,
    )
    embeddings, model_id_ = report.cache, report.model
    if not report.coverage.complete and "description" not in contributions.column_names:
        contributions = picked(load(project, KEYWORD_COLUMNS).contributions)  # keywords find those without a vector
    backend = encoded if encoded.model == model_id_ else backend_for(model_id_, threads=1)  # a fallback's
    read = row_reader(project.repo, embeddings)  # every vector is scanned: plain reads, not a mapping
    found = nearest(query, contributions, embeddings, k=limit, backend=backend, model=model_id_, read=read)
    if found.method == "keyword" and "description" not in contributions.column_names:  # keywords read descriptions
        contributions = picked(load(project, KEYWORD_COLUMNS).contributions)
        found = nearest(query, contributions, embeddings, k=limit, backend=backend, model=model_id_, read=read)
    if found.coverage is not None and not found.coverage.complete:
        found = replace(found, note=f"{found.note or found.coverage.describe()}; run `{EMBED_COMMAND}` for the rest")
    return with_claims(found, _claims(project, contributions))


def _tag_filter(tags: Iterable[str]) -> Callable[[pa.Table], pa.Table]:
    """What `search(tags=...)` keeps of a table: a row with one of the tags named (all, when none is),
    and none of those named with a leading ``-``."""
    named = list(tags)
    if isinstance(tags, str) or any(not TAG_PATTERN.match(t.removeprefix("-")) for t in named):
        raise AgoraError(f"tags {named!r}: give tag names, each with a leading - to leave it out")
    wanted = [t for t in named if not t.startswith("-")]
    left_out = [t[1:] for t in named if t.startswith("-")]

    def picked(table: pa.Table) -> pa.Table:
        if not named:
            return table
        import numpy as np
        import pyarrow as pa

        from ..frontier.graph import tag_mask

        keep = tag_mask(table, *wanted) if wanted else np.ones(table.num_rows, bool)
        return table.filter(pa.array(keep & ~tag_mask(table, *left_out)))

    return picked


@dataclass(frozen=True)
class _EncodedQuery:
    """A query already embedded, standing in for its encoder (`frontier.embeddings.QueryEncoder`)."""

    model: str
    runtime: str
    vector: Any

    def encode(self, texts: list[str]) -> Any:
        return self.vector[None, :]


def _encoded_query(project: Project, query: str, model: str) -> _EncodedQuery:
    """The query's vector from a one-thread encoder that is dropped at once: its session (70 MB for
    MiniLM) is never held beside the index columns and the vectors a search scans."""
    from ..embedding.backends import HASHING, backend_for

    exporting = lambda what: when_slow(project.feedback, what)  # noqa: E731
    backend = backend_for(HASHING if model.startswith(HASHING) else model, threads=1, exporting=exporting)
    if backend.notice:
        project.feedback.notice(backend.notice)  # a fallback, or an export that just happened
    return _EncodedQuery(backend.model, backend.runtime, backend.encode([query])[0])


def _claims(project: Project, contributions):
    """The active claims; what they read (metadata, parents) is loaded only when some row is `wip`."""
    import pyarrow.compute as pc

    from ..frontier.claims import CLAIM_COLUMNS, active_claims
    from .indexing import load

    if not pc.any(pc.equal(pc.list_flatten(contributions["tags"]), WIP)).as_py():
        return []
    if not set(CLAIM_COLUMNS) <= set(contributions.column_names):
        contributions = load(project, CLAIM_COLUMNS).contributions
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
    "run_backed",
)
# what embedding reads: the text (title and description) of valid contributions, newest first
TEXT_COLUMNS = ("title", "description", "valid", "log_seq")
# what search reads of the contributions when every description already has a vector
SEARCH_COLUMNS = ("valid", "title", "account", "primary_metric", "tags")
# what keyword matching (contributions without a vector) and embedding the budget's rows read besides
KEYWORD_COLUMNS = (*SEARCH_COLUMNS, "description", "log_seq")


def _cached_model_id(model: str | None) -> str | None:
    """The id vectors of `model` are cached under (None: whichever model has the most vectors)."""
    from ..embedding.backends import HASHING, hashing_model_id

    return hashing_model_id() if model == HASHING else model
