"""Git's commit-graph files as git finds them: which files it reads, and each file's chunk table.

Two readers share this: `refs.boundary` (a +1 fetch: counts and a few lookups, without numpy) and
`index.graphfile` (a rebuild: every commit, read with numpy). Only format version 1 with SHA-1 is
read; anything else answers as if there were no graph, and the caller leaves the question to git.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

Chunks = dict[bytes, tuple[int, int]]  # chunk id -> (start, end) in the file


def graph_files(objects: Path) -> list[Path]:
    """The commit-graph files git reads in an object directory: its single file where there is one (git
    then ignores a split chain beside it), else the files of the split chain, base first."""
    info = objects / "info"
    if (info / "commit-graph").exists():
        return [info / "commit-graph"]
    chain = info / "commit-graphs" / "commit-graph-chain"
    with contextlib.suppress(OSError):
        return [info / "commit-graphs" / f"graph-{line.strip()}.graph" for line in chain.read_text().split()]
    return []


HEADER = 8  # signature, version, hash version, chunk count, base graph count
ENTRY = 12  # chunk id and offset; the table ends with an entry of id 0 giving the last chunk's end


def table_size(head: bytes) -> int:
    """How many bytes the header and chunk table take, from the first `HEADER` bytes."""
    return HEADER + ENTRY * (head[6] + 1) if len(head) >= HEADER else HEADER


def chunk_table(head: bytes, size: int) -> Chunks | None:
    """The chunks of a commit-graph file of `size` bytes, from its first `table_size` bytes: each id with
    where it starts and ends (the next entry's offset); None unless the file is format version 1 with
    SHA-1 and its table lies in order within the file."""
    if len(head) < HEADER or head[:4] != b"CGPH" or head[4] != 1 or head[5] != 1:
        return None
    count = head[6]
    if len(head) < HEADER + ENTRY * (count + 1):
        return None
    offsets = [int.from_bytes(head[HEADER + ENTRY * i + 4 : HEADER + ENTRY * i + 12], "big") for i in range(count + 1)]
    chunks: Chunks = {}
    for i in range(count):
        start, end = offsets[i], offsets[i + 1]
        if not start <= end <= size:
            return None
        chunks[bytes(head[HEADER + ENTRY * i : HEADER + ENTRY * i + 4])] = (start, end)
    return chunks
