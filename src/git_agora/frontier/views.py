"""Views of the frontier: ranked lists an agent or a person reads to decide what to work on.

All views are computed from one ``Frame`` (the valid contributions as numpy columns, joined with their
evidence). Only valid contributions count, except in ``rejected``. Every view is a ``View`` of
typed rows (``Row``: the JSON's names as attributes); each row carries ``sha, title, account,
timestamp, tags, metric`` plus the fields named in the view's docstring. ``REGISTRY`` (name -> title,
function) is the one list of views; ``VIEW_NAMES`` is its keys, in display order.

Vocabulary:

- *kinds*, *scored*, *quality* and *follow-ons* n(v) (the paper's descendant count, from
  ``evidence.follow_ons``): see ``frame``. A row's ``descendants`` field is n(v).
- *noise-aware ranking*: values within the reproduction tolerance of a rank group's best value
  share its rank (competition ranking: 1, 1, 3); *new bests* and *the best result* are those of
  ``scored`` (a result is a new best only when it beats the best so far by more than the tolerance).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import calibration
from .evidence import verdicts_of
from .frame import Frame, int_column
from .graph import combined, top_lexsort
from .scored import best_node
from .verdict_rows import unsettled_failures


@dataclass(frozen=True)
class ViewParams:
    """Thresholds of the views. ``promising``: Q >= promising_q and follow-ons <= few_follow_ons;
    ``calibration``: an account is over-optimistic at p <= calibration_alpha; ``unverified``: which
    results it lists (analyze sets it from ``[ucb] verify``)."""

    promising_q: float = 0.75
    few_follow_ons: int = 1
    calibration_alpha: float = calibration.ALPHA  # over-optimism's sign test (``calibration``)
    verify: str = "all"  # ``unverified``: every unverified result, or "leaders" (``[ucb] verify``)


@dataclass(frozen=True, eq=True)
class Row(Mapping[str, Any]):
    """One row of a view, typed: the fields its view fills (``fields``, in order, what ``to_dict`` and
    ``analyze --json`` give) hold their values, every other field is None. Read as attributes
    (``row.sha``) or, as the JSON names them, by key (``row["sha"]``, ``dict(row)``)."""

    fields: tuple[str, ...]  # the names this row's view fills, in order
    # every view of a contribution (not tags, contributors, calibration)
    sha: str | None = None
    title: str | None = None
    account: str | None = None
    timestamp: int | None = None
    tags: list[str] | None = None
    metric: float | None = None  # the primary metric (a verdict's: the value it measured)
    checked: bool | None = None  # a result: carries its run record (`frontier.checked`)
    # leaders, built_on, leaves, promising, unverified, contested, earlier_epoch, recent
    rank: int | None = None  # leaders: noise-aware (results within the tolerance share one)
    new_best: bool | None = None
    quality: float | None = None  # Q, a share
    status: str | None = None  # unverified, confirmed, partial, contested, failed, ...
    confirmations: int | None = None
    partials: int | None = None
    failures: int | None = None
    score: float | None = None  # built_on: the evidence score
    children: int | None = None
    descendants: int | None = None  # n(v), the follow-ons
    unsettled_failures: int | None = None  # failed reruns that do not count yet
    inherited_quality: float | None = None  # open_hypotheses
    # verdicts and recent
    verdict: str | None = None
    target: str | None = None
    counts: bool | None = None
    why: str | None = None  # why a verdict weighs nothing (None: it counts)
    # tags
    tag: str | None = None
    count: int | None = None
    # contributors
    contributions: int | None = None
    results: int | None = None
    best_metric: float | None = None
    best_sha: str | None = None
    verifications_given: int | None = None
    verifications_received: int | None = None
    last_timestamp: int | None = None
    # calibration (`calibration.Calibration`)
    predicted: int | None = None
    inside: int | None = None
    short: int | None = None
    beat: int | None = None
    inside_share: float | None = None
    mean_error: float | None = None
    p_value: float | None = None
    over_optimistic: bool | None = None
    # rejected
    reasons: list[str] | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Row:
        return cls(tuple(values), **values)

    def with_values(self, **values: Any) -> Row:
        """A copy with `values` set (a field it did not fill is added after its own)."""
        added = tuple(name for name in values if name not in self.fields)
        return replace(self, fields=self.fields + added, **values)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.fields}

    def __getitem__(self, name: str) -> Any:
        if name not in self.fields:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)


@dataclass(frozen=True)
class View:
    """One ranked list: ``rows`` (at most ``limit``), ``total`` rows before the limit, optional note."""

    name: str
    title: str
    rows: tuple[Row, ...]
    total: int
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        rows = [row.to_dict() for row in self.rows]
        return {"name": self.name, "title": self.title, "total": self.total, "note": self.note, "rows": rows}


@dataclass(frozen=True)
class Listing:
    """What a view function returns: ``rows`` (at most ``limit``), ``total`` before the limit, a note."""

    rows: tuple[dict[str, Any], ...]
    total: int
    note: str | None = None


ViewFunction = Callable[[Frame, int, ViewParams], Listing]


@dataclass(frozen=True)
class ViewSpec:
    """One entry of the registry: the view's title and the function that lists its rows."""

    title: str
    compute: ViewFunction


