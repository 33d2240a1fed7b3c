"""Statistics of the whole graph, as the paper's section 4.6 reports them.

Only valid contributions count. *Scored results*, *new bests* and *the best result* are those of
``scored`` (the one definition analyze and lineage use too); values are primary metric values and
"better" is direction-aware. ``GraphStats.to_dict()`` keys:

Shape
- ``nodes``: valid contributions; ``accounts``: distinct accounts among them.
- ``edges``: parent edges between valid contributions (deduplicated); ``multi_parent_nodes``: nodes
  with two or more of them.
- ``components``: weakly connected components of the nodes and edges; ``largest_component_share``:
  nodes in the largest one / nodes (0.0 for an empty graph).
- ``tag_counts``: {tag: contributions carrying it}, most frequent first, then by tag.

Progress of the primary metric
- ``scored_results``: scored results.
- ``new_bests``: noise-aware new bests (a gain no larger than the tolerance does not count; the first
  scored result included); ``new_bests_strict``: strict new bests (every strict improvement counts,
  even one below the tolerance; the first scored result included).
- ``first_value``: the first scored result's value, in time order; null when nothing is scored.
- ``best_value`` / ``best_sha``: the best result (the latest noise-aware new best: the same as
  ``analyze``'s summary; with ranks a contested result is not it, ``scored.may_lead``), null when
  nothing is scored. ``strict_best_value``: the best value reached
  by any scored result (the last strict new best); it differs from ``best_value`` only by gains
  within the tolerance.
- ``improvement_share``: {k: share} for k in IMPROVEMENT_KS up to the number of scored results:
  (first value - best value among the first k scored results) / (first value - strict best value),
  direction-aware; null when nothing improved on the first value.
- An *improvement* is a new best after the first scored result; its decrease is how much it beats the
  best before it. ``improvement_share_strict``: {k: share} for k in STEP_KS up to the number of strict
  improvements: summed decrease of the first k strict improvements / (first value - strict best
  value). ``improvement_share_noise_aware``: the same over noise-aware improvements, divided by
  (first value - best value). Both reach 1 at their last improvement.

Verification
- ``verifications``: usable verification commits (a known verdict on a valid contribution of another
  account), replaced ones included; ``verified_targets``: distinct contributions they verify;
  ``failed_verifications``: those with verdict `failed`.

Parallel rediscovery
- ``equal_score_pairs``: for each value posted (exactly) by scored results of two or more accounts,
  every pair of those accounts, each at its first posting of the value; ``equal_score_gaps``: the time
  between the two postings of each pair, seconds, ascending (a read-only int64 array: a million
  contributions make tens of millions of pairs); ``equal_score_median_gap``: their median.
  ``to_dict()`` gives ``equal_score_gap_percentiles`` instead of the gaps: the gap at each percentile
  0, 1, ..., 100 (nearest rank; an empty list without pairs), a fixed size at any scale.
- ``equal_score_share_1h`` / ``equal_score_share_6h``: share of those pairs at most 3,600 s / 21,600 s
  apart (the paper: 63% / 80%); null without pairs.

The best result's ancestry (``lineage``; all null when nothing is scored)
- ``best_ancestry_size``: the best result and every contribution it reaches through parent edges;
  ``best_ancestry_accounts``: distinct accounts among them; ``best_ancestry_edges``: parent edges among
  them; ``best_ancestry_cross_account_edges``: those between different accounts.
- ``best_scored_ancestors``: scored results in the ancestry other than the best itself;
  ``best_reproduced_scored_ancestors``: those with a current `confirmed` verdict from another account.

- ``direction``, ``tolerance``: the settings used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .evidence import current_verdicts
from .graph import Graph, build_graph, pointer_roots, seconds_column, signed
from .lineage import Lineage, lineage_of
from .root import Root
from .scored import best_node, in_time, leading_nodes, new_best_mask, primary_metric, scored_nodes

IMPROVEMENT_KS = (1, 5, 10, 18, 25, 50, 100)
STEP_KS = (1, 2, 4, 8, 16, 32, 64)
HOUR = 3600
ANCESTRY_KEYS = (
    "best_ancestry_size",
    "best_ancestry_accounts",
    "best_ancestry_edges",
    "best_ancestry_cross_account_edges",
    "best_scored_ancestors",
    "best_reproduced_scored_ancestors",
)

Shares = tuple[tuple[int, float | None], ...]


@dataclass(frozen=True)
class GraphStats:
    """The figures of the module docstring, by the same names."""

    nodes: int
    accounts: int
    edges: int
    multi_parent_nodes: int
    components: int
    largest_component_share: float
    tag_counts: tuple[tuple[str, int], ...]
    scored_results: int
    new_bests: int
    new_bests_strict: int
    first_value: float | None
    best_value: float | None
    best_sha: str | None
    strict_best_value: float | None
    improvement_share: Shares
    improvement_share_strict: Shares
    improvement_share_noise_aware: Shares
    verifications: int
    verified_targets: int
    failed_verifications: int
    equal_score_pairs: int
    equal_score_gaps: np.ndarray = field(compare=False, repr=False)
    equal_score_median_gap: float | None
    equal_score_share_1h: float | None
    equal_score_share_6h: float | None
    best_ancestry_size: int | None
    best_ancestry_accounts: int | None
    best_ancestry_edges: int | None
    best_ancestry_cross_account_edges: int | None
    best_scored_ancestors: int | None
    best_reproduced_scored_ancestors: int | None
    direction: str
    tolerance: float

    def to_dict(self) -> dict:
        """Plain JSON-ready data (tag counts and shares as objects keyed by tag / k)."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["tag_counts"] = dict(self.tag_counts)
        del data["equal_score_gaps"]
        data["equal_score_gap_percentiles"] = gap_percentiles(self.equal_score_gaps)
        for name in ("improvement_share", "improvement_share_strict", "improvement_share_noise_aware"):
            data[name] = {str(k): share for k, share in getattr(self, name)}
        return data


