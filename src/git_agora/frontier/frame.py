"""The frontier's data model: valid contributions as node-aligned numpy columns, joined with their evidence.

``build_frame`` is the one place that turns a CONTRIBUTIONS table (and its evidence) into a ``Frame``;
views, clusters and UCB all read the same ``Frame``.

Vocabulary (used by views, clusters and UCB alike):

- *kinds* come from reserved tags (``contribution.KINDS``: what each means is read from there, through
  ``graph.kind_mask``); a *verification* is a row with a verdict, a target or the ``verification`` tag
  (``scored.is_verification``).
- *scored*: a valid contribution reporting the primary metric, of a kind that may be built on (not a
  verification, wip or an endorsement), and whose verification status is not ``failed``; the one
  definition is ``scored.scored_mask`` (stats and lineage use it too).
- *quality* Q: the percentile of a scored value among all scored values, direction-aware, in [0, 1]:
  the best is 1, the worst 0, equal values share their mid-rank, a lone result is 1.
- *follow-ons* n(v): the follow-on work on v, the paper's descendant count: distinct valid
  contributions downstream of v that are not wip, endorsements or failed (or replaced) verifications.
  One definition, ``evidence.follow_ons``; views (leaves, promising, open hypotheses) and UCB read it as
  ``Frame.follow_ons``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import HYPOTHESIS
from .evidence import FollowOnCounter, evidence_columns
from .graph import Graph, build_graph, combined, kind_mask, signed, tag_mask, top_lexsort
from .root import Root
from .scored import buildable_mask, in_epoch, is_verification, may_lead, new_best_nodes, primary_metric


@dataclass(frozen=True, eq=False)
class Frame:
    """Valid contributions as node-aligned numpy columns (node i = i-th valid row), plus evidence.

    ``contributions`` is the whole table (for ``rejected``); everything else is per valid node.
    """

    contributions: pa.Table
    graph: Graph
    direction: str
    tolerance: float
    timestamp: np.ndarray  # the effective time (``graph.effective_times``): what recency reads
    priority: np.ndarray  # the priority order (``witness.priority_order``): what new bests and ties read
    log_seq: np.ndarray
    metric: np.ndarray  # float64, nan when not reported
    hypothesis: np.ndarray
    verification: np.ndarray
    buildable_kind: np.ndarray  # of no kind that may not be built on (``Kind.buildable``)
    own_work: np.ndarray  # its description is work of its own (``Kind.work``): clustered, a leaf
    uncounted: np.ndarray  # bookkeeping (``Kind.counted``: a witness record): not counted, not shown as activity
    witness_time: np.ndarray  # when a counted witness record first reached the node, -1 when none did
    first_parent: np.ndarray  # node of the first parent, -1 when none is a valid contribution
    follow_ons: np.ndarray  # n(v), see the module docstring
    score: np.ndarray
    children: np.ndarray  # direct children (any kind)
    status: np.ndarray  # object array of status strings
    confirmations: np.ndarray
    partials: np.ndarray
    failures: np.ndarray
    weightless: np.ndarray  # a verification whose verdict weighs nothing: not counted in N either
    buildable: np.ndarray  # may be suggested as a parent (``scored.buildable_mask``)
    scored: np.ndarray  # a scored result (``scored.scored_mask``)
    earlier_epoch: np.ndarray  # would be scored, but was judged under an earlier evaluator
    q: np.ndarray  # own quality, nan when not scored
    q_inherited: np.ndarray  # q, or that of the nearest scored first-parent ancestor, else 0

    @property
    def n(self) -> int:
        return self.graph.n

    @property
    def table(self) -> pa.Table:
        return self.graph.table

    @property
    def has_metric(self) -> bool:
        return bool(self.scored.any())

    @cached_property
    def new_best_records(self) -> np.ndarray:
        """The results that set a new best (noise-aware) when published, in time order, among those that
        may lead (``scored.may_lead``): what the best, its ties and the new-best marks read, once a frame."""
        leading = may_lead(self.scored, self.status, self.graph.root.ranks)
        return new_best_nodes(self.table, leading, self.direction, self.tolerance, self.metric)

    @property
    def best_node(self) -> int:
        """The best result (the latest of ``new_best_records``), -1 when none may lead."""
        records = self.new_best_records
        return int(records[-1]) if len(records) else -1

    def loss(self) -> np.ndarray:
        """Metric in "smaller is better" form."""
        return -signed(self.metric, self.direction)

    def newest_first(self, nodes: np.ndarray, limit: int | None = None) -> np.ndarray:
        """``nodes`` by timestamp, then log position, newest first (the first ``limit`` of them)."""
        return nodes[top_lexsort((self.log_seq[nodes], self.timestamp[nodes]), limit, last=True)]

    def rows(
        self, nodes: Sequence[int] | np.ndarray, **extra: Sequence[Any] | np.ndarray
    ) -> tuple[dict[str, Any], ...]:
        """Row dicts for ``nodes`` (base fields + ``extra`` columns aligned with ``nodes``)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if len(nodes) == 0:
            return ()
        part = self.graph.rows(nodes, ["sha", "title", "account", "timestamp", "tags"])
        base = {
            "sha": part["sha"].to_pylist(),
            "title": part["title"].to_pylist(),
            "account": part["account"].to_pylist(),
            "timestamp": part["timestamp"].to_pylist(),
            "tags": part["tags"].to_pylist(),
            "metric": [None if np.isnan(v) else float(v) for v in self.metric[nodes]],
        }
        columns = {**base, **{k: _jsonable(v) for k, v in extra.items()}}
        return tuple({k: columns[k][i] for k in columns} for i in range(len(nodes)))


