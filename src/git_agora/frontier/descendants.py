"""The exact count, per node, of the distinct qualifying nodes reachable through child edges, in one batch
and in bounded memory (``evidence.follow_ons`` gives it its meaning; this module only counts).

The qualifying nodes are cut into blocks of at most ``MAX_BLOCK`` in topological order, and each block is
one pass: a sweep from its last node back towards the roots, through the ancestors of the block only,
that pushes each node's set of reached block nodes (a Python int bitset of at most ``block`` bits) to
its parents and adds the set's size to the node's count. A node's set is made when the sweep reaches
it, is or-ed into the pending set of each parent, and is dropped at once; the sweep visits nodes
latest first, from a heap of the ranks that are pending. So n(v) is the sum over the blocks of what v
reaches in each, and each node is visited once per block it reaches.

Memory: at any moment of a pass the pending sets belong to nodes that lie before the sweep and have a
child after it, at most ``width`` of them (``widest_cut``), each at most ``block`` bits; the block is
chosen so that this stays within ``SET_BUDGET_BITS`` (``block_size``), plus a dict entry per pending
node. The graph itself is held as flat integer arrays (no Python object per node). A count that kept a
set per node over all qualifying nodes at once (the earlier design) held every set a later parent
still needed, each as wide as the distance to the graph's end: 1.1 GB at 1,000,000 nodes.
"""

from __future__ import annotations

from array import array
from heapq import heappop, heappush

import numpy as np

from .graph import Graph, topological_order

MAX_BLOCK = 16_384  # qualifying nodes per pass: smaller sets are faster to or, more blocks revisit more
MIN_BLOCK = 1_024  # below this, passes cost more than the memory they save
SET_BUDGET_BITS = 8 * 32 * 2**20  # the pending sets of one pass: at most 32 MiB (unless MIN_BLOCK wins)


def count_descendants(graph: Graph, qualifying: np.ndarray, block: int | None = None) -> np.ndarray:
    """Per node: how many distinct qualifying nodes are reachable from it through child edges (exact).

    ``block``: the qualifying nodes per pass (default ``block_size`` of the graph's widest cut)."""
    n = graph.n
    order = topological_order(graph)
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    child, parent = rank[graph.child], rank[graph.parent]
    del rank
    targets = np.flatnonzero(np.asarray(qualifying, dtype=bool)[order])  # ranks of qualifying nodes, ascending
    block = block or block_size(widest_cut(child, parent, n))
    ptr, parents = _parents_by_rank(child, parent, n)
    del child, parent
    counts = array("q", bytes(8 * n))  # per rank
    for start in range(0, len(targets), block):
        _sweep(targets[start : start + block].tolist(), ptr, parents, counts)
    out = np.empty(n, np.int64)
    out[order] = np.frombuffer(counts, dtype=np.int64)
    return out


def widest_cut(child: np.ndarray, parent: np.ndarray, n: int) -> int:
    """The most nodes that lie before some rank r and have a child at or after it (ranks of each edge's
    child and parent): how many sets a sweep can hold pending at once."""
    if len(child) == 0:
        return 0
    last_child = np.full(n, -1, np.int64)
    np.maximum.at(last_child, parent, child)
    opens = np.flatnonzero(last_child >= 0)
    delta = np.bincount(opens + 1, minlength=n + 1) - np.bincount(last_child[opens] + 1, minlength=n + 1)
    return int(np.cumsum(delta).max())


def block_size(width: int) -> int:
    """Qualifying nodes per pass for a graph whose widest cut is ``width``: as many as keep ``width``
    pending sets within ``SET_BUDGET_BITS``, between ``MIN_BLOCK`` and ``MAX_BLOCK``."""
    return max(MIN_BLOCK, min(MAX_BLOCK, SET_BUDGET_BITS // max(width, 1)))


def _parents_by_rank(child: np.ndarray, parent: np.ndarray, n: int) -> tuple[array, array]:
    """CSR rank -> parent ranks as flat machine-integer arrays: parents[ptr[r]:ptr[r + 1]]."""
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(child, minlength=n), out=ptr[1:])
    by_child = np.argsort(child, kind="stable")
    return array("q", ptr.tobytes()), array("q", parent[by_child].tobytes())


def _sweep(targets: list[int], ptr: array, parents: array, counts: array) -> None:
    """One pass: add to ``counts[r]`` how many of ``targets`` (ascending ranks) rank r reaches. A target's
    bit is its distance from the block's last target, so a set spans only the targets after its node."""
    last = len(targets) - 1
    bit = {r: last - i for i, r in enumerate(targets)}
    pending = dict.fromkeys(targets, 0)  # rank -> the targets its children pushed to it
    heap = [-r for r in reversed(targets)]  # ranks, latest first (negated: heapq pops the smallest)
    while heap:
        r = -heappop(heap)
        reached = pending.pop(r)
        if reached:
            counts[r] += reached.bit_count()
        own = bit.get(r)
        if own is not None:
            reached |= 1 << own
        for i in range(ptr[r], ptr[r + 1]):
            p = parents[i]
            before = pending.get(p)
            if before is None:
                pending[p] = reached
                heappush(heap, -p)
            else:
                pending[p] = before | reached