def graph_stats(
    contributions: pa.Table, *, direction: str = "min", tolerance: float = 0.0, root: Root | None = None
) -> GraphStats:
    """Statistics of the valid contributions (see the module docstring for each definition); ``root``:
    ``graph.build_graph``."""
    signed(np.zeros(0), direction)  # validates the direction
    graph = build_graph(contributions, root)
    is_scored = scored_nodes(graph)
    scored = in_time(graph.table, np.flatnonzero(is_scored))
    metric = primary_metric(graph.table)
    values = metric[scored]
    strict = new_best_mask(values, direction)
    noise_aware = new_best_mask(values, direction, tolerance)
    best = best_node(graph.table, leading_nodes(graph), direction, tolerance)  # a contested result may not lead
    return GraphStats(
        **shape(graph),
        scored_results=len(scored),
        new_bests=int(noise_aware.sum()),
        new_bests_strict=int(strict.sum()),
        first_value=float(values[0]) if len(values) else None,
        best_value=None if best < 0 else float(metric[best]),
        best_sha=None if best < 0 else graph.table["sha"][best].as_py(),
        strict_best_value=float(values[strict][-1]) if len(values) else None,
        improvement_share=improvement_share(values, direction),
        improvement_share_strict=step_shares(values[strict], direction),
        improvement_share_noise_aware=step_shares(values[noise_aware], direction),
        **verification_counts(graph),
        **equal_score_figures(graph.table.take(pa.array(scored, pa.int64()))),
        **ancestry_figures(None if best < 0 else lineage_of(graph, best, direction=direction, tolerance=tolerance)),
        direction=direction,
        tolerance=tolerance,
    )


def shape(graph: Graph) -> dict:
    """nodes, accounts, edges, multi_parent_nodes, components, largest_component_share, tag_counts."""
    sizes = component_sizes(graph)
    accounts = pc.drop_null(graph.table["account"])
    return {
        "nodes": graph.n,
        "accounts": len(pc.unique(accounts)) if len(accounts) else 0,
        "edges": len(graph.child),
        "multi_parent_nodes": int((np.bincount(graph.child, minlength=graph.n) >= 2).sum()),
        "components": len(sizes),
        "largest_component_share": float(sizes.max() / graph.n) if graph.n else 0.0,
        "tag_counts": tag_counts(graph.table),
    }


def component_sizes(graph: Graph) -> np.ndarray:
    """Sizes of the weakly connected components, in no particular order: every edge hooks the larger
    of its two roots under the smaller, then paths are halved, until no edge joins two roots (a few
    dozen vectorised rounds for a million nodes)."""
    root = np.arange(graph.n, dtype=np.int64)
    a, b = graph.child.astype(np.int64), graph.parent.astype(np.int64)
    while True:
        ra, rb = root[a], root[b]
        joins = ra != rb
        if not joins.any():
            break
        np.minimum.at(root, np.maximum(ra[joins], rb[joins]), np.minimum(ra[joins], rb[joins]))
        root = pointer_roots(root)
    sizes = np.bincount(pointer_roots(root), minlength=graph.n)
    return sizes[sizes > 0]


