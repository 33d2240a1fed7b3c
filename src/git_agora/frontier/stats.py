"""Statistics of the whole graph: shape, tags, progress of the primary metric, verification, duplicates.

Only valid contributions count. Definitions:
- edges: parent edges between valid contributions (deduplicated); multi-parent nodes: two or more of them;
- largest component share: nodes in the largest weakly connected component / nodes;
- tag counts: contributions carrying each tag;
- scored results: contributions with a primary metric that are not verifications; new bests: those that
  set a new best in time order (the first one included; direction-aware; a gain no larger than the
  tolerance does not count, as in ProjectConfig.better);
- verifications: usable verification commits (a known verdict on a valid contribution of another
  account), replaced ones included; verified targets: distinct contributions they verify; failed
  verifications: those with verdict `failed`;
- equal scores: for each primary metric value posted (exactly) by two or more accounts, every pair of
  those accounts, each at its first posting of that value; the gap is the time between those postings;
- improvement share for k: (best of the first k scored results - first scored) / (overall best - first
  scored), direction-aware; given for each k in IMPROVEMENT_KS up to the number of scored results, and
  null when there was no improvement at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .evidence import current_verdicts
from .graph import Graph, build_graph, chronological_order, new_best_mask, scored_mask, signed

IMPROVEMENT_KS = (1, 5, 10, 25, 50, 100)


@dataclass(frozen=True)
class GraphStats:
    nodes: int
    edges: int
    multi_parent_nodes: int
    largest_component_share: float  # 0.0 for an empty graph
    tag_counts: tuple[tuple[str, int], ...]  # most frequent first, then by tag
    scored_results: int
    new_bests: int
    best_value: float | None
    verifications: int
    verified_targets: int
    failed_verifications: int
    equal_score_pairs: int
    equal_score_gaps: tuple[int, ...]  # seconds, ascending
    equal_score_median_gap: float | None
    improvement_share: tuple[tuple[int, float | None], ...]  # (k, share)
    direction: str
    tolerance: float

    def to_dict(self) -> dict:
        """Plain JSON-ready data (tag counts and improvement shares as objects keyed by tag / k)."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["tag_counts"] = dict(self.tag_counts)
        data["equal_score_gaps"] = list(self.equal_score_gaps)
        data["improvement_share"] = {str(k): share for k, share in self.improvement_share}
        return data


def graph_stats(contributions: pa.Table, *, direction: str = "min", tolerance: float = 0.0) -> GraphStats:
    """Statistics of the valid contributions (see the module docstring for each definition)."""
    graph = build_graph(contributions)
    scored = scored_in_time(graph)
    values = scored["primary_metric"].to_numpy(zero_copy_only=False)
    verdicts = current_verdicts(graph)
    pairs = equal_score_gaps(scored)
    return GraphStats(
        nodes=graph.n,
        edges=len(graph.child),
        multi_parent_nodes=int((np.bincount(graph.child, minlength=graph.n) >= 2).sum()),
        largest_component_share=largest_component_share(graph),
        tag_counts=tag_counts(graph.table),
        scored_results=len(values),
        new_bests=int(new_best_mask(values, direction, tolerance).sum()),
        best_value=best_value(values, direction),
        verifications=len(verdicts.node),
        verified_targets=len(np.unique(verdicts.target)),
        failed_verifications=int((verdicts.verdict == "failed").sum()),
        equal_score_pairs=len(pairs),
        equal_score_gaps=tuple(pairs.tolist()),
        equal_score_median_gap=float(np.median(pairs)) if len(pairs) else None,
        improvement_share=improvement_share(values, direction),
        direction=direction,
        tolerance=tolerance,
    )


def scored_in_time(graph: Graph) -> pa.Table:
    """The scored results, in time order."""
    scored = graph.table.filter(pa.array(scored_mask(graph.table)))
    return scored.take(chronological_order(scored))


def best_value(values: np.ndarray, direction: str) -> float | None:
    """The best primary metric, or None when nothing is scored."""
    if not len(values):
        return None
    return float(values[np.argmax(signed(values, direction))])


def largest_component_share(graph: Graph) -> float:
    """Share of the nodes in the largest weakly connected component (union-find over the edges)."""
    if graph.n == 0:
        return 0.0
    root = list(range(graph.n))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for a, b in zip(graph.child.tolist(), graph.parent.tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            root[ra] = rb
    roots = np.fromiter((find(x) for x in range(graph.n)), dtype=np.int64, count=graph.n)
    return float(np.bincount(roots).max() / graph.n)


def tag_counts(table: pa.Table) -> tuple[tuple[str, int], ...]:
    """How many contributions carry each tag (a tag repeated on one contribution counts once)."""
    tags = table["tags"].combine_chunks() if table.num_rows else pa.array([], pa.list_(pa.string()))
    pairs = pa.table({"row": pc.list_parent_indices(tags), "tag": pc.list_flatten(tags)})
    counted = pairs.group_by("tag").aggregate([("row", "count_distinct")])
    items = zip(counted["tag"].to_pylist(), counted["row_count_distinct"].to_pylist())
    return tuple(sorted(((t, int(c)) for t, c in items if t is not None), key=lambda tc: (-tc[1], tc[0])))


def equal_score_gaps(scored: pa.Table) -> np.ndarray:
    """Gap in seconds for each pair of accounts posting the same primary metric value, ascending.

    Each account is taken at its first (earliest) posting of the value.
    """
    firsts = pa.table(
        {
            "value": scored["primary_metric"],
            "account": pc.fill_null(scored["account"], ""),
            "timestamp": scored["timestamp"],
        }
    ).group_by(["value", "account"]).aggregate([("timestamp", "min")])
    firsts = firsts.sort_by([("value", "ascending"), ("timestamp_min", "ascending")])
    values = firsts["value"].to_numpy()
    times = firsts["timestamp_min"].to_numpy()
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    sizes = np.diff(np.r_[starts, len(values)])
    gaps = [
        np.abs(np.subtract.outer(times[s : s + k], times[s : s + k]))[np.triu_indices(k, 1)]
        for s, k in zip(starts.tolist(), sizes.tolist())
        if k > 1
    ]
    return np.sort(np.concatenate(gaps)) if gaps else np.zeros(0, np.int64)


def improvement_share(values: np.ndarray, direction: str) -> tuple[tuple[int, float | None], ...]:
    """Share of the total improvement (first scored -> best) reached by the first k scored results."""
    if not len(values):
        return ()
    gains = signed(values, direction)
    reached = np.maximum.accumulate(gains) - gains[0]
    total = reached[-1]
    return tuple(
        (k, float(reached[k - 1] / total) if total > 0 else None) for k in IMPROVEMENT_KS if k <= len(values)
    )