def build_frame(
    contributions: pa.Table,
    evidence_table: pa.Table | None = None,
    *,
    direction: str = "min",
    tolerance: float = 0.0,
    weights: Mapping[str, float] | None = None,
    counter: FollowOnCounter | None = None,
    root: Root | None = None,
) -> Frame:
    """Join contributions with their evidence (computed as ``evidence()`` does when not given, on the
    same graph: it is built once). ``counter``: see ``evidence.evidence``; ``root``: ``graph.build_graph``."""
    signed(np.zeros(0), direction)  # validates the direction
    graph = build_graph(contributions, root)
    table = graph.table
    if evidence_table is None:
        ev = evidence_columns(graph, weights, counter)  # node-aligned already
    else:
        ev = _align(evidence_table, table["sha"])
    status = np.asarray(ev["status"], dtype=object)
    buildable_kind = ~kind_mask(table, lambda kind: not kind.buildable)
    buildable = buildable_mask(table, status, buildable_kind)
    metric = primary_metric(table)
    measured = buildable & ~np.isnan(metric)
    current = in_epoch(table, graph.root.epoch)
    scored = measured & current
    q = quality(metric, scored, direction)
    first_parent = _first_parents(graph)
    return Frame(
        contributions=contributions,
        graph=graph,
        direction=direction,
        tolerance=float(tolerance or 0.0),
        timestamp=int_column(table["effective_time"], 0),
        priority=int_column(table["priority"], 0),
        log_seq=int_column(table["log_seq"], -1),
        metric=metric,
        hypothesis=tag_mask(table, HYPOTHESIS),
        verification=is_verification(table),
        buildable_kind=buildable_kind,
        own_work=~kind_mask(table, lambda kind: not kind.work),
        uncounted=kind_mask(table, lambda kind: not kind.counted),
        witness_time=int_column(table["witness_time"], -1),
        first_parent=first_parent,
        follow_ons=np.asarray(ev["descendants"], dtype=np.int64),
        score=np.asarray(ev["score"], dtype=np.float64),
        children=np.asarray(ev["children"], dtype=np.int64),
        status=status,
        confirmations=np.asarray(ev["confirmations"], dtype=np.int64),
        partials=np.asarray(ev["partials"], dtype=np.int64),
        failures=np.asarray(ev["failures"], dtype=np.int64),
        weightless=np.asarray(ev["weightless"], dtype=bool),
        buildable=buildable,
        scored=scored,
        earlier_epoch=measured & ~current,
        q=q,
        q_inherited=inherit_quality(q, first_parent),
    )


