"""The exact count, per node, of the distinct qualifying nodes reachable through child edges, in one batch
and in bounded memory (``evidence.follow_ons`` gives it its meaning; this module only counts).

The qualifying nodes are cut into blocks of at most ``MAX_BLOCK`` in topological order, and each block is
one pass: a sweep from its last node back towards the roots, through the ancestors of the block only,
that pushes each node's set of reached block nodes (a Python int bitset of at most ``block`` bits) to
its parents and adds the set's size to the node's count. A set is made when the sweep reaches its node,
is or-ed into the pending set of each parent, and is dropped; the sweep takes the latest pending node
first, from a heap of ranks. n(v) is the sum over the blocks of what v reaches in each.

Chains are walked as one: a node whose only child has it as its only parent is grouped with that child
(``_chains``). A sweep takes a whole group at once; its nodes before the block all reach the same set,
so their counts are one range added to a difference array, and a long line of history costs one step
per pass instead of one per node.

Memory: the graph is held in flat machine-integer arrays (no Python object per node). The sets alive at
a point of the sweep are those of nodes after it with a parent before it, and the merged sets of nodes
before it with two children after it (``set_width`` of them at most), each at most ``block`` bits, and
``block_size`` keeps that within ``SET_BUDGET_BITS``; plus a dict entry per pending node. The earlier
design, one set per node over all qualifying nodes at once, kept every set a later parent still needed,
each as wide as the distance to the graph's end: 1.1 GB at 1,000,000 nodes.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from heapq import heappop, heappush

import numpy as np

from .graph import Graph, topological_order

MAX_BLOCK = 16_384  # qualifying nodes per pass: smaller sets are faster to or, more blocks revisit more
MIN_BLOCK = 1_024  # below this, passes cost more than the memory they save
SET_BUDGET_BITS = 8 * 32 * 2**20  # the sets alive in a pass: at most 32 MiB (unless MIN_BLOCK wins)


def count_descendants(graph: Graph, qualifying: np.ndarray, block: int | None = None) -> np.ndarray:
    """Per node: how many distinct qualifying nodes are reachable from it through child edges (exact).

    ``block``: the qualifying nodes per pass (default: ``block_size`` of the graph's ``set_width``)."""
    n = graph.n
    order = topological_order(graph)
    is_target = np.asarray(qualifying, dtype=bool)[order]
    if not is_target.any():
        return np.zeros(n, np.int64)
    rank = np.empty(n, np.int32 if n < 2**31 else np.int64)  # half the memory for the arrays below
    rank[order] = np.arange(n)
    child, parent = rank[graph.child], rank[graph.parent]
    del rank
    block = block or block_size(set_width(child, parent, n))
    sweep = _Sweep(child, parent, is_target)
    del child, parent
    targets = np.flatnonzero(is_target)  # ranks, ascending
    for start in range(0, len(targets), block):
        sweep.run(targets[start : start + block])
    out = np.empty(n, np.int64)
    out[order] = sweep.counts()
    return out


def set_width(child: np.ndarray, parent: np.ndarray, n: int) -> int:
    """The most sets a sweep can hold at once (ranks of each edge's child and parent): over the points r
    between two ranks, the nodes at or after r with a parent before r, plus the nodes before r with two
    children at or after r."""
    if len(child) == 0:
        return 0
    delta = np.zeros(n + 2, np.int64)
    first_parent = np.full(n, n, np.int64)
    np.minimum.at(first_parent, child, parent)
    pushers = np.flatnonzero(first_parent < n)
    np.add.at(delta, first_parent[pushers] + 1, 1)
    np.add.at(delta, pushers + 1, -1)
    last = np.full(n, -1, np.int64)
    np.maximum.at(last, parent, child)
    second = np.full(n, -1, np.int64)
    others = child != last[parent]
    np.maximum.at(second, parent[others], child[others])
    mergers = np.flatnonzero(second >= 0)
    np.add.at(delta, mergers + 1, 1)
    np.add.at(delta, second[mergers] + 1, -1)
    return int(np.cumsum(delta).max())


def block_size(width: int) -> int:
    """Qualifying nodes per pass when a sweep holds up to ``width`` sets: as many as keep them within
    ``SET_BUDGET_BITS``, between ``MIN_BLOCK`` and ``MAX_BLOCK``."""
    return max(MIN_BLOCK, min(MAX_BLOCK, SET_BUDGET_BITS // max(width, 1)))


class _Sweep:
    """The graph in rank space, cut into chains, and the counts so far (``run`` once per block)."""

    def __init__(self, child: np.ndarray, parent: np.ndarray, is_target: np.ndarray) -> None:
        n = len(is_target)
        ptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(child, minlength=n), out=ptr[1:])
        self.ptr = _ints(ptr)  # parents of rank r: parents[ptr[r]:ptr[r + 1]]
        self.parents = _ints(parent[np.argsort(child, kind="stable")])
        members, first, position, tail = _chains(child, parent, n)
        self.members = _ints(members)  # ranks, chain by chain, each chain in rank order
        self.first = _ints(first)  # per rank: where its chain starts in ``members``
        self.position = _ints(position)  # per rank: where it is in ``members``
        self.tail = tail  # per rank: the last node of its chain
        index = np.full(n, -1, child.dtype)
        index[np.flatnonzero(is_target)] = np.arange(int(is_target.sum()))
        self.index = _ints(index)  # per rank: its number among the qualifying nodes, -1 if none
        self.added = array("q", bytes(8 * (n + 1)))  # per position in ``members``: counts, as differences

    def run(self, targets: np.ndarray) -> None:
        """Add to each node's count how many of ``targets`` (ascending ranks) it reaches. A target's bit is
        its distance from the last one, so a set spans only the targets after its nodes."""
        members, first, position, index, added = self.members, self.first, self.position, self.index, self.added
        low, high = int(targets[0]), int(targets[-1])
        last = index[high]
        tails = np.unique(self.tail[targets]).tolist()
        pending = dict.fromkeys(tails, 0)  # chain tail -> the targets its tail's children pushed to it
        heap = [-t for t in reversed(tails)]  # tails, latest first (negated: heapq pops the smallest)
        while heap:
            tail = -heappop(heap)
            reached = pending.pop(tail)
            start, end = first[tail], position[tail] + 1
            reach = reached.bit_count()
            if tail >= low:  # the chain meets the block: walk its nodes in it, latest first
                end = bisect_right(members, high, start, end)
                while end > start and (r := members[end - 1]) >= low:
                    end -= 1
                    added[end] += reach
                    added[end + 1] -= reach
                    if (i := index[r]) >= 0:
                        reached |= 1 << (last - i)
                        reach += 1
            added[start] += reach  # the chain's nodes before the block all reach what its first one does
            added[end] -= reach
            head = members[start]
            for i in range(self.ptr[head], self.ptr[head + 1]):
                p = self.parents[i]
                before = pending.get(p)
                if before is None:
                    pending[p] = reached
                    heappush(heap, -p)
                else:
                    pending[p] = before | reached

    def counts(self) -> np.ndarray:
        """The counts so far, per rank."""
        n = len(self.members)
        out = np.empty(n, np.int64)
        out[np.frombuffer(self.members, dtype=f"i{self.members.itemsize}")] = np.cumsum(
            np.frombuffer(self.added, dtype=np.int64)
        )[:n]
        return out


def _chains(child: np.ndarray, parent: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Chains: a node is in the chain of its parent when it is that parent's only child and that parent
    is its only parent. Returns the ranks chain by chain (each in rank order), and per rank: where its
    chain starts in that list, where it is in it, and the last node of its chain."""
    links = (np.bincount(parent, minlength=n)[parent] == 1) & (np.bincount(child, minlength=n)[child] == 1)
    head = np.arange(n, dtype=child.dtype)
    head[child[links]] = parent[links]
    while True:  # pointer jumping: every rank to the first node of its chain
        further = head[head]
        if np.array_equal(further, head):
            break
        head = further
    members = np.argsort(head, kind="stable")  # by chain, then by rank (ranks grow along a chain)
    members = members.astype(child.dtype)
    position = np.empty(n, child.dtype)
    position[members] = np.arange(n)
    starts = np.flatnonzero(np.diff(head[members], prepend=-1))
    ends = np.r_[starts[1:], n]
    tail = np.empty(n, child.dtype)
    tail[members] = np.repeat(members[ends - 1], ends - starts)
    return members, position[head], position, tail


def _ints(values: np.ndarray) -> array:
    """A flat array of machine integers (32 or 64 bits, as ``values``), indexed from Python without a
    Python object per element."""
    wide = values.dtype.itemsize > 4 or (len(values) and int(values.max()) >= 2**31)
    return array("q" if wide else "i", np.ascontiguousarray(values, dtype=np.int64 if wide else np.int32).tobytes())
