"""The commits the tips reach, read from the commit-graph files git keeps (no git process).

A commit-graph (format 1, SHA-1; one file or a split chain) lists commits with their parents by
position. `CommitGraph.load` reads every layer into arrays, `reach` marks what the tips reach: by
whole frontiers with numpy (a generation of the history per step), and, in a deep history (one long
chain), the rest one commit at a time. Anything unexpected in a file makes `load` answer None: the
caller then asks git, which reads what this module does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..refs.commitgraph import HEADER, chunk_table, graph_files, table_size

_NONE = 0x70000000  # no parent
_EXTRA = 0x80000000  # the second parent field points into the extra-edges list (an octopus merge)
FRONTIER_STEPS = 32768  # whole-frontier steps (about 10 us each) before the rest is walked commit by commit
_CDAT = np.dtype([("tree", "V20"), ("first", ">u4"), ("second", ">u4"), ("time", ">u8")])


@dataclass(frozen=True)
class CommitGraph:
    oids: np.ndarray  # (n, 20) uint8: the commits, by position (the base layer first)
    first: np.ndarray  # int64 position of the first parent, -1 for none
    second: np.ndarray  # int64 position of the second parent, -1 for none
    more: dict[int, list[int]]  # the third and later parents of octopus merges, by position
    layers: list[tuple[int, np.ndarray]]  # (first position, the layer's first 8 bytes per oid, sorted)

    @staticmethod
    def load(objects: Path) -> CommitGraph | None:
        """The commit-graph of this object directory (its single file, else its split chain); None when
        there is none or git's reading of it could differ from this one's."""
        try:
            files = graph_files(objects)
            layers = [_layer(np.fromfile(path, dtype=np.uint8), index) for index, path in enumerate(files)]
        except (OSError, ValueError):
            return None
        if not layers or any(layer is None for layer in layers):
            return None
        return _joined([layer for layer in layers if layer is not None])

    def positions(self, shas: list[str]) -> tuple[np.ndarray, list[str]]:
        """The positions of the shas the graph lists, and the shas it does not list."""
        if not shas:
            return np.zeros(0, np.int64), []
        wanted = np.frombuffer(bytes.fromhex("".join(shas)), np.uint8).reshape(-1, 20)
        found = self.find(wanted)
        return found[found >= 0], [sha for sha, at in zip(shas, found.tolist()) if at < 0]

    def find(self, wanted: np.ndarray) -> np.ndarray:
        """The position of each (k, 20) oid, -1 where the graph does not list it."""
        found = np.full(len(wanted), -1, np.int64)
        keys = prefixes(wanted)
        for start, layer_keys in self.layers:
            at = np.minimum(np.searchsorted(layer_keys, keys), len(layer_keys) - 1) + start
            hit = (found < 0) & (self.oids[at] == wanted).all(axis=1)
            found[hit] = at[hit]
        missing = np.flatnonzero(found < 0)
        for i in missing.tolist():  # two oids that share their first 8 bytes: rare, looked at one by one
            found[i] = self._scan(wanted[i], int(keys[i]))
        return found

    def _scan(self, oid: np.ndarray, key: int) -> int:
        for start, layer_keys in self.layers:
            at = int(np.searchsorted(layer_keys, key))
            while at < len(layer_keys) and layer_keys[at] == key:
                if (self.oids[start + at] == oid).all():
                    return start + at
                at += 1
        return -1

    def reach(self, starts: np.ndarray) -> np.ndarray:
        """Whether each position is reached from `starts` (themselves included), as a bool array."""
        count = len(self.oids)
        seen, slot = np.zeros(count, bool), np.zeros(count, np.int32)
        octopus = np.zeros(count, bool)
        octopus[list(self.more)] = True
        frontier = np.unique(starts)
        seen[frontier] = True
        for _ in range(FRONTIER_STEPS):
            if not frontier.size:
                return seen
            parents = np.concatenate([self.first[frontier], self.second[frontier]])
            merges = frontier[octopus[frontier]]
            if merges.size:
                parents = np.concatenate([parents, np.array([p for m in merges.tolist() for p in self.more[m]])])
            parents = parents[parents >= 0]
            parents = parents[~seen[parents]]
            # each commit once (two children in one step name it twice; equal paths would multiply it)
            order = np.arange(parents.size, dtype=np.int32)
            slot[parents] = order
            frontier = parents[slot[parents] == order]
            seen[frontier] = True
        return self._reach_deep(seen, frontier)

    def _reach_deep(self, seen: np.ndarray, frontier: np.ndarray) -> np.ndarray:
        """The rest of the walk one commit at a time (a long chain takes one frontier step per commit)."""
        first, second, marked = self.first.tolist(), self.second.tolist(), bytearray(seen.tobytes())
        stack = frontier.tolist()
        while stack:
            at = stack.pop()
            for parent in (first[at], second[at], *self.more.get(at, ())):
                if parent >= 0 and not marked[parent]:
                    marked[parent] = 1
                    stack.append(parent)
        return np.frombuffer(bytes(marked), bool).copy()


def prefixes(oids: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each (k, 20) oid as one big-endian integer: sortable, searchable."""
    return np.ascontiguousarray(oids[:, :8]).view(">u8").ravel()


