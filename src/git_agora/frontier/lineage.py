"""Lineage: the history one contribution stands on, who made it, and where it got better.

For a contribution u:
- ancestry: u and every valid contribution reachable from it through parent edges, in time order;
- accounts involved, the parent edges among the ancestry and how many of them cross accounts;
- reproduced: ancestors with at least one current `confirmed` verdict from another account (current =
  the verifier's newest verdict on it, see `evidence`; the verification itself may lie outside the
  ancestry);
- scored ancestors: the scored results (``scored.scored_mask``) of the ancestry other than u itself;
  reproduced scored ancestors: those that are also reproduced (the paper: "40 of the winner's 144 scored
  ancestors were independently reproduced");
- milestones: the scored results of the ancestry, in time order, that set a new best primary metric
  within it (``scored.new_best_mask``: direction-aware; a gain no larger than the tolerance is not a new
  best; the first scored ancestor is the first milestone).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from .evidence import current_verdicts
from .graph import Graph, build_graph, chronological_order
from .root import Root
from .scored import new_best_mask, scored_nodes


@dataclass(frozen=True)
class Milestone:
    """An ancestor that set a new best primary metric."""

    sha: str
    account: str
    timestamp: int
    value: float


@dataclass(frozen=True)
class Lineage:
    sha: str
    ancestry: tuple[str, ...]  # time order, the contribution itself included
    accounts: tuple[str, ...]  # sorted
    edges: int  # parent edges among the ancestry
    cross_account_edges: int
    reproduced: tuple[str, ...]  # time order
    scored_ancestors: tuple[str, ...]  # time order, the contribution itself excluded
    milestones: tuple[Milestone, ...]  # time order
    direction: str
    tolerance: float

    @property
    def size(self) -> int:
        return len(self.ancestry)

    @property
    def reproduced_scored_ancestors(self) -> tuple[str, ...]:
        """The scored ancestors that were independently reproduced, in time order."""
        reproduced = set(self.reproduced)
        return tuple(sha for sha in self.scored_ancestors if sha in reproduced)

    def to_dict(self) -> dict:
        """Plain JSON-ready data, with `size` and `reproduced_scored_ancestors` added."""
        data = asdict(self)
        data["size"] = self.size
        for name in ("ancestry", "accounts", "reproduced", "scored_ancestors", "milestones"):  # milestones: dicts
            data[name] = list(data[name])
        data["reproduced_scored_ancestors"] = list(self.reproduced_scored_ancestors)
        return data


def lineage(
    contributions: pa.Table, sha: str, *, direction: str = "min", tolerance: float = 0.0, root: Root | None = None
) -> Lineage:
    """The lineage of the contribution `sha`; raises KeyError when it is not a valid contribution.
    ``root``: ``graph.build_graph``."""
    graph = build_graph(contributions, root)
    start = int(graph.lookup(pa.array([sha], pa.string()))[0])
    if start < 0:
        raise KeyError(f"{sha} is not a valid contribution")
    return lineage_of(graph, start, direction=direction, tolerance=tolerance)


def lineage_of(
    graph: Graph, start: int, *, direction: str = "min", tolerance: float = 0.0, shared: Shared | None = None
) -> Lineage:
    """The lineage of node `start` of `graph`; `shared` (from `shared_parts`) saves recomputing the
    whole-graph parts when many lineages of one graph are wanted."""
    parts = shared or shared_parts(graph)
    members = ancestors(graph, start, parts.parents)
    inside = np.zeros(graph.n, dtype=bool)
    inside[members] = True
    in_time = members[chronological_order(graph.table.take(members))]
    edge_inside = inside[graph.child]  # a parent of an ancestor is an ancestor
    scored_in_time = in_time[parts.scored[in_time]]
    return Lineage(
        sha=str(parts.shas[start]),
        ancestry=tuple(parts.shas[in_time].tolist()),
        accounts=tuple(sorted({a for a in parts.accounts[members].tolist() if a is not None})),
        edges=int(edge_inside.sum()),
        cross_account_edges=int((edge_inside & parts.cross).sum()),
        reproduced=tuple(parts.shas[in_time[parts.reproduced[in_time]]].tolist()),
        scored_ancestors=tuple(parts.shas[scored_in_time[scored_in_time != start]].tolist()),
        milestones=milestones(graph, scored_in_time, direction, tolerance),
        direction=direction,
        tolerance=tolerance,
    )


@dataclass(frozen=True, eq=False)
class Shared:
    """The whole-graph parts every lineage of one graph reads (see ``shared_parts``)."""

    shas: np.ndarray  # object array per node
    accounts: np.ndarray  # object array per node
    scored: np.ndarray  # bool per node (``scored.scored_nodes``)
    reproduced: np.ndarray  # bool per node (``reproduced_mask``)
    cross: np.ndarray  # bool per edge
    parents: tuple[list[int], list[int]]  # CSR child -> parents (``Graph.parents_lists``)


def shared_parts(graph: Graph) -> Shared:
    return Shared(
        shas=graph.table["sha"].to_numpy(zero_copy_only=False),
        accounts=graph.table["account"].to_numpy(zero_copy_only=False),
        scored=scored_nodes(graph),
        reproduced=reproduced_mask(graph),
        cross=graph.cross_edges(),
        parents=graph.parents_lists(),
    )


def ancestors(graph: Graph, start: int, parents_lists: tuple[list[int], list[int]] | None = None) -> np.ndarray:
    """Node `start` and every node reachable from it through parent edges."""
    ptr, parents = parents_lists or graph.parents_lists()
    seen = {start}
    stack = [start]
    while stack:
        v = stack.pop()
        for p in parents[ptr[v] : ptr[v + 1]]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return np.fromiter(seen, dtype=np.int64, count=len(seen))


def reproduced_mask(graph: Graph) -> np.ndarray:
    """Per node: has at least one current confirmed verdict from another account."""
    verdicts = current_verdicts(graph)
    return verdicts.current_counts("confirmed", graph.n) > 0


def milestones(graph: Graph, scored_in_time: np.ndarray, direction: str, tolerance: float) -> tuple[Milestone, ...]:
    """The nodes of `scored_in_time` (scored results in time order) that set a new best primary metric."""
    rows = graph.table.take(scored_in_time)
    values = rows["primary_metric"].to_numpy(zero_copy_only=False)
    best = new_best_mask(values, direction, tolerance)
    return tuple(
        Milestone(sha, account, timestamp, value)
        for sha, account, timestamp, value in zip(
            rows["sha"].filter(best).to_pylist(),
            rows["account"].filter(best).to_pylist(),
            rows["timestamp"].filter(best).to_pylist(),
            values[best].tolist(),
        )
    )
