"""Shared plumbing for the frontier: valid contributions as integer nodes, their parent edges, time order.

Only rows with `valid == true` are nodes. Everything downstream (evidence, lineage, statistics) works on
node numbers 0..n-1, which follow the order of the valid rows in the contributions table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DIRECTIONS = ("min", "max")


@dataclass(frozen=True, eq=False)
class Graph:
    """Valid contributions as nodes and their parent edges.

    Edges are deduplicated, sorted by (child, parent), and keep only parents that are themselves valid
    contributions; a commit listed as its own parent is dropped.
    """

    table: pa.Table  # the valid rows of a CONTRIBUTIONS table
    account: np.ndarray  # int64 code per node; equal codes mean the same account
    child: np.ndarray  # int64 node per edge
    parent: np.ndarray  # int64 node per edge

    @property
    def n(self) -> int:
        return self.table.num_rows

    @property
    def shas(self) -> list[str]:
        return self.table["sha"].to_pylist()

    def cross_edges(self) -> np.ndarray:
        """Boolean per edge: child and parent come from different accounts."""
        return self.account[self.child] != self.account[self.parent]

    def lookup(self, shas: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Node number of each sha, -1 where it is not a valid contribution (or null)."""
        found = pc.index_in(shas, value_set=combined(self.table["sha"]))
        return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)

    def children_lists(self) -> tuple[list[int], list[int]]:
        """CSR adjacency parent -> children as Python lists: children of u are kids[ptr[u]:ptr[u+1]]."""
        return _csr(self.parent, self.child, self.n)

    def parents_lists(self) -> tuple[list[int], list[int]]:
        """CSR adjacency child -> parents as Python lists: parents of v are ps[ptr[v]:ptr[v+1]]."""
        return _csr(self.child, self.parent, self.n)


def build_graph(contributions: pa.Table) -> Graph:
    """Keep the valid rows, number them, and resolve each parent sha to a node."""
    table = valid_rows(contributions)
    accounts = pc.fill_null(combined(table["account"]), "")
    account = pc.dictionary_encode(accounts).indices.to_numpy().astype(np.int64)
    graph = Graph(table, account, np.zeros(0, np.int64), np.zeros(0, np.int64))
    parents = combined(table["parents"])
    child = pc.list_parent_indices(parents).to_numpy().astype(np.int64)
    parent = graph.lookup(pc.list_flatten(parents))
    keep = (parent >= 0) & (parent != child)
    n = max(table.num_rows, 1)
    keys = np.unique(child[keep] * n + parent[keep])
    return Graph(table, account, keys // n, keys % n)


def valid_rows(contributions: pa.Table) -> pa.Table:
    """The rows with valid == true (a null counts as false)."""
    return contributions.filter(pc.fill_null(contributions["valid"], False))


def chronological_order(table: pa.Table) -> np.ndarray:
    """Row indices in time order: (timestamp, log_seq, sha); a null log_seq sorts first."""
    keys = pa.table(
        {
            "t": pc.fill_null(table["timestamp"], np.iinfo(np.int64).min),
            "l": pc.fill_null(table["log_seq"], -1),
            "s": table["sha"],
        }
    )
    order = pc.sort_indices(keys, sort_keys=[("t", "ascending"), ("l", "ascending"), ("s", "ascending")])
    return order.to_numpy().astype(np.int64)


def topological_order(graph: Graph) -> np.ndarray:
    """Nodes with every parent before its children; raises ValueError on a cycle.

    When the clocks respect the edges (the usual case) this is the time order itself; otherwise Kahn's
    algorithm, seeded in time order.
    """
    time_order = chronological_order(graph.table)
    rank = np.empty(graph.n, np.int64)
    rank[time_order] = np.arange(graph.n)
    if np.all(rank[graph.parent] < rank[graph.child]):
        return time_order  # clocks agree with the graph: nothing to reorder
    ptr, kids = graph.children_lists()
    pending = np.bincount(graph.child, minlength=graph.n).tolist()
    ready = [int(u) for u in time_order[::-1] if pending[u] == 0]  # a stack, earliest on top
    order: list[int] = []
    while ready:
        u = ready.pop()
        order.append(u)
        for c in kids[ptr[u] : ptr[u + 1]]:
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)
    if len(order) != graph.n:
        raise ValueError("the parent edges contain a cycle")
    return np.asarray(order, dtype=np.int64)


def tag_mask(table: pa.Table, tag: str) -> np.ndarray:
    """Per row: carries ``tag``."""
    tags = combined(table["tags"])
    rows = pc.list_parent_indices(tags).to_numpy()
    hit = pc.fill_null(pc.equal(pc.list_flatten(tags), tag), False).to_numpy(zero_copy_only=False)
    return np.bincount(rows[hit], minlength=table.num_rows).astype(bool)


def signed(values: np.ndarray, direction: str) -> np.ndarray:
    """Values in "larger is better" form: negated for a metric to minimise."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'min' or 'max', not {direction!r}")
    values = np.asarray(values, dtype=np.float64)
    return -values if direction == "min" else values


def _csr(source: np.ndarray, target: np.ndarray, n: int) -> tuple[list[int], list[int]]:
    order = np.argsort(source, kind="stable")
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=ptr[1:])
    return ptr.tolist(), target[order].tolist()


def combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One contiguous array from a table column."""
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
