"""Shared plumbing for the frontier: valid contributions as integer nodes, their parent edges, time order.

Only rows with `valid == true` are nodes. Everything downstream (evidence, lineage, statistics) works on
node numbers 0..n-1, which follow the order of the valid rows in the contributions table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import KINDS, VERIFICATION, Kind
from .root import Root
from .witness import UNWITNESSED, priority_order, witness_times

TableOrColumn = TypeVar("TableOrColumn", pa.Table, pa.ChunkedArray, pa.Array)

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
    first_parent: np.ndarray | None = None  # int64 node of each node's first parent, -1 when not a node
    target: np.ndarray | None = None  # int64 node each node's `target` names, -1 when none or not a node
    root: Root = Root()  # the trust root and the current evaluator epoch (``root.Root``)

    @property
    def n(self) -> int:
        return self.table.num_rows

    @property
    def shas(self) -> list[str]:
        return self.table["sha"].to_pylist()

    @cached_property
    def account_names(self) -> list[str]:
        """The account each code of ``account`` stands for (a null account is ""), read at one node of
        each code: the views group by these codes instead of encoding the account column again. A code
        no node has (none is made so) would name another node's account: count before naming."""
        at = np.zeros(int(self.account.max()) + 1 if self.n else 0, np.int64)
        at[self.account] = np.arange(self.n)
        return pc.fill_null(take_rows(self.table["account"], at), "").to_pylist()

    def cross_edges(self) -> np.ndarray:
        """Boolean per edge: child and parent come from different accounts."""
        return self.account[self.child] != self.account[self.parent]

    def lookup(self, shas: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Node number of each sha, -1 where it is not a valid contribution (or null)."""
        return _lookup(combined(self.table["sha"]), shas)

    def rows(self, nodes: np.ndarray, columns: list[str]) -> pa.Table:
        """``columns`` of the rows of ``nodes`` (`take_rows`)."""
        return take_rows(self.table.select(columns), nodes)

    def children_lists(self) -> tuple[list[int], list[int]]:
        """CSR adjacency parent -> children as Python lists: children of u are kids[ptr[u]:ptr[u+1]]."""
        return _csr(self.parent, self.child, self.n)

    def parents_lists(self) -> tuple[list[int], list[int]]:
        """CSR adjacency child -> parents as Python lists: parents of v are ps[ptr[v]:ptr[v+1]]."""
        return _csr(self.child, self.parent, self.n)


def build_graph(contributions: pa.Table, root: Root | None = None) -> Graph:
    """Keep the valid rows, number them, and resolve each parent sha and target to a node (one hash
    lookup for both: a million shas cost about half a second to hash). ``root``: whose verdicts count
    from the start and which policies are the current epoch (None: only the setup's account, one epoch)."""
    table = valid_rows(contributions)
    n = table.num_rows
    accounts = pc.fill_null(combined(table["account"]), "")
    account = pc.dictionary_encode(accounts).indices.to_numpy().astype(np.int64)
    parents = combined(table["parents"])
    flat = pc.list_flatten(parents)
    targets = combined(table["target"]) if "target" in table.column_names else pa.nulls(n, pa.string())
    resolved = _lookup(combined(table["sha"]), pa.concat_arrays([flat.cast(pa.string()), targets.cast(pa.string())]))
    parent, target = resolved[: len(flat)], resolved[len(flat) :]
    child = pc.list_parent_indices(parents).to_numpy().astype(np.int64)
    first_parent = np.full(n, -1, dtype=np.int64)
    if len(child):
        starts = np.flatnonzero(np.r_[True, child[1:] != child[:-1]])
        first_parent[child[starts]] = parent[starts]
        first_parent[first_parent == np.arange(n)] = -1
    keep = (parent >= 0) & (parent != child)
    keys = child[keep] * max(n, 1) + parent[keep]
    if len(keys) and not (keys[1:] > keys[:-1]).all():  # rows come in order: only merges need sorting
        keys = np.sort(keys)
        keys = keys[np.r_[True, keys[1:] != keys[:-1]]]
    graph = Graph(table, account, keys // max(n, 1), keys % max(n, 1), first_parent, target, root or Root())
    effective = effective_times(graph)
    witnessing = witness_times(n, graph.child, graph.parent, graph.lookup, graph.root)
    priority = priority_order(effective, witnessing)
    unwitnessed = witnessing.times == UNWITNESSED
    table = (
        table.append_column("effective_time", pa.array(effective, pa.int64()))
        .append_column("witness_time", pa.array(witnessing.times, pa.int64(), mask=unwitnessed))
        .append_column("priority", pa.array(priority, pa.int64()))  # what time orders read (`time_column`)
    )
    return replace(graph, table=table)


def valid_rows(contributions: pa.Table) -> pa.Table:
    """The rows with valid == true (a null counts as false); the table itself when all are (no copy)."""
    valid = pc.fill_null(contributions["valid"], False)
    if pc.all(valid).as_py() is not False:
        return contributions
    return contributions.filter(valid)


def effective_times(graph: Graph) -> np.ndarray:
    """Per node: its effective time, its committer time or one second after its latest parent's effective
    time, whichever is later: a contribution never comes before (or with) what it builds on, whatever
    date its author wrote, so every time order puts parents first. Where every parent is dated before
    its children (the usual case) it is the committer time itself; otherwise the later times are pushed
    down the child edges from where the dates disagree, one vectorised round per link of the longest
    backdated chain."""
    times = np.asarray(pc.fill_null(graph.table["timestamp"], 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if not len(graph.child) or (times[graph.parent] < times[graph.child]).all():
        return times
    times = times.copy()
    order = np.argsort(graph.parent, kind="stable")
    parents, children = graph.parent[order], graph.child[order]
    ptr = np.zeros(graph.n + 1, np.int64)
    np.cumsum(np.bincount(parents, minlength=graph.n), out=ptr[1:])
    edges = np.arange(len(parents))
    while len(edges):
        late = times[parents[edges]] >= times[children[edges]]
        edges = edges[late]
        np.maximum.at(times, children[edges], times[parents[edges]] + 1)
        moved = np.unique(children[edges])
        counts = ptr[moved + 1] - ptr[moved]
        starts = np.repeat(ptr[moved] - np.r_[0, np.cumsum(counts)[:-1]], counts)
        edges = starts + np.arange(counts.sum())
    return times


def chronological_order(table: pa.Table) -> np.ndarray:
    """Row indices in time order: (priority where the table has it, else timestamp; log_seq; sha);
    a null log_seq sorts first. Ties on time are broken by log position, then sha."""
    return time_order(*time_keys(table), lambda rows: table["sha"].take(pa.array(rows, pa.int64())).to_pylist())


def time_keys(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The numbers `time_order` sorts by: each row's time (`time_column`; a null first) and log position
    (a null first)."""
    t = np.asarray(pc.fill_null(table[time_column(table)], np.iinfo(np.int64).min).to_numpy(zero_copy_only=False))
    seq = np.asarray(pc.fill_null(table["log_seq"], -1).to_numpy(zero_copy_only=False))
    return t.astype(np.int64, copy=False), seq.astype(np.int64, copy=False)


def time_order(t: np.ndarray, seq: np.ndarray, shas_at: Callable[[np.ndarray], list[str]]) -> np.ndarray:
    """Positions in order of (``t``, ``seq``, sha); ``shas_at(positions)`` gives the shas of those
    positions, asked only where both numbers tie (rare: two accounts in one second)."""
    order = _by_time_then_seq(t, seq)
    ties = np.flatnonzero((t[order][1:] == t[order][:-1]) & (seq[order][1:] == seq[order][:-1]))
    if len(ties):
        rows = np.unique(np.r_[ties, ties + 1])
        shas = np.asarray(shas_at(order[rows]), dtype=object)
        ts, ls = t[order[rows]], seq[order[rows]]
        group = np.cumsum(np.r_[True, (np.diff(rows) > 1) | (ts[1:] != ts[:-1]) | (ls[1:] != ls[:-1])])
        by = sorted(range(len(rows)), key=lambda i: (group[i], shas[i]))
        order[rows] = order[rows][by]
    return order.astype(np.int64)


def _by_time_then_seq(t: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Positions by (t, seq), ties in position order: one stable sort of one key where both fit in one
    int64 (times and log positions nearly always do, and mostly arrive sorted already: then it takes
    milliseconds, a lexsort of a million rows 100 ms), else a lexsort."""
    if len(t) == 0:
        return np.zeros(0, np.int64)
    t_low, seq_low = int(t.min()), int(seq.min())
    seq_span = int(seq.max()) - seq_low + 1
    if (int(t.max()) - t_low + 1) * seq_span >= 1 << 63:
        return np.lexsort((seq, t))
    key = (t - np.int64(t_low)) * np.int64(seq_span) + (seq - np.int64(seq_low))
    return np.argsort(key, kind="stable")


def time_column(table: pa.Table) -> str:
    """The column time orders read: ``priority`` (a graph's table has it, ``build_graph``: witness time,
    then effective time; ``witness.priority_order``) where present, else the committer time."""
    return "priority" if "priority" in table.column_names else "timestamp"


def seconds_column(table: pa.Table) -> str:
    """The column of times in seconds: ``effective_time`` where present, else the committer time."""
    return "effective_time" if "effective_time" in table.column_names else "timestamp"


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


def top_lexsort(keys: tuple[np.ndarray, ...], k: int | None, last: bool = False) -> np.ndarray:
    """``np.lexsort(keys)[:k]`` (``last``: ``np.lexsort(keys)[::-1][:k]``), the same indices in the same
    order, without sorting every row when ``k`` is small: the rows whose primary (last) key is past the
    k-th value are left out first (``np.partition``), then the rest is sorted as lexsort sorts (stable).
    ``k`` None: every row."""
    n = len(keys[-1]) if keys else 0
    primary = np.asarray(keys[-1]) if keys else np.zeros(0)
    small = k is not None and 0 <= k and 4 * k < n
    if not small or (primary.dtype.kind == "f" and np.isnan(primary).any()):
        order = np.lexsort(keys)
        return (order[::-1] if last else order)[:k]
    assert k is not None
    if k == 0:
        return np.zeros(0, np.int64)
    if last:
        bound = np.partition(primary, n - k)[n - k]
        rows = np.flatnonzero(primary >= bound)
    else:
        bound = np.partition(primary, k - 1)[k - 1]
        rows = np.flatnonzero(primary <= bound)
    order = rows[np.lexsort(tuple(np.asarray(key)[rows] for key in keys))]
    return (order[::-1] if last else order)[:k]


def tag_mask(table: pa.Table, *tags: str) -> np.ndarray:
    """Per row: carries any of ``tags``."""
    found = combined(table["tags"])
    rows = pc.list_parent_indices(found).to_numpy()
    hit = pc.is_in(pc.list_flatten(found), value_set=pa.array(tags, pa.string()))
    return np.bincount(rows[hit.to_numpy(zero_copy_only=False)], minlength=table.num_rows).astype(bool)


def kind_mask(table: pa.Table, test: Callable[[Kind], bool]) -> np.ndarray:
    """Per row: carries a reserved tag whose kind passes ``test`` (``contribution.KINDS``); a target
    or verdict makes a verification (``Contribution.is_verification``)."""
    mask = tag_mask(table, *(kind.name for kind in KINDS.values() if test(kind)))
    if test(KINDS[VERIFICATION]):
        mask |= np.asarray(pc.is_valid(table["verdict"]).to_numpy(zero_copy_only=False), dtype=bool)
        mask |= np.asarray(pc.is_valid(table["target"]).to_numpy(zero_copy_only=False), dtype=bool)
    return mask


def signed(values: np.ndarray, direction: str) -> np.ndarray:
    """Values in "larger is better" form: negated for a metric to minimise."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'min' or 'max', not {direction!r}")
    values = np.asarray(values, dtype=np.float64)
    return -values if direction == "min" else values


def _lookup(values: pa.Array, shas: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if 0 < len(shas) * 64 < len(values):  # a few shas: one pass over the column against them, no hash of it
        wanted = combined(shas).cast(pa.string())
        hit = np.flatnonzero(pc.is_in(values, value_set=wanted).to_numpy(zero_copy_only=False))
        at = pc.index_in(wanted, value_set=values.take(pa.array(hit, pa.int64())))
        where = np.asarray(pc.fill_null(at, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
        return np.where(where >= 0, hit[np.maximum(where, 0)] if len(hit) else -1, -1)
    found = pc.index_in(shas, value_set=values)
    return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _csr(source: np.ndarray, target: np.ndarray, n: int) -> tuple[list[int], list[int]]:
    order = np.argsort(source, kind="stable")
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=ptr[1:])
    return ptr.tolist(), target[order].tolist()


def take_rows(data: TableOrColumn, nodes: np.ndarray) -> TableOrColumn:
    """The rows ``nodes`` of a table or column, in that order, as ``data.take(nodes)`` gives them, taken
    chunk by chunk: Arrow's take over a column of many chunks (an index read from its segments has
    hundreds) concatenates the whole column first, a copy of a million rows to take a few thousand."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if isinstance(data, pa.Table):
        columns = {name: take_rows(data[name], nodes) for name in data.column_names}
        return pa.table(columns, schema=data.schema) if columns else data.take(pa.array(nodes, pa.int64()))
    if not isinstance(data, pa.ChunkedArray) or data.num_chunks <= 1 or len(nodes) == 0:
        return data.take(pa.array(nodes, pa.int64()))
    if nodes.min() < 0 or nodes.max() >= len(data):
        raise IndexError(f"row {int(nodes.max() if nodes.max() >= len(data) else nodes.min())} of {len(data)}")
    lengths = np.fromiter((len(chunk) for chunk in data.chunks), np.int64, data.num_chunks)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    order = np.argsort(nodes, kind="stable")
    ascending = nodes[order]
    bounds = np.searchsorted(ascending, starts)
    pieces = [
        data.chunk(c).take(pa.array(ascending[bounds[c] : bounds[c + 1]] - starts[c]))
        for c in range(data.num_chunks)
        if bounds[c] < bounds[c + 1]
    ]
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return pa.chunked_array([pa.concat_arrays(pieces).take(pa.array(back))], data.type)


def combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One contiguous array from a table column."""
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def pointer_roots(parent: np.ndarray) -> np.ndarray:
    """A forest given as parent pointers (each pointing at a smaller node or itself), every node pointed
    at its tree's root by pointer jumping (a few dozen vectorised rounds for a million nodes)."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return parent
        parent = grand