# --------------------------------------------------------------------------- metric leaders


WITNESSED_PRIORITY = "witnessed"  # priority from the CI's witness time
UNWITNESSED_PRIORITY = "claimed time, unwitnessed"  # priority from the author's clock (effective time)


@dataclass(frozen=True)
class Best:
    """The best result (``scored.best_node``): the latest new best in time order (gains within the
    tolerance don't count).

    ``ties``: other scored results within the tolerance of it (they share its rank). ``effective_time``:
    when its author's clock says it was published, never before what it builds on
    (``graph.effective_times``); ``witness_time``: when the project's CI first saw it (``witness``), None
    when no witness record did; ``priority``: which of the two time orders rest on; ``tied_at_time``:
    the scored results within the tolerance of it with the same priority time (first witnessed by the
    same record, or claimed in the same second), which came after it only by log position, then sha.
    """

    sha: str
    title: str
    account: str
    metric: float
    timestamp: int
    status: str
    ties: int
    effective_time: int = 0
    priority: str = UNWITNESSED_PRIORITY
    tied_at_time: tuple[str, ...] = ()
    witness_time: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def within_tolerance_of(frame: Frame, node: int) -> np.ndarray:
    """Boolean per node: a scored result within the tolerance of ``node``'s value (``node`` included)."""
    loss = frame.loss()
    with np.errstate(over="ignore"):  # far apart finite values differ by inf: not within any tolerance
        return frame.scored & (np.abs(loss - loss[node]) <= frame.tolerance)


def held_back(frame: Frame) -> str | None:
    """The sha of the contested result that would be the best if contested results led (``scored.may_lead``),
    None when there is none (no ranks, or the best among all scored results may lead)."""
    if not frame.graph.root.ranks:
        return None
    node = best_node(frame.table, frame.scored, frame.direction, frame.tolerance, frame.metric)
    if node < 0 or frame.status[node] != "contested":
        return None
    return str(frame.rows([node])[0]["sha"])


def best_group(frame: Frame) -> np.ndarray:
    """Boolean per node: the best result and its ties (``best``), the results a reported best rests on."""
    node = frame.best_node
    return within_tolerance_of(frame, node) if node >= 0 else np.zeros(frame.n, dtype=bool)


def new_bests(frame: Frame) -> np.ndarray:
    """Boolean per node: a scored result that set a new best (noise-aware) when it was published."""
    mask = np.zeros(frame.n, dtype=bool)
    mask[frame.new_best_records] = True
    return mask


def best(frame: Frame) -> Best | None:
    """The best result (``scored.best_node``: the latest noise-aware new best among the results that may
    lead, ``leading``), or None when none is scored."""
    node = frame.best_node
    if node < 0:
        return None
    close = within_tolerance_of(frame, node)
    ties = int(close.sum()) - 1
    witnessed = int(frame.witness_time[node])
    when = frame.witness_time if witnessed >= 0 else np.where(frame.witness_time < 0, frame.timestamp, -1)
    same_time = np.flatnonzero(close & (when == when[node]))
    tied = tuple(r["sha"] for r in frame.rows(same_time[same_time != node]))
    row = frame.rows([node])[0]
    return Best(
        row["sha"],
        row["title"],
        row["account"],
        row["metric"],
        row["timestamp"],
        str(frame.status[node]),
        ties,
        int(frame.timestamp[node]),
        WITNESSED_PRIORITY if witnessed >= 0 else UNWITNESSED_PRIORITY,
        tied_at_time=tied,
        witness_time=witnessed if witnessed >= 0 else None,
    )


def ranked_by_metric(frame: Frame, nodes: np.ndarray, limit: int | None = None) -> np.ndarray:
    """``nodes`` (scored) best first: by value, then earliest (the first ``limit`` of them)."""
    loss = frame.loss()
    return nodes[top_lexsort((frame.log_seq[nodes], frame.priority[nodes], loss[nodes]), limit)]


