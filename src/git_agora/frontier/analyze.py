"""One call that computes everything an agent needs to choose its next piece of work.

``analyze(contributions, embeddings, config) -> AnalyzeResult``; the result's
``to_dict()`` is the JSON of ``git agora analyze --json``:

- ``summary``: ``warning`` (first: the convergence warning's message, or null), ``contributions``
  (rows in the index), ``valid``, ``rejected``, ``accounts`` (with a valid contribution),
  ``results`` (scored results, ``scored.scored_mask``: valid, reporting the primary metric, not
  verifications, wip or endorsements, not failed-verified; ``stats`` counts the same),
  ``hypotheses``, ``verifications``, ``unverified_results``, ``contested``, ``metric`` /
  ``direction`` / ``tolerance`` (the project's primary metric), ``best`` (the best result,
  ``scored.best_node``: the latest noise-aware new best, as in ``stats``, by mean over draws where
  replicates count; sha, title, account,
  metric, timestamp, status, ties = other results within the tolerance of it, ``verdicts``: every
  verdict on it, counting or not (``verdict_rows.VerdictRow``), ``unsettled_failures``: its failed
  reruns that do not count yet; null without metric),
  ``notes`` (why parts are empty or degraded, and when the leaders are not comparable),
  ``incomparable`` (the ``[eval] comparable_on`` fields on which the leaders' recorded evaluator
  outputs disagree: ``{field, values: [{value, results}]}``; see ``comparable``), ``calibration``
  (every account's predictions together: results, predicted, inside, short, beat, inside_share,
  mean_error, p_value, over_optimistic; null when no scored result carries a prediction) and
  ``over_optimistic`` (the accounts whose predictions are systematically over-optimistic; see
  ``calibration``).
- ``slots``: ``exploration_c`` (C), ``bunching``, ``n_total`` (N), ``params`` (the UCB constants) and
  ``slots``: three of ``{name, purpose, note, suggestions}``, names exploit, explore_known,
  explore_novel; each suggestion ``{sha, title, account, metric, status, ucb, quality,
  quality_source (own|inherited|parent|none), follow_ons, cluster, cluster_size, duplicates, reason,
  claimed_by}`` (``claimed_by``: the active claims on it, ``{account, until, sha, title}``).
- ``claims``: the active claims at ``AnalyzeConfig.now`` (``claims.active_claims``), newest first:
  ``{sha, target, account, since, until, title}``; empty when ``now`` is not given.
- ``views``: ``{name: {name, title, total, note, rows}}`` for the selected views (see
  ``views.VIEW_NAMES``; rows carry sha, title, account, timestamp, tags, metric + view fields).
- ``diversity``: ``available``, ``note``, ``model``, ``coverage``, ``window``, ``threshold``,
  ``count``, ``sizes``, ``top_share``, ``effective_count``, ``evenness``, ``clusters`` (id, size,
  share, label, central_sha, best_sha, best_metric), ``histogram`` ({edges, counts, below, above}
  of the metric: ``clusters.metric_histogram``),
  ``promising_small`` (rows with cluster, cluster_size, quality), ``warning`` ({cluster, label, size,
  share, window, message, alternatives} or null).

The rules of each part are in the docstrings of ``views``, ``clusters`` and ``ucb``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import comparable
from .calibration import Calibration, FrameCalibration, frame_calibration
from .checked import mark_rows, shown_shas, unchecked_shas
from .claims import Claim, active_claims, claims_on
from .clusters import ClusterParams, Diversity, Linker, diversity, linked
from .embeddings import pick_model, vector_index
from .evidence import FollowOnCounter, verdicts_of
from .frame import Frame, build_frame
from .root import Root
from .ucb import Replicas, Slots, UcbParams, plan_slots
from .verdict_rows import VerdictRow, unsettled_failures, unsettled_note, verdict_rows
from .views import Best, View, ViewParams, best, compute_views, held_back, ranked_by_metric


@dataclass(frozen=True)
class AnalyzeConfig:
    """What to analyse and how.

    ``metric``: the primary metric's name (for display); ``direction``: min | max; ``tolerance``:
    the reproduction tolerance (absolute, in metric units); ``limit``: rows per view;
    ``views``: names to compute (None: all); ``weights``: tag weights for evidence (None: defaults);
    ``embedding_model``: which model's vectors to use (None: the model with most cached rows);
    ``comparable_on``: evaluator output fields that must agree for results to compare
    (``[eval] comparable_on``).
    """

    metric: str | None = None
    direction: str = "min"
    tolerance: float = 0.0
    limit: int = 10
    views: tuple[str, ...] | None = None
    ucb: UcbParams = field(default_factory=UcbParams)
    clusters: ClusterParams = field(default_factory=ClusterParams)
    view_params: ViewParams = field(default_factory=ViewParams)
    weights: Mapping[str, float] | None = None
    embedding_model: str | None = None
    comparable_on: tuple[str, ...] = ()
    now: float | None = None  # the reader's clock, for claims (None: no claims)
    root: Root = Root()  # whose verdicts count from the start, the current evaluator epoch

    @classmethod
    def from_project(cls, project: Any, **overrides: Any) -> AnalyzeConfig:
        """From a ``config.ProjectConfig``: metric, direction, tolerance, tag weights, ``[ucb]`` and
        ``[eval] comparable_on``."""
        sections = getattr(project, "sections", {}) or {}
        evaluation = getattr(project, "evaluation", None)
        base = cls(
            metric=project.metric,
            direction=project.direction,
            tolerance=project.tolerance,
            weights=dict(project.tag_weights),
            ucb=UcbParams.from_mapping(sections.get("ucb")),
            comparable_on=tuple(getattr(evaluation, "comparable_on", ()) or ()),
        )
        return replace(base, **overrides)


@dataclass(frozen=True)
class Summary:
    """Counts, the best result and notes; see the module docstring for each field."""

    warning: str | None
    contributions: int
    valid: int
    rejected: int
    accounts: int
    results: int
    hypotheses: int
    verifications: int
    unverified_results: int
    contested: int
    metric: str | None
    direction: str
    tolerance: float
    best: Best | None
    notes: tuple[str, ...]
    incomparable: tuple[comparable.Difference, ...] = ()
    calibration: Calibration | None = None
    over_optimistic: tuple[str, ...] = ()
    best_verdicts: tuple[VerdictRow, ...] = ()  # every verdict on the best, newest first, counting or not
    best_unsettled: int = 0  # failed reruns on the best that do not count yet (``verdict_rows``)
    unsettled: int = 0  # contributions with failed reruns that do not count yet
    best_checked: bool | None = None  # whether the best carries its run record (``checked.run_backed``)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out.pop("best_verdicts"), out.pop("best_unsettled"), out.pop("best_checked")
        out["best"] = None if self.best is None else self.best.to_dict()
        if out["best"] is not None:
            out["best"]["checked"] = self.best_checked
            out["best"]["verdicts"] = [v.to_dict() for v in self.best_verdicts]
            out["best"]["unsettled_failures"] = self.best_unsettled
        out["calibration"] = None if self.calibration is None else self.calibration.to_dict()
        out["over_optimistic"] = list(self.over_optimistic)
        out["notes"] = list(self.notes)
        out["incomparable"] = [d.to_dict() for d in self.incomparable]
        return out


@dataclass(frozen=True, eq=False)
class AnalyzeResult:
    """Everything ``analyze`` computes; ``to_dict()`` gives JSON-able output (module docstring)."""

    summary: Summary
    slots: Slots
    views: dict[str, View]
    diversity: Diversity
    frame: Frame = field(repr=False)
    references: tuple[dict[str, Any], ...] = ()
    claims: tuple[Claim, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary.to_dict(),
            "slots": self.slots.to_dict(),
            "views": {name: view.to_dict() for name, view in self.views.items()},
            "diversity": self.diversity.to_dict(),
            "references": list(self.references),
            "claims": [c.to_dict() for c in self.claims],
        }


def analyze(
    contributions: pa.Table,
    embeddings: pa.Table | None = None,
    config: AnalyzeConfig = AnalyzeConfig(),
    cross_refs: pa.Table | None = None,
    frame: Frame | None = None,
    link: Linker = linked,
) -> AnalyzeResult:
    """Evidence, views, clusters and UCB slots in one pass over the index tables; with the index's
    ``cross_refs`` table, also the commits of other projects that valid contributions cite. Evidence
    derives the edges and verdicts from ``contributions``. ``frame``: ``frame_for(contributions,
    config)`` when the caller built it already (`ops.frame_cache`: with a cache's n(v)). ``link``: the
    window's clustering (`clusters.diversity`; `ops.link_cache` keeps the last answer).
    """
    frame = frame_for(contributions, config) if frame is None else frame
    model = pick_model(embeddings, config.embedding_model)
    vectors = vector_index(embeddings, frame.table["sha"], model)
    div = diversity(frame, vectors.present, vectors.vectors, config.clusters, model, config.limit, link)
    claims = tuple(active_claims(contributions, config.now)) if config.now is not None else ()
    replicas = Replicas.of(frame) if config.ucb.replicating else None  # read by the slots and the summary's best
    slots = with_claims(plan_slots(frame, div.clustering, config.ucb, replicas), claims)
    view_params = replace(config.view_params, verify=config.ucb.verify)  # one source: [ucb]
    views = compute_views(frame, config.limit, config.views, view_params)
    summary = _summary(frame, config, div, replicas)
    shown = {sha for view in views.values() for sha in shown_shas(view.rows)}
    unchecked = unchecked_shas(frame.graph.table, frame.scored, shown | ({summary.best.sha} if summary.best else set()))
    views = {name: mark_rows(view, unchecked) for name, view in views.items()}
    if summary.best is not None:
        summary = replace(summary, best_checked=summary.best.sha not in unchecked)
    references = cited_commits(frame, cross_refs, config.limit)
    return AnalyzeResult(summary, slots, views, div, frame, references, claims)


def frame_for(contributions: pa.Table, config: AnalyzeConfig, counter: FollowOnCounter | None = None) -> Frame:
    """The evidence frame analyze computes everything from (also what `needs.vectors_needed` reads);
    ``counter`` computes n(v) (a cache's, or the batch count)."""
    return build_frame(
        contributions,
        direction=config.direction,
        tolerance=config.tolerance,
        weights=config.weights,
        counter=counter,
        root=config.root,
    )


def with_claims(slots: Slots, claims: tuple[Claim, ...]) -> Slots:
    """Each suggestion with the active claims on it, so an agent sees who works there before it starts."""
    on = claims_on(list(claims))
    if not on:
        return slots
    marked = tuple(
        replace(slot, suggestions=tuple(replace(s, claimed_by=_claimers(on.get(s.sha, []))) for s in slot.suggestions))
        for slot in slots.slots
    )
    return replace(slots, slots=marked)


def _claimers(claims: list[Claim]) -> tuple[dict[str, Any], ...]:
    return tuple({"account": c.account, "until": c.until, "sha": c.sha, "title": c.title} for c in claims)


def cited_commits(frame: Frame, cross_refs: pa.Table | None, limit: int) -> tuple[dict[str, Any], ...]:
    """Cross-project references of valid contributions, newest citing contribution first:
    rows of (sha, title, account, timestamp, url, target)."""
    if cross_refs is None or cross_refs.num_rows == 0 or frame.n == 0:
        return ()
    nodes = frame.graph.lookup(cross_refs["sha"])
    keep = nodes >= 0
    order = np.argsort(-frame.timestamp[nodes[keep]], kind="stable")[:limit]
    rows = frame.rows(nodes[keep][order])
    urls = np.asarray(cross_refs["url"].to_pylist(), dtype=object)[keep][order]
    targets = np.asarray(cross_refs["target"].to_pylist(), dtype=object)[keep][order]
    return tuple({**row, "url": url, "target": target} for row, url, target in zip(rows, urls, targets))


def _tie_notes(top: Best | None) -> list[str]:
    """Which results the best tied with on priority time, and how the tie was broken."""
    if top is None or not top.tied_at_time:
        return []
    others = ", ".join(sha[:10] for sha in top.tied_at_time)
    when = (
        "first witnessed by the same witness record"
        if top.witness_time is not None
        else "claimed in the same second, unwitnessed"
    )
    return [
        f"the best, {top.sha[:10]}, ties on priority with {others} ({when}, within the tolerance): "
        "the earlier by log position, then by sha, took the new-best credit"
    ]


def _epoch_notes(frame: Frame) -> list[str]:
    """Why results of an earlier evaluator are not ranked, and what to do about it."""
    earlier = int(frame.earlier_epoch.sum())
    if not earlier:
        return []
    apart = f"{earlier} result(s) scored under an earlier evaluator are listed apart (earlier_epoch)"
    rerun = "to re-measure one under the current evaluator: git agora checkout SHA, then push --check --rerun"
    if not frame.scored.any():
        return [
            f"a policy amendment changed the evaluator: no result is scored under it yet, so the leaders are "
            f"empty; {apart}; {rerun}"
        ]
    return [f"{apart}, never ranked against the current ones; {rerun}"]


def _summary(frame: Frame, config: AnalyzeConfig, div: Diversity, replicas: Replicas | None) -> Summary:
    total = frame.contributions.num_rows
    notes = []
    metric = config.metric or "primary metric"
    if frame.n <= 1:
        notes.append("nothing but the setup contribution yet: build on it" if frame.n else "no valid contribution yet")
    if not frame.has_metric and not frame.earlier_epoch.any():
        notes.append(
            f"no valid contribution reports the {metric}: leaders, quality percentiles and the exploit slot "
            "are empty, and UCB uses Q = 0"
        )
    notes.extend(_epoch_notes(frame))
    top = best(frame if replicas is None else replicas.frame)  # replicates: by the mean over draws
    notes.extend(_tie_notes(top))
    if held := held_back(frame if replicas is None else replicas.frame):
        notes.append(
            f"a contested result, {held[:10]}, would be the best: it does not lead until the trust root's rerun "
            f"or more reruns settle it (git agora verify {held[:12]})"
        )
    verdicts = verdicts_of(frame.graph)
    unsettled = unsettled_failures(verdicts, frame.n)
    top_node = -1 if top is None else int(frame.graph.lookup(pa.array([top.sha], pa.string()))[0])
    if top is not None and top_node >= 0 and (signal := unsettled_note(int(unsettled[top_node]), top.sha)):
        notes.append(f"the best, {top.sha[:10]}, has {signal}")
    if top is not None and replicas is not None:
        notes.append(f"the best, {top.sha[:10]}, by its mean over draws (replicates count: [ucb] replicate_within)")
    if not div.available and div.note:
        notes.append(div.note)
    incomparable = _leaders_differ(frame, config)
    if incomparable:
        notes.append(str(comparable.warning(f"the top {config.limit} leaders", incomparable)))
    calibrated = frame_calibration(frame, config.view_params.calibration_alpha)
    notes.extend(_over_optimism(calibrated))
    accounts = len(pc.unique(frame.table["account"])) if frame.n else 0
    return Summary(
        warning=None if div.warning is None else div.warning.message,
        contributions=total,
        valid=frame.n,
        rejected=total - frame.n,
        accounts=accounts,
        results=int(frame.scored.sum()),
        hypotheses=int(frame.hypothesis.sum()),
        verifications=int(frame.verification.sum()),
        unverified_results=int((frame.scored & (frame.status == "unverified")).sum()),
        contested=int((frame.status == "contested").sum()),
        metric=config.metric,
        direction=config.direction,
        tolerance=config.tolerance,
        best=top,
        notes=tuple(notes),
        incomparable=incomparable,
        calibration=calibrated.overall if calibrated.overall.predicted else None,
        over_optimistic=calibrated.over_optimistic,
        best_verdicts=tuple(verdict_rows(frame.graph, verdicts, [top_node]).get(top_node, ())),
        best_unsettled=int(unsettled[top_node]) if top_node >= 0 else 0,
        unsettled=int((unsettled > 0).sum()),
    )


def _over_optimism(calibrated: FrameCalibration) -> list[str]:
    """A note per account whose predictions are systematically over-optimistic (else one for everyone's)."""
    flagged = [c for c in calibrated.accounts if c.over_optimistic] or (
        [calibrated.overall] if calibrated.overall.over_optimistic else []
    )
    return [
        f"{c.account or 'all accounts'}: predictions are systematically over-optimistic: {c.short} of "
        f"{c.predicted} predicted results fell short of the band, {c.beat} beat it (sign test p = {c.p_value:.2g})"
        for c in flagged
    ]


def _leaders_differ(frame: Frame, config: AnalyzeConfig) -> tuple[comparable.Difference, ...]:
    """The ``comparable_on`` fields on which the leaders (the ``limit`` best scored results) disagree."""
    if not config.comparable_on or not frame.has_metric:
        return ()
    leaders = ranked_by_metric(frame, np.flatnonzero(frame.scored), config.limit)
    metadata = frame.table["metadata"].take(pa.array(leaders, pa.int64())).to_pylist()
    return comparable.differences(
        (comparable.measured_under(m, config.comparable_on) for m in metadata), config.comparable_on
    )
