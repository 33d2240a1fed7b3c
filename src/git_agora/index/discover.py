"""Which commits an index update must read, found without walking the contribution graph.

`git log NEW --not OLD` finds them too, but it paints from the old tips until nothing interesting is
left: when a new contribution builds on an old one (a new account's first contribution on the
setup, say), git walks most of the project (48 s at 1,000,000 contributions). Here the moved refs'
chains are followed commit by commit through the repository's `git cat-file --batch` process, each
step's commits asked together: a log commit leads
to the previous log commit (down to the ref's old tip) and to its entries; a contribution leads to
its parents until they are already indexed (`known`). The cost is what is new.

Only the shas are found here; the commits are then read with the same `git log` format and parser as
a full rebuild (`reader.read`), so both agree on every byte and on what is a log commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..refs.catfile import CatFile
from .reader import is_transport

Known = Callable[[list[tuple[int, str]]], set[str]]  # (committer time, sha) -> the shas already indexed


class TooMany(Exception):
    """More new commits than discovery is worth: the caller walks with `git log` instead."""


def new_commits(
    objects: CatFile, old_tips: Mapping[str, str], new_tips: Mapping[str, str], known: Known, limit: int = 20_000
) -> list[str]:
    """The shas of the commits reachable from the moved tips and not from the old ones: log and identity
    commits (which the reader then skips) and contributions not yet indexed, which lead on to their
    parents. Raises TooMany past `limit` commits looked at."""
    stop = set(old_tips.values())
    queue = sorted({tip for ref, tip in new_tips.items() if old_tips.get(ref) != tip} - stop)
    seen: set[str] = set(queue)
    found: list[str] = []
    while queue:
        if len(seen) > limit:
            raise TooMany(len(seen))
        headers = {sha: _header(raw) for sha, raw in zip(queue, objects.commits(queue)) if raw is not None}
        contributions = [(when, sha) for sha, (_, when, transport) in headers.items() if not transport]
        indexed = known(contributions) if contributions else set()
        following: list[str] = []
        for sha, (parents, _, _) in headers.items():
            if sha not in indexed:
                found.append(sha)
                following += parents
        queue = [p for p in dict.fromkeys(following) if p not in seen and p not in stop]
        seen.update(queue)
    return found


def _header(raw: bytes) -> tuple[list[str], int, bool]:
    """(parents, committer time or 0, whether it looks like a log or identity commit) of a raw commit.
    The look only steers the search; the reader decides what a commit is."""
    head, _, message = raw.partition(b"\n\n")
    parents, when = [], 0
    for line in head.split(b"\n"):
        if line.startswith(b"parent "):
            parents.append(line[7:47].decode("ascii", "replace"))
        elif line.startswith(b"committer "):
            fields = line.rsplit(b" ", 2)
            when = int(fields[1]) if len(fields) == 3 and fields[1].isdigit() else 0
    return parents, when, is_transport(message)
