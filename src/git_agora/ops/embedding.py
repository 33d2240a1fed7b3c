"""Keeping the embedding cache filled: what analyze and search embed before they read vectors, and
`git agora index --embed`, which embeds everything.

A run embeds first what the frontier reads (`frontier.needs`), then older descriptions newest first
for as long as its budget lasts (`embedding.plan`), and appends them to the cache (`embedding.cache`).
It never spends minutes unasked: a terminal sees progress, and a one-line notice says how much is
left and that `git agora index --embed` embeds the rest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..embedding.backends import DEFAULT_MODEL, HASHING, backend_for, hashing_model_id
from ..errors import AgoraError
from ..feedback import when_slow
from ..frontier.embeddings import Coverage, TextsOf, empty_cache
from ..project import Project

if TYPE_CHECKING:
    from ..embedding.plan import EmbedBudget

EMBED_COMMAND = "git agora index --embed"


@dataclass(frozen=True, eq=False)
class EmbedReport:
    """What one run embedded: ``model`` (the id vectors are cached under), ``runtime`` (what encoded;
    None when nothing was, and no encoder was loaded), ``embedded`` rows in ``seconds``, the
    ``coverage`` after it, and whether the vectors were ``cached`` (false: a read-only `.git/agora`,
    used for this run only). ``cache``: the cache table to read vectors from."""

    model: str
    embedded: int
    seconds: float
    coverage: Coverage
    runtime: str | None = None
    cached: bool = True
    cache: Any = field(default=None, repr=False)

    @property
    def rate(self) -> float | None:
        return self.embedded / self.seconds if self.embedded and self.seconds > 0 else None

    def describe(self) -> str:
        if not self.embedded:
            return f"nothing to embed: {self.coverage.describe()} ({self.model})"
        rate = f", {self.rate:,.0f}/s" if self.rate else ""
        return (
            f"embedded {self.embedded:,} descriptions with {self.model} ({self.runtime}) in "
            f"{self.seconds:.1f} s{rate}; {self.coverage.describe()}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "runtime": self.runtime,
            "embedded": self.embedded,
            "seconds": round(self.seconds, 3),
            "rate": None if self.rate is None else round(self.rate, 1),
            "coverage": self.coverage.to_dict(),
            "cached": self.cached,
        }


def update_embeddings(
    project: Project,
    contributions,
    model: str | None = None,
    needed=(),
    budget=None,
    described: Callable[[Sequence[str]], Any] | None = None,
    remind: bool = True,
) -> EmbedReport:
    """Embed the ``needed`` shas that lack a vector of ``model`` (None: the default; 'hashing': the
    lexical fallback), then others newest first within ``budget`` (None: `EmbedBudget` from the
    environment), and cache them. ``contributions`` may leave out the descriptions when
    ``described(shas)`` gives a table with them, at least for those shas (called only when something
    is embedded). ``remind``: a notice says how
    many remain and how to embed them."""
    budget = budget if budget is not None else budget_from_env()
    report = _embed(project, contributions, model, needed, budget, described, everything=False)
    if remind and not report.coverage.complete:
        more = "" if budget.none else f"later runs embed {budget.describe()} more each, "
        project.feedback.notice(f"{report.coverage.describe()}; {more}`{EMBED_COMMAND}` embeds the rest")
    return report


LATER_TEXTS = 20_000
"""At most this many older descriptions are read for a run that must read them apart (a time budget
of seconds reaches a few hundred; MiniLM on 2 cores embeds about 150 a second): their column is read
for those rows only, not for a million."""
EMBED_COLUMNS = ("sha", "timestamp", "log_seq", "valid", "title", "description")
"""What embedding reads: the plan's keys and the texts (not the whole index: a million rows)."""


def embed_everything(project: Project, model: str | None = None) -> EmbedReport:
    """`git agora index --embed`: every valid contribution lacking a vector of ``model``, with progress."""
    from ..embedding.plan import EmbedBudget
    from .indexing import load

    contributions = load(project, EMBED_COLUMNS).contributions
    return _embed(
        project, contributions, project_model(project, model), (), EmbedBudget(float("inf")), None, everything=True
    )


