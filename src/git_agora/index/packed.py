"""A rebuild's commits read straight from Git's object store, as `reader`'s records, without `git log`.

At a million contributions `git log` spends 17-18 CPU-seconds printing two million commits (its walk
in date order, then each commit looked up in the pack and formatted), and when a new commit builds on
an old one its date order prints nothing for 3.5 s, exploring the whole history first, while the
workers wait. Here the commit-graph says which commits the tips reach (`graphfile`), the pack indexes
say where each is stored, and they are inflated in pack order (`packfiles`): about 6 us a commit, record
made, by the processes that parse them (`PackSlice`), from the first commit on.

Only what this module reads exactly as git does is read here (`record`, held to `git log` by the
tests). A log commit exactly as `refs.store` writes it (half of a project's commits) is read as its
link (`log_link`: what `listing.log_links` reads from its record) and never becomes a record. A commit
whose header is not the plain form git and this package write (tree, parents, author, committer, then
at most `encoding UTF-8` and a signature), one stored as a delta against an object named by its sha,
or one found in neither the packs nor the loose objects is printed by `git log --no-walk` after the
others. A store that git reads differently (replace refs, grafts, a shallow clone, another hash
function, messages re-encoded by the configuration) or that has no commit-graph is read by `git log`
whole: `blocks` answers None.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import reader
from .graphfile import CommitGraph
from .listing import ENTRY_KEY, LOG_MESSAGE
from .packfiles import ObjectStore, Unpacker, mapped

_HEADER = re.compile(  # an ident's name (kept with the space before its `<`) neither starts nor ends with a space
    rb"tree ([0-9a-f]{40})\n((?:parent [0-9a-f]{40}\n)*+)"
    rb"author ([^<>\s][^<>\n]*+)(?<=[^<>\s] )<([^<>\n]*+)> [0-9]++ [+-][0-9]{4}\n"
    rb"committer ([^<>\s][^<>\n]*+)(?<=[^<>\s] )<([^<>\n]*+)> ([0-9]++) [+-][0-9]{4}\n"
    rb"(?:encoding (?i:utf-?8)\n)?+"
    rb"(?:gpgsig(?:-sha256)? [^\n]*+\n(?: [^\n]*+\n)*+)?+"
    rb"\n"
)
_GIT_ENVIRONMENT = (
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_REPLACE_REF_BASE",
)


def record(sha: bytes, raw: bytes) -> bytes | None:
    """The `git log` record (`reader._FORMAT`) of a raw commit object, None unless it has the plain form
    whose every field git prints as written: then git prints it instead."""
    head = plain_header(raw)
    return None if head is None else _record(sha, raw, head)


def plain_header(raw: bytes) -> re.Match[bytes] | None:
    """The header of a raw commit of the plain form (see `record`), else None."""
    head = _HEADER.match(raw)
    return None if head is None or b"\0" in raw else head


def _record(sha: bytes, raw: bytes, head: re.Match[bytes]) -> bytes:
    tree, parents, author, author_mail, committer, committer_mail, time = head.groups()
    return b"%s %s %s %s\n%s<%s>\x1f%s<%s>\n%s" % (
        sha,
        tree,
        time,
        parents.replace(b"parent ", b"").replace(b"\n", b" ").rstrip(b" "),
        author,
        author_mail,
        committer,
        committer_mail,
        raw[head.end() :],
    )


def log_link(raw: bytes, head: re.Match[bytes]) -> tuple[bytes | None, bytes | None] | None:
    """(first parent, entry) of a raw commit of the plain form (`head`: its `plain_header`) whose message
    is a log commit's exactly as written (`listing.LOG_MESSAGE`): what `listing.log_links` reads from
    its record, the entry None where the key occurs more than once in that record. None for any other
    commit, and for one whose author or committer names the key (its record goes to `log_links`)."""
    found = LOG_MESSAGE.fullmatch(raw, head.end())
    if found is None or ENTRY_KEY in raw[head.start(3) : head.end(6)].lower():
        return None
    parents = head.group(2)
    once = raw[head.end() :].lower().count(ENTRY_KEY) == 1
    return (parents[7:47] if parents else None), (found.group(1) if once else None)


def parents(raw: bytes) -> list[str] | None:
    """The parents of a raw commit of the plain form (`record`), else None."""
    head = _HEADER.match(raw)
    return None if head is None else head.group(2).replace(b"parent ", b"").decode().split()


def _read_by_git_only(git_dir: Path) -> bool:
    """Whether git reads this store's commits otherwise than `record` would (replace refs, grafts, a
    shallow clone, another hash, re-encoded messages)."""
    if any(os.environ.get(name) for name in _GIT_ENVIRONMENT):
        return True
    if (git_dir / "shallow").exists() or (git_dir / "info" / "grafts").exists():
        return True
    base = ["git", "--git-dir", str(git_dir)]
    pattern = r"^(i18n\.logoutputencoding|i18n\.commitencoding|extensions\.objectformat)$"
    settings = subprocess.run([*base, "config", "--get-regexp", pattern], capture_output=True, text=True)
    if settings.returncode not in (0, 1):
        return True
    for line in settings.stdout.splitlines():
        name, _, value = line.partition(" ")
        if value.lower() not in (("sha1",) if name == "extensions.objectformat" else ("utf-8", "utf8")):
            return True
    replaced = subprocess.run(
        [*base, "for-each-ref", "--count=1", "--format=%(refname)", "refs/replace/"], capture_output=True
    )
    return replaced.returncode != 0 or bool(replaced.stdout.strip())


@dataclass(frozen=True)
class _Plan:
    """What to read: the reached commits by pack file (their offsets in pack order, their oids), the few
    read already (outside the commit-graph or loose) and those left to git."""

    by_pack: list[tuple[Path, np.ndarray, np.ndarray]]
    read: dict[str, bytes]
    for_git: list[str]


def blocks(git_dir: str | os.PathLike[str], tips: list[str], size: int) -> Iterator[bytes | PackSlice] | None:
    """Every commit the tips reach, log commits included: packed ones as `PackSlice`s, the others as
    `reader.walk_blocks` gives them (blocks of about `size` bytes of NUL-separated records); None when git
    must read this store (see the module's note). What is reached is settled before this returns."""
    git_dir = Path(git_dir)
    if not tips or _read_by_git_only(git_dir):
        return None
    graph = CommitGraph.load(git_dir / "objects")
    store = ObjectStore.open(git_dir / "objects")
    if graph is None or store is None:
        return None
    plan = _plan(graph, store, tips)
    return None if plan is None else _blocks(git_dir, plan, size)


OUTSIDE_MOST = 20_000
"""Commits outside the commit-graph that a plan follows one by one (about 50 us each); beyond, git walks
(a graph left far behind: commit-graphs turned off in this clone after a stalled write)."""


def _plan(graph: CommitGraph, store: ObjectStore, tips: list[str]) -> _Plan | None:
    starts, outside = graph.positions(tips)
    read: dict[str, bytes] = {}
    more: list[np.ndarray] = [starts]
    while outside:  # commits newer than the commit-graph: read here, their parents followed
        sha = outside.pop()
        if sha in read:
            continue
        if len(read) >= OUTSIDE_MOST:
            return None
        raw = store.commit(sha)
        found = None if raw is None else parents(raw)
        if raw is None or found is None:
            return None  # a walk only git can continue
        read[sha] = raw
        at, beyond = graph.positions(found)
        more.append(at)
        outside += [p for p in beyond if p not in read]
    reached = graph.oids[graph.reach(np.concatenate(more))]
    by_pack, left = [], reached
    for pack in sorted(store.packs, key=lambda pack: -len(pack.offsets)):  # the largest holds the most
        if not len(left):
            break
        at = pack.find(left)  # only what the packs before did not hold
        here = at >= 0
        chosen = at[here][np.argsort(pack.offsets[at[here]])]  # pack order: the file read front to back
        by_pack.append((pack.path, pack.offsets[chosen], pack.oids[chosen]))
        left = left[~here]
    for_git = []
    for sha in (s.decode() for s in _hex(left)):
        raw = store.loose_commit(sha)
        if raw is None:
            for_git.append(sha)
        else:
            read[sha] = raw
    return _Plan(by_pack, read, for_git)


def _hex(oids: np.ndarray) -> list[bytes]:
    text = oids.tobytes().hex().encode()
    return [text[i : i + 40] for i in range(0, len(text), 40)]


def _blocks(git_dir: Path, plan: _Plan, size: int) -> Iterator[bytes | PackSlice]:
    """The plan's packed commits as slices, read where they are parsed; then the few read already, as
    blocks of records, and those only git prints."""
    for path, offsets, oids in plan.by_pack:
        for first in range(0, len(offsets), SLICE_COMMITS):
            chosen = slice(first, first + SLICE_COMMITS)
            yield PackSlice(git_dir, path, offsets[chosen], oids[chosen])
    held: list[bytes] = []
    count = 0
    for_git = list(plan.for_git)
    for sha_text, raw in plan.read.items():
        line = record(sha_text.encode(), raw)
        if line is None:
            for_git.append(sha_text)
            continue
        held.append(line)
        count += len(line) + 1
        if count >= size:
            yield b"\0".join(held)
            held, count = [], 0
    if held:
        yield b"\0".join(held)
    yield from reader.printed_by_git(git_dir, for_git, size)


SLICE_COMMITS = 2048  # commits of a `PackSlice`: about a block of records (`parallel.BLOCK`)
RECORD_BYTES = 512  # about a record's length, what `parallel.take` counts a slice's commits as


@dataclass(frozen=True)
class PackSlice:
    """Some of a plan's commits, stored in one pack, in pack order: read by the process that parses
    them (`read`), so that the reading is shared by the workers as the parsing is."""

    git_dir: Path  # where git prints those `read` leaves
    path: Path
    offsets: np.ndarray
    oids: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) * RECORD_BYTES

    def read(self) -> SliceRead:
        """These commits read (see `SliceRead`). The pages of the pack are mapped only meanwhile."""
        shas = _hex(self.oids)
        data = mapped(self.path)
        if data is None:
            return SliceRead(b"", LogLinks(), [sha.decode() for sha in shas])
        lines, links, unread = [], LogLinks(), []
        with data:
            unpacker = Unpacker(data)
            for at, sha in zip(self.offsets.tolist(), shas):
                try:
                    raw = unpacker.commit(at)
                except (IndexError, ValueError):  # a damaged pack: git says what is wrong
                    raw = None
                head = None if raw is None else plain_header(raw)
                if raw is None or head is None:
                    unread.append(sha.decode())
                elif (link := log_link(raw, head)) is not None:
                    links.add(sha, *link)
                else:
                    lines.append(_record(sha, raw, head))
        return SliceRead(b"\0".join(lines), links, unread)


@dataclass
class LogLinks:
    """`listing.log_links`' columns (sha, first parent, entry) of log commits read by `log_link`, as bytes."""

    shas: list[bytes] = field(default_factory=list)
    parents: list[bytes | None] = field(default_factory=list)
    entries: list[bytes | None] = field(default_factory=list)

    def add(self, sha: bytes, parent: bytes | None, entry: bytes | None) -> None:
        self.shas.append(sha)
        self.parents.append(parent)
        self.entries.append(entry)


class SliceRead(NamedTuple):
    """A `PackSlice` read: the records of its commits as one block (`reader.walk_blocks`'), its log
    commits as links instead (`log_link`), and the shas of those only git prints: stored otherwise
    than `record` reads, damaged, or in a pack gone since the plan (a repack meanwhile)."""

    records: bytes
    links: LogLinks
    unread: list[str]
