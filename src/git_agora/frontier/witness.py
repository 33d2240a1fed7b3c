"""Witness times and priority: when the project's CI first saw each contribution (docs/protocol.md,
"Witness records and priority").

A *witness record* is a contribution tagged ``witness`` by an account the current policy names in
``[ci] accounts`` (anyone else's is ignored). It lists each account's log tip (a log commit) as the CI
saw it and is dated by the CI. A contribution is *witnessed* at the earliest time of a record whose tips
reach it in Git: the reader resolves that (``ops.witness``) and hands it over as ``Root.witnessed``;
here a witnessed contribution also witnesses everything it builds on.

*Priority* is the order new-best credit and ties read: witnessed contributions first, by witness time,
then the unwitnessed ones (no record saw them: they came later); within the same witness time, or among
the unwitnessed, by effective time. Two contributions first witnessed by the same record tie on witness
time. Without witness records it is the effective time order itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .root import Root

UNWITNESSED = -1
_NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Witnessing:
    times: np.ndarray  # int64 per node: its witness time, UNWITNESSED where no counted record reached it
    latest: int | None  # the time of the latest counted witness record, None when there is none


def witness_times(
    n: int, child: np.ndarray, parent: np.ndarray, lookup: Callable[[pa.Array], np.ndarray], root: Root
) -> Witnessing:
    """Per node, its witness time (module docstring). ``child``/``parent``: the edges; ``lookup``: shas
    to nodes (-1 where not a node); ``root.witnessed``: what the records reached, and when."""
    seen = root.witnessed
    if seen is None:
        return Witnessing(np.full(n, UNWITNESSED, dtype=np.int64), None)
    times = np.full(n, _NEVER, dtype=np.int64)
    nodes = lookup(seen.shas)
    found = nodes >= 0
    np.minimum.at(times, nodes[found], np.asarray(seen.times, dtype=np.int64)[found])
    return Witnessing(_earliest_over_descendants(times, child, parent, n), seen.latest)


def _earliest_over_descendants(times: np.ndarray, child: np.ndarray, parent: np.ndarray, n: int) -> np.ndarray:
    """Each node's time lowered to the earliest of what builds on it (a witness that saw a child saw its
    parents), one vectorised round per link of the longest chain that moved; UNWITNESSED where _NEVER."""
    times = times.copy()
    order = np.argsort(child, kind="stable")
    children, parents = child[order], parent[order]
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(children, minlength=n), out=ptr[1:])
    edges = np.arange(len(children))
    while len(edges):
        earlier = times[children[edges]] < times[parents[edges]]
        edges = edges[earlier]
        np.minimum.at(times, parents[edges], times[children[edges]])
        moved = np.unique(parents[edges])
        counts = ptr[moved + 1] - ptr[moved]
        starts = np.repeat(ptr[moved] - np.r_[0, np.cumsum(counts)[:-1]], counts)
        edges = starts + np.arange(counts.sum())
    times[times == _NEVER] = UNWITNESSED
    return times


def priority_order(effective: np.ndarray, witnessing: Witnessing) -> np.ndarray:
    """Per node, its place in priority order (module docstring) as an int64 that sorts the same way:
    the effective time itself where no record counts; else a dense rank of (witness time, unwitnessed
    last; effective time), equal for equal pairs. Parents still come first: a parent is witnessed no
    later than its child, and its effective time is earlier."""
    if witnessing.latest is None:
        return effective
    witnessed = np.where(witnessing.times != UNWITNESSED, witnessing.times, _NEVER)
    order = np.lexsort((effective, witnessed))
    step = np.r_[False, (np.diff(witnessed[order]) != 0) | (np.diff(effective[order]) != 0)]
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(step)
    return rank