def budget_from_env() -> EmbedBudget:
    """The budget `AGORA_EMBED_BUDGET` sets (seconds), else the default; a bad value is one error line."""
    from ..embedding.plan import EmbedBudget

    try:
        return EmbedBudget.from_env(os.environ)
    except ValueError as exc:
        raise AgoraError(str(exc)) from None


def backlog_budget() -> EmbedBudget:
    """What `analyze` embeds beyond the rows it reads: nothing, unless `AGORA_EMBED_BUDGET` gives seconds
    (`git agora index --embed` embeds the backlog, with progress)."""
    from ..embedding.plan import BUDGET_VARIABLE, EmbedBudget

    if not (os.environ.get(BUDGET_VARIABLE) or "").strip():
        return EmbedBudget(seconds=0.0)
    return budget_from_env()


def _embed(project: Project, contributions, model, needed, budget, described, everything: bool) -> EmbedReport:
    from ..embedding.cache import read_embeddings
    from ..embedding.incremental import PROGRESS_FROM, encode_plan
    from ..embedding.plan import plan_embedding

    cache = read_embeddings(project.repo)
    wanted = model_id(model)
    later = not budget.none
    plan = plan_embedding(contributions, _cached_shas(cache, wanted), needed, everything, later)
    if not plan.first and (not plan.later or budget.none):
        return EmbedReport(wanted, 0, 0.0, Coverage(plan.cached, plan.total), cache=cache)
    backend = backend_for(model, exporting=lambda what: when_slow(project.feedback, what))
    if backend.notice:
        project.feedback.notice(backend.notice)
    if backend.model != wanted:  # a fallback encoder: its own vectors, its own plan
        plan = plan_embedding(contributions, _cached_shas(cache, backend.model), needed, everything, later)
    if "description" not in contributions.column_names and described is not None:
        plan = replace(plan, later=plan.later[:LATER_TEXTS])  # the rest waits for a later run
        contributions = described([*plan.first, *_later(plan, budget)])
    store = _Store(project)
    texts = _texts(contributions, plan, budget)
    encoded = encode_plan(plan, texts, backend, budget, project.feedback.progress, store=store.append)
    coverage = Coverage(plan.cached + encoded.count, plan.total)
    report = EmbedReport(backend.model, encoded.count, encoded.seconds, coverage, backend.runtime, store.cached)
    if encoded.count >= PROGRESS_FROM and not everything:
        project.feedback.notice(report.describe())
    return replace(report, cache=store.cache())


class _Store:
    """Appends each slice of new vectors to the cache; on a read-only `.git/agora`, one notice and the
    slices kept in memory for this run."""

    def __init__(self, project: Project):
        self.project = project
        self.cached = True
        self.kept: list = []

    def append(self, rows) -> None:
        from ..embedding.cache import append_embeddings
        from ..index.segments import WriteFailed

        if self.cached:
            try:
                append_embeddings(self.project.repo, rows)
                return
            except WriteFailed as exc:
                if not exc.read_only:
                    raise
                self.project.feedback.notice(f"{exc}: the new embeddings are not cached")
                self.cached = False
        self.kept.append(rows)

    def cache(self):
        """The cache as stored, plus the slices that could not be."""

        from ..embedding.cache import read_embeddings

        stored = read_embeddings(self.project.repo)
        if not self.kept:
            return stored
        return pa.concat_tables([stored if stored is not None else empty_cache(), *self.kept])


def _texts(contributions, plan, budget) -> Mapping[str, str]:
    """The texts of what the run may encode (``later`` only as far as a row budget reaches)."""

    return TextsOf(contributions, [*plan.first, *_later(plan, budget)])


def _later(plan, budget) -> tuple[str, ...]:
    """What of ``plan.later`` a run may reach: none without a budget, a row budget's count, else all."""
    return () if budget.none else (plan.later if budget.rows is None else plan.later[: budget.rows])


def _cached_shas(cache, model: str):

    if cache is None or not cache.num_rows:
        return ()
    return cache["sha"].filter(pc.equal(cache["model"], model))  # never touch the vectors here


def model_id(model: str | None) -> str:
    """The id vectors of ``model`` are cached under (None: the default model)."""

    return hashing_model_id() if model == HASHING else (model or DEFAULT_MODEL)


def project_model(project: Project, model: str | None) -> str | None:
    """``model``, else the project's `[embeddings] model` (None: the default)."""
    return model or project.config.sections.get("embeddings", {}).get("model")