@dataclass(frozen=True)
class _Layer:
    oids: np.ndarray
    data: np.ndarray  # the CDAT records
    extra: np.ndarray  # the EDGE chunk as uint32, empty without one


def _layer(data: np.ndarray, index: int) -> _Layer | None:
    """One file's commits; None unless it is a format-1 SHA-1 graph with the chunks git writes, whose
    base count is its place in the chain."""
    head = data[: table_size(data[:HEADER].tobytes())].tobytes()
    chunks = chunk_table(head, len(data))
    if chunks is None or data[7] != index or not {b"OIDF", b"OIDL", b"CDAT"} <= chunks.keys():
        return None
    fanout = data[slice(*chunks[b"OIDF"])]
    if len(fanout) != 1024:
        return None
    count = int(fanout[1020:1024].view(">u4")[0])
    oids = data[slice(*chunks[b"OIDL"])]
    records = data[slice(*chunks[b"CDAT"])]
    if len(oids) != 20 * count or len(records) != 36 * count:
        return None
    start, end = chunks.get(b"EDGE", (0, 0))
    if (end - start) % 4:
        return None
    return _Layer(oids.reshape(count, 20), records.view(_CDAT), data[start:end].view(">u4").astype(np.int64))


def _joined(layers: list[_Layer]) -> CommitGraph | None:
    total = sum(len(layer.oids) for layer in layers)
    first = np.concatenate([layer.data["first"].astype(np.int64) for layer in layers])
    second = np.concatenate([layer.data["second"].astype(np.int64) for layer in layers])
    more: dict[int, list[int]] = {}
    offset = 0
    for layer in layers:
        octopus = np.flatnonzero(layer.data["second"] & _EXTRA) + offset
        extra = layer.extra.tolist() if len(octopus) else []
        for at in octopus.tolist():
            edges = _edges(extra, int(second[at]) & ~_EXTRA)
            if edges is None:
                return None
            second[at], more[at] = edges[0], edges[1:]
        offset += len(layer.oids)
    first[first == _NONE] = -1
    second[second == _NONE] = -1
    if (first >= total).any() or (second >= total).any() or any(p >= total for ps in more.values() for p in ps):
        return None
    starts = np.cumsum([0] + [len(layer.oids) for layer in layers[:-1]])
    keys = [prefixes(layer.oids) for layer in layers]
    if any((k[1:] < k[:-1]).any() for k in keys):
        return None
    return CommitGraph(
        np.concatenate([layer.oids for layer in layers]),
        first,
        second,
        more,
        [(int(s), k) for s, k in zip(starts, keys) if len(k)],
    )


def _edges(extra: list[int], start: int) -> list[int] | None:
    """The parents an octopus merge lists in the extra-edges chunk from `start` (the last is flagged)."""
    found: list[int] = []
    for at in range(start, len(extra)):
        value = extra[at]
        found.append(value & ~_EXTRA)
        if value & _EXTRA:
            return found
    return None