def quality(metric: np.ndarray, scored: np.ndarray, direction: str) -> np.ndarray:
    """Quality percentile per node (nan where not scored); see the module docstring."""
    q = np.full(len(metric), np.nan)
    good = signed(metric[scored], direction)
    m = len(good)
    if m == 0:
        return q
    if m == 1:
        q[scored] = 1.0
        return q
    worse, equal = rank_counts(good)
    q[scored] = (worse + 0.5 * (equal - 1)) / (m - 1)
    return q


def rank_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per value: how many values are smaller, and how many equal it (itself included). One stable
    argsort and a pass over its runs of equal values, not a search per value (5x faster at 660,000);
    with a nan, the searches (a nan equals nothing, and sorts last)."""
    if np.isnan(values).any():
        ordered = np.sort(values)
        worse = np.searchsorted(ordered, values, "left")
        return worse, np.searchsorted(ordered, values, "right") - worse
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    lengths = np.diff(np.r_[starts, len(values)])
    worse, equal = np.empty(len(values), np.int64), np.empty(len(values), np.int64)
    worse[order], equal[order] = np.repeat(starts, lengths), np.repeat(lengths, lengths)
    return worse, equal


def inherit_quality(q: np.ndarray, first_parent: np.ndarray) -> np.ndarray:
    """Q for every node: its own, else that of the nearest scored ancestor along first parents, else 0.

    The first parent is the work a contribution started from, so a hypothesis or an insight inherits
    the standing of the result it builds on. Pointer jumping: O(log depth) numpy passes.
    """
    n = len(q)
    sentinel = n  # a virtual scored root with Q = 0
    values = np.append(np.nan_to_num(q, nan=0.0), 0.0)
    done = np.append(~np.isnan(q), True)
    hop = np.append(np.where(first_parent >= 0, first_parent, sentinel), sentinel)
    hop[done] = np.flatnonzero(done)
    while not done[hop].all():
        hop = np.where(done[hop], hop, hop[hop])
    return values[hop][:n]


def _first_parents(graph: Graph) -> np.ndarray:
    if graph.first_parent is not None:
        return graph.first_parent
    parents = combined(graph.table["parents"])
    rows = pc.list_parent_indices(parents).to_numpy().astype(np.int64)
    first = np.full(graph.n, -1, dtype=np.int64)
    if len(rows) == 0:
        return first
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    nodes = graph.lookup(pc.list_flatten(parents))
    first[rows[starts]] = nodes[starts]
    first[first == np.arange(graph.n)] = -1
    return first


def _align(evidence_table: pa.Table, shas: pa.ChunkedArray) -> dict[str, list]:
    where = pc.fill_null(pc.index_in(shas, value_set=combined(evidence_table["sha"])), -1).to_numpy()
    where = np.asarray(where, dtype=np.int64)
    if (where < 0).any():
        raise ValueError("the evidence table lacks rows for some valid contributions")
    taken = evidence_table.take(pa.array(where))
    return {name: taken[name].to_numpy(zero_copy_only=False) for name in taken.column_names}


def int_column(column: pa.ChunkedArray, default: int) -> np.ndarray:
    return np.asarray(pc.fill_null(column, default).to_numpy(zero_copy_only=False), dtype=np.int64)


def _jsonable(values: Sequence[Any] | np.ndarray) -> list[Any]:
    out = []
    for v in np.asarray(values, dtype=object).tolist() if isinstance(values, np.ndarray) else values:
        if isinstance(v, float) and np.isnan(v):
            v = None
        elif isinstance(v, np.generic):
            v = v.item()
        out.append(v)
    return out