def best_of_each(frame: Frame, nodes: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Per group 0..groups-1 (``group``: each frame node's): the first of its ``nodes`` in
    `ranked_by_metric`'s order, -1 for none. Only the nodes at their group's best value are ranked (all
    of a group's when that value is not finite): the same answer without sorting every scored node."""
    loss = frame.loss()[nodes]
    owner = group[nodes]
    lowest = np.full(groups, np.inf)
    np.fmin.at(lowest, owner, loss)
    tied = nodes[(loss == lowest[owner]) | ~np.isfinite(lowest[owner])]
    best = np.full(groups, -1)
    ranked = ranked_by_metric(frame, tied)[::-1]  # worst first: the best of a group is written last
    best[group[ranked]] = ranked
    return best


def noise_aware_ranks(losses: np.ndarray, tolerance: float, count: int) -> np.ndarray:
    """Ranks of the first ``count`` of ``losses`` (sorted ascending): a group is every value within
    ``tolerance`` of the group's first (best) value, and shares its competition rank."""
    ranks = np.zeros(min(count, len(losses)), dtype=np.int64)
    start = 0
    while start < len(ranks):
        end = int(np.searchsorted(losses, losses[start] + tolerance, "right"))
        ranks[start:end] = start + 1
        start = end
    return ranks


def leaders(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Metric leaders, noise-aware. Extra fields: rank, new_best, quality, status, confirmations."""
    if not frame.has_metric:
        return Listing((), 0, "no valid contribution reports the primary metric yet")
    nodes = np.flatnonzero(frame.scored)
    top = ranked_by_metric(frame, nodes, limit)
    ranks = noise_aware_ranks(frame.loss()[top], frame.tolerance, limit)
    records = new_bests(frame)
    rows = frame.rows(
        top,
        rank=ranks,
        new_best=records[top],
        quality=frame.q[top],
        status=frame.status[top],
        confirmations=frame.confirmations[top],
    )
    note = f"results within the tolerance ({frame.tolerance:g}) of each other share a rank" if frame.tolerance else None
    return Listing(rows, len(nodes), note)


# --------------------------------------------------------------------------- graph views


def built_on(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Most built-on: contributions with children, by evidence score, then follow-ons.
    Extra fields: score, children, descendants (follow-ons n(v)), status."""
    nodes = np.flatnonzero(frame.children > 0)
    top = nodes[top_lexsort((-frame.follow_ons[nodes], -frame.score[nodes]), limit)]
    rows = frame.rows(
        top,
        score=frame.score[top],
        children=frame.children[top],
        descendants=frame.follow_ons[top],
        status=frame.status[top],
    )
    return Listing(rows, len(nodes))


def leaves(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Leaves: contributions (not endorsements or verifications) with no follow-on yet, newest first.
    Extra fields: quality, status."""
    nodes = np.flatnonzero((frame.follow_ons == 0) & frame.own_work)
    top = frame.newest_first(nodes, limit)
    return Listing(frame.rows(top, quality=frame.q[top], status=frame.status[top]), len(nodes))


def promising(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Promising but underexplored: Q >= promising_q and at most few_follow_ons follow-ons.
    Extra fields: quality, descendants (follow-ons n(v)), status."""
    if not frame.has_metric:
        return Listing((), 0, "no metric reported: quality percentiles are unavailable")
    mask = frame.scored & (frame.q >= params.promising_q) & (frame.follow_ons <= params.few_follow_ons)
    nodes = np.flatnonzero(mask)
    nodes = nodes[np.lexsort((-frame.timestamp[nodes], frame.follow_ons[nodes], -frame.q[nodes]))]
    top = nodes[:limit]
    rows = frame.rows(top, quality=frame.q[top], descendants=frame.follow_ons[top], status=frame.status[top])
    note = f"quality >= {params.promising_q:.0%} and at most {params.few_follow_ons} follow-on(s)"
    return Listing(rows, len(nodes), note)


def unverified(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Scored results nobody has verified yet (no counting verdict), best first (verifying leaders
    matters most); with ``[ucb] verify = "leaders"`` only the best and its ties (``best_group``) and the
    results with failed reruns that do not count yet (``verdict_rows.unsettled_failures``: each once,
    however many such verdicts). Extra fields: quality, unsettled_failures."""
    unsettled = unsettled_failures(verdicts_of(frame.graph), frame.n)
    mask = frame.scored & (frame.status == "unverified")
    note = None
    if params.verify == "leaders":
        mask &= best_group(frame) | (unsettled > 0)
        note = (
            f"verify = leaders: only the best, the results within the tolerance ({frame.tolerance:g}) of it, "
            "and those with failed reruns that do not count yet"
        )
    nodes = np.flatnonzero(mask)
    top = ranked_by_metric(frame, nodes, limit)
    return Listing(frame.rows(top, quality=frame.q[top], unsettled_failures=unsettled[top]), len(nodes), note)


def contested(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Contributions whose counting verdicts disagree, newest first: they stay scored, marked; a rerun
    settles them. Extra fields: confirmations, partials, failures, quality."""
    nodes = np.flatnonzero(frame.status == "contested")
    top = frame.newest_first(nodes, limit)
    rows = frame.rows(
        top,
        confirmations=frame.confirmations[top],
        partials=frame.partials[top],
        failures=frame.failures[top],
        quality=frame.q[top],
    )
    return Listing(rows, len(nodes))


def verdicts(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Every verdict, newest first, counting or not (``verdict_rows``): the metric is the value it
    measured. Extra fields: verdict, target, counts, why (why it weighs nothing, null when it counts)."""
    found = verdicts_of(frame.graph)
    at = top_lexsort((frame.log_seq[found.node], frame.timestamp[found.node]), limit, last=True)
    targets = frame.graph.rows(found.target[at], ["sha"])["sha"].to_pylist()
    rows = frame.rows(
        found.node[at], verdict=found.verdict[at], target=targets, counts=found.counts[at], why=found.weightless(at)
    )
    return Listing(rows, len(found.node))


def earlier_epoch(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Results scored under an earlier evaluator (a policy amendment changed it since), newest first:
    listed apart, never ranked against the current ones (docs/protocol.md, "Evaluator epochs", says how
    to re-measure one under the current evaluator). Extra fields: status."""
    nodes = np.flatnonzero(frame.earlier_epoch)
    top = frame.newest_first(nodes, limit)
    return Listing(frame.rows(top, status=frame.status[top]), len(nodes))


def open_hypotheses(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Hypotheses with no follow-on yet, newest first. Extra fields: inherited_quality."""
    nodes = np.flatnonzero(frame.hypothesis & (frame.follow_ons == 0) & ~frame.verification)
    top = frame.newest_first(nodes, limit)
    return Listing(frame.rows(top, inherited_quality=frame.q_inherited[top]), len(nodes))


def recent(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Recent activity: the newest valid contributions (witness records are bookkeeping: left out). Extra
    fields: status, verdict, target."""
    nodes = np.flatnonzero(~frame.uncounted)
    top = frame.newest_first(nodes, limit)
    part = frame.graph.rows(top, ["verdict", "target"])
    rows = frame.rows(
        top, status=frame.status[top], verdict=part["verdict"].to_pylist(), target=part["target"].to_pylist()
    )
    return Listing(rows, len(nodes))


def tags(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Tag counts over valid contributions, most used first. Rows: {tag, count}."""
    flat = pc.list_flatten(combined(frame.table["tags"]))
    counts = pc.value_counts(flat).to_pylist() if len(flat) else []
    ordered = sorted(counts, key=lambda c: (-c["counts"], c["values"]))
    rows = tuple({"tag": c["values"], "count": int(c["counts"])} for c in ordered[:limit])
    return Listing(rows, len(ordered))


def contributors(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Per account, most contributions first. Rows: {account, contributions, results, best_metric,
    best_sha, verifications_given, verifications_received, last_timestamp}. Verifications count
    valid verification commits (every verdict, also replaced ones) on valid contributions."""
    code, names = frame.graph.account, frame.graph.account_names
    k = len(names)
    contributions_count = np.bincount(code, minlength=k)
    results = np.bincount(code[frame.scored], minlength=k)
    given = np.bincount(code[frame.verification], minlength=k)
    target = frame.graph.target if frame.graph.target is not None else frame.graph.lookup(frame.table["target"])
    got = frame.verification & (target >= 0)
    received = np.bincount(code[target[got]], minlength=k)
    last = np.full(k, np.iinfo(np.int64).min)
    np.maximum.at(last, code, frame.timestamp)
    best_node = best_of_each(frame, np.flatnonzero(frame.scored), code, k)
    present = np.flatnonzero(contributions_count).tolist()
    order = sorted(present, key=lambda a: (-contributions_count[a], names[a]))[:limit]
    rows = []
    for a in order:
        b = int(best_node[a])
        rows.append(
            {
                "account": names[a],
                "contributions": int(contributions_count[a]),
                "results": int(results[a]),
                "best_metric": None if b < 0 else float(frame.metric[b]),
                "best_sha": None if b < 0 else frame.table["sha"][b].as_py(),
                "verifications_given": int(given[a]),
                "verifications_received": int(received[a]),
                "last_timestamp": int(last[a]),
            }
        )
    return Listing(tuple(rows), len(present))


def calibration_view(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Prediction calibration per account with a scored result, most predictions first (rules in
    ``calibration``). Rows: {account, results, predicted, inside, inside_share, mean_error (measured -
    band midpoint), short, beat, p_value, over_optimistic}; the note sums up every account together."""
    calibrated = calibration.frame_calibration(frame, params.calibration_alpha)
    rows = tuple({"account": c.account, **c.to_dict()} for c in calibrated.accounts[:limit])  # account first
    return Listing(rows, len(calibrated.accounts), calibration_note(calibrated, frame.direction))


def calibration_note(calibrated: calibration.FrameCalibration, direction: str) -> str | None:
    """One sentence on every account's predictions together, and who is over-optimistic."""
    c = calibrated.overall
    if not c.predicted:
        return "no scored result carries a prediction (push --predict LOW..HIGH)" if c.results else None
    worse = "positive" if direction == "min" else "negative"
    error = "beyond the float range" if c.mean_error is None else f"{c.mean_error:+.4g}"
    text = (
        f"all accounts: {c.predicted} of {c.results} scored results predicted, {c.inside_share:.0%} inside the band, "
        f"{c.short} short of it, {c.beat} beyond it; mean error {error} (measured - band midpoint; "
        f"{worse} is worse than predicted)"
    )
    flagged = calibrated.over_optimistic
    if flagged or c.over_optimistic:
        text += f"; over-optimistic: {', '.join(flagged) if flagged else 'accounts together'}"
    return text


def rejected(frame: Frame, limit: int, params: ViewParams) -> Listing:
    """Invalid contributions (valid == false) with the reasons, newest first.
    Rows: {sha, title, account, timestamp, reasons}."""
    table = frame.contributions
    bad = np.flatnonzero(~np.asarray(pc.fill_null(table["valid"], False).to_numpy(zero_copy_only=False), dtype=bool))
    if len(bad) == 0:
        return Listing((), 0)
    ts = int_column(table["timestamp"], 0)[bad]
    seq = int_column(table["log_seq"], -1)[bad]
    top = bad[np.lexsort((seq, ts))[::-1]][:limit]
    part = table.select(["sha", "title", "account", "timestamp", "reasons"]).take(pa.array(top))
    return Listing(tuple(part.to_pylist()), len(bad))


REGISTRY: dict[str, ViewSpec] = {
    "leaders": ViewSpec("Metric leaders", leaders),
    "built_on": ViewSpec("Most built-on (evidence score)", built_on),
    "leaves": ViewSpec("Leaves (no follow-on yet)", leaves),
    "promising": ViewSpec("Promising but underexplored", promising),
    "unverified": ViewSpec("Unverified results", unverified),
    "contested": ViewSpec("Contested verifications", contested),
    "verdicts": ViewSpec("Verdicts, counting or not", verdicts),
    "earlier_epoch": ViewSpec("Scored under an earlier evaluator", earlier_epoch),
    "open_hypotheses": ViewSpec("Open hypotheses", open_hypotheses),
    "recent": ViewSpec("Recent activity", recent),
    "tags": ViewSpec("Tags", tags),
    "contributors": ViewSpec("Contributors", contributors),
    "calibration": ViewSpec("Prediction calibration", calibration_view),
    "rejected": ViewSpec("Rejected", rejected),
}
VIEW_NAMES: tuple[str, ...] = tuple(REGISTRY)


def compute_views(
    frame: Frame, limit: int = 10, names: Sequence[str] | None = None, params: ViewParams = ViewParams()
) -> dict[str, View]:
    """The named views (default: all, in VIEW_NAMES order), each cut to ``limit`` rows."""
    names = VIEW_NAMES if names is None else tuple(names)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown view(s) {', '.join(unknown)}; choose from {', '.join(VIEW_NAMES)}")
    return {name: _view(name, frame, limit, params) for name in names}


def _view(name: str, frame: Frame, limit: int, params: ViewParams) -> View:
    spec = REGISTRY[name]
    listing = spec.compute(frame, limit, params)
    return View(name, spec.title, tuple(map(Row.of, listing.rows)), listing.total, listing.note)
