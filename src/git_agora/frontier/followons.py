"""Follow-on counts n(v) carried from one analysis to the next: exact, and updated in time proportional to
the ancestors of what changed instead of recounted over the whole graph.

n(v) counts the distinct follow-on-work nodes reachable from v through child edges (``evidence``'s
rules; ``descendants.count_descendants`` is the exact batch count). Between two analyses, contributions
only arrive: a commit's parents never change, so the graph of the earlier nodes is the same graph
again, and what changes is

- new nodes: a new follow-on node w adds 1 to n(v) of each distinct ancestor v of w;
- a node's qualification: a newer verdict replaces an older verification (it stops counting), or an
  old verdict becomes current again; each flipped node x adds +1 or -1 to every ancestor of x.

So ``n_new(v) = n_old(v) + sum of the changes of the nodes below v``, each node's change counted once
however many paths lead to it, since it goes to the set of its distinct ancestors.

Anything else falls back to the batch count, which gives the same numbers: an earlier node that is no
longer a valid contribution, an earlier node that now has a parent among the new nodes (its edges
changed), or more changed nodes than walking their ancestors is worth (``MAX_CHANGES``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .descendants import count_descendants
from .graph import Graph, combined

MAX_CHANGES = 256  # more changed nodes than this: one batch count is cheaper than their ancestor walks


@dataclass(frozen=True, eq=False)
class FollowOns:
    """What one count was made from and what it gave: node shas in node order, which nodes were
    follow-on work, and n(v) per node."""

    sha: pa.Array  # string
    qualifying: np.ndarray  # bool
    counts: np.ndarray  # int64

    def __post_init__(self) -> None:
        if not len(self.sha) == len(self.qualifying) == len(self.counts):
            raise ValueError("follow-on state columns differ in length")


def follow_on_counts(graph: Graph, qualifying: np.ndarray, previous: FollowOns | None = None) -> FollowOns:
    """n(v) for ``graph`` (``qualifying``: ``evidence.follow_on_work``), updated from ``previous`` when it
    describes an earlier state of the same graph, else counted in one batch."""
    qualifying = np.asarray(qualifying, dtype=bool)
    counts = updated(graph, qualifying, previous) if previous is not None else None
    if counts is None:
        counts = count_descendants(graph, qualifying)
    return FollowOns(combined(graph.table["sha"]), qualifying, counts)


def updated(graph: Graph, qualifying: np.ndarray, previous: FollowOns) -> np.ndarray | None:
    """n(v) from ``previous`` plus the changes since (module docstring), or None when the batch count
    must run instead."""
    n = graph.n
    where = _previous_nodes(graph, previous.sha)
    if where is None:
        return None  # an earlier node is gone (no longer valid): its edges to others may have changed
    is_new = np.ones(n, dtype=bool)
    is_new[where] = False
    if (is_new[graph.parent] & ~is_new[graph.child]).any():
        return None  # an earlier node gained a parent: its ancestors are not what they were
    change = np.where(is_new, qualifying, 0).astype(np.int64)
    change[where] = qualifying[where].astype(np.int64) - previous.qualifying
    changed = np.flatnonzero(change)
    if len(changed) > MAX_CHANGES:
        return None
    counts = np.zeros(n, dtype=np.int64)
    counts[where] = previous.counts
    if len(changed):
        ptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(graph.child, minlength=n), out=ptr[1:])  # edges are sorted by child
        seen = np.zeros(n, dtype=bool)
        for node in changed.tolist():
            counts[ancestors(node, ptr, graph.parent, seen)] += change[node]
    return counts


def ancestors(node: int, ptr: np.ndarray, parents: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The distinct ancestors of ``node`` (not itself), breadth first over the child -> parents CSR
    (``parents[ptr[v]:ptr[v + 1]]``); ``seen`` is all False scratch space, left all False."""
    found = []
    frontier = np.array([node], dtype=np.int64)
    while len(frontier):
        starts, lengths = ptr[frontier], ptr[frontier + 1] - ptr[frontier]
        total = int(lengths.sum())
        if total == 0:
            break
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
        frontier = np.unique(parents[np.arange(total) + offsets])
        frontier = frontier[~seen[frontier]]
        seen[frontier] = True
        found.append(frontier)
    out = np.concatenate(found) if found else np.zeros(0, np.int64)
    seen[out] = False
    return out


def _previous_nodes(graph: Graph, shas: pa.Array) -> np.ndarray | None:
    """Node number now of each earlier node (in order), None when one of them is no longer a node."""
    current = graph.table["sha"]  # compared as it is: no copy of a million shas into one array
    count = len(shas)
    if count > len(current):
        return None
    if count == 0:
        return np.zeros(0, np.int64)
    if pc.all(pc.equal(current.slice(0, count), shas)).as_py():
        return np.arange(count, dtype=np.int64)  # the usual case: new rows come after the old ones
    where = graph.lookup(shas)
    if (where < 0).any() or len(np.unique(where)) != count:
        return None
    return where