def tag_counts(table: pa.Table) -> tuple[tuple[str, int], ...]:
    """How many contributions carry each tag (a tag repeated on one contribution counts once)."""
    tags = table["tags"].combine_chunks() if table.num_rows else pa.array([], pa.list_(pa.string()))
    pairs = pa.table({"row": pc.list_parent_indices(tags), "tag": pc.list_flatten(tags)})
    counted = pairs.group_by("tag").aggregate([("row", "count_distinct")])
    items = zip(counted["tag"].to_pylist(), counted["row_count_distinct"].to_pylist())
    return tuple(sorted(((t, int(c)) for t, c in items if t is not None), key=lambda tc: (-tc[1], tc[0])))


def improvement_share(values: np.ndarray, direction: str) -> Shares:
    """Share of the total improvement (first value -> strict best) reached by the first k scored results."""
    if not len(values):
        return ()
    gains = signed(values, direction)
    reached = np.maximum.accumulate(gains) - gains[0]
    total = reached[-1]
    return tuple((k, float(reached[k - 1] / total) if total > 0 else None) for k in IMPROVEMENT_KS if k <= len(values))


def step_shares(records: np.ndarray, direction: str) -> Shares:
    """Share of the total descent made by the first k improvements; ``records`` are the new bests in
    time order (the first scored result first), so improvement k is ``records[k]``."""
    gains = signed(records, direction)
    descent = gains[1:] - gains[0] if len(gains) else gains  # summed decrease of the first k improvements
    return tuple((k, float(descent[k - 1] / descent[-1])) for k in STEP_KS if k <= len(descent))


def verification_counts(graph: Graph) -> dict:
    """verifications, verified_targets, failed_verifications."""
    verdicts = current_verdicts(graph)
    return {
        "verifications": len(verdicts.node),
        "verified_targets": len(np.unique(verdicts.target)),
        "failed_verifications": int((verdicts.verdict == "failed").sum()),
    }


def equal_score_figures(scored: pa.Table) -> dict:
    """equal_score_pairs, equal_score_gaps, equal_score_median_gap, equal_score_share_1h / _6h."""
    gaps = equal_score_gaps(scored)
    return {
        "equal_score_pairs": len(gaps),
        "equal_score_gaps": gaps,
        "equal_score_median_gap": float(np.median(gaps)) if len(gaps) else None,
        "equal_score_share_1h": share_within(gaps, HOUR),
        "equal_score_share_6h": share_within(gaps, 6 * HOUR),
    }


def share_within(gaps: np.ndarray, seconds: int) -> float | None:
    """Share of ``gaps`` of at most ``seconds``; None when there are none."""
    return float((gaps <= seconds).mean()) if len(gaps) else None


def equal_score_gaps(scored: pa.Table) -> np.ndarray:
    """Gap in seconds for each pair of accounts posting the same primary metric value, ascending.

    Each account is taken at its first (earliest) posting of the value.
    """
    firsts = (
        pa.table(
            {
                "value": scored["primary_metric"],
                "account": pc.fill_null(scored["account"], ""),
                "timestamp": scored[seconds_column(scored)],
            }
        )
        .group_by(["value", "account"])
        .aggregate([("timestamp", "min")])
    )
    firsts = firsts.sort_by([("value", "ascending"), ("timestamp_min", "ascending")])
    values = firsts["value"].to_numpy()
    times = firsts["timestamp_min"].to_numpy().astype(np.int64)
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    sizes = np.diff(np.r_[starts, len(values)])
    gaps = [
        np.abs(np.subtract.outer(times[s : s + k], times[s : s + k]))[_upper_triangle(k)]
        for s, k in zip(starts.tolist(), sizes.tolist())
        if k > 1
    ]
    result = np.sort(np.concatenate(gaps)) if gaps else np.zeros(0, np.int64)
    result.flags.writeable = False
    return result


@lru_cache(maxsize=256)
def _upper_triangle(k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(k, 1)


def gap_percentiles(gaps: np.ndarray) -> list[int]:
    """The gap at each percentile 0..100 of sorted ``gaps`` (nearest rank), or [] without gaps."""
    if not len(gaps):
        return []
    ranks = np.ceil(np.arange(101) / 100 * len(gaps)).astype(np.int64) - 1
    return [int(g) for g in gaps[np.clip(ranks, 0, len(gaps) - 1)]]


def ancestry_figures(best: Lineage | None) -> dict:
    """The best result's ancestry figures (module docstring); all None without a best result."""
    if best is None:
        return dict.fromkeys(ANCESTRY_KEYS)
    return {
        "best_ancestry_size": best.size,
        "best_ancestry_accounts": len(best.accounts),
        "best_ancestry_edges": best.edges,
        "best_ancestry_cross_account_edges": best.cross_account_edges,
        "best_scored_ancestors": len(best.scored_ancestors),
        "best_reproduced_scored_ancestors": len(best.reproduced_scored_ancestors),
    }
