"""Trees read in bulk: which of them hold a `.git` path component (readers mark such a contribution
invalid, writers refuse it: git itself refuses to check one out).

Each distinct tree object is read once, in chunks of `CHUNK` trees through one `git cat-file --batch
--buffer` each (`catfile.batch_output`), the answers taken apart in bulk (a round trip per object cost
as much as git's own reading); git reads the next chunk while this process looks at the last. A chunk
in which no name holds "git" and no entry is a folder is done in one search; else a tree with a subtree
or "git" in its bytes has its entries parsed. A tree's answer is the first offending path under it, so
a subtree shared by thousands of trees is judged once. This is the whole tree, not a diff against a
parent: a `.git` path kept from an invalid parent is found too.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator

from ..contribution import dotgit_component
from .catfile import batch_answers, batch_output

CHUNK = 32768  # trees asked of one `git cat-file` (their answers held in memory at once: about 5 MB)

_ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.S)
_TREE_MODE = b"40000"


def dotgit_paths(git_dir: str | os.PathLike[str], trees: Iterable[str]) -> dict[str, str]:
    """tree -> the first path with a `.git` component in it, for the trees (of `trees`) that hold one."""
    roots = list(dict.fromkeys(trees))
    children: dict[str, list[tuple[str, str]]] = {}  # tree -> its subtrees (name, oid)
    own: dict[str, str] = {}  # tree -> an offending entry of its own
    level = roots
    while level:
        below: list[str] = []
        for tree, kind, body in _read(git_dir, level):
            if kind != b"tree":  # "flat": a tree with nothing to look at; "missing": not here
                children[tree] = []
                continue
            subtrees: list[tuple[str, str]] = []
            if not (may_hold_git(body) or _TREE_MODE + b" " in body):
                children[tree] = subtrees  # a flat tree without "git" in any name: nothing to read
                continue
            for match in _ENTRY.finditer(body):
                name = match.group(2).decode("utf-8", "surrogateescape")
                if tree not in own and dotgit_component(name):
                    own[tree] = name
                if match.group(1) == _TREE_MODE:
                    subtrees.append((name, match.group(3).hex()))
            children[tree] = subtrees
            below += [oid for _, oid in subtrees]
        level = [oid for oid in dict.fromkeys(below) if oid not in children]
    if not own:  # the common case: no tree holds one
        return {}
    memo: dict[str, str | None] = {}

    def path_in(tree: str) -> str | None:
        if tree not in memo:
            memo[tree] = None  # a cycle cannot happen with real objects; this ends one in forged ones
            memo[tree] = own.get(tree) or next(
                (f"{name}/{below}" for name, oid in children.get(tree, ()) if (below := path_in(oid))), None
            )
        return memo[tree]

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))  # one level per folder: a forged tree may nest deep
    try:
        found: dict[str, str] = {}
        for tree in roots:
            try:
                path = path_in(tree)
            except RecursionError:
                path = "(a tree nested deeper than 10,000 folders)"
            if path:
                found[tree] = path
        return found
    finally:
        sys.setrecursionlimit(limit)


def may_hold_git(data: bytes) -> bool:
    """Whether "git" occurs in these bytes in any ASCII case: every name `dotgit_component` flags holds
    it (half the cost of a case-insensitive search over one tree, a seventh over a chunk's answers)."""
    return b"git" in data.lower()


def _read(git_dir: str | os.PathLike[str], oids: list[str]) -> Iterator[tuple[str, bytes, bytes]]:
    """(oid, kind, body) of each object (kind b"missing" and an empty body for one that is not here)."""
    for asked, out in _chunks_read(git_dir, oids):
        if not may_hold_git(out) and _TREE_MODE + b" " not in out:  # object ids are hex: no "g"
            yield from ((oid, b"flat", b"") for oid in asked)  # flat trees without "git" in any name
            continue
        yield from batch_answers(out, asked)


AHEAD = 2  # chunks git reads at once (a process each) while the caller looks at the last


def _chunks_read(git_dir: str | os.PathLike[str], oids: list[str]) -> Iterator[tuple[list[str], bytes]]:
    """Each chunk of `CHUNK` oids with `batch_output`'s answer for it; past one chunk, git reads the next
    `AHEAD` while the caller looks at this one (a thread waiting on git holds no lock)."""
    chunks = [oids[start : start + CHUNK] for start in range(0, len(oids), CHUNK)]
    if len(chunks) < 2:
        yield from ((chunk, batch_output(git_dir, chunk)) for chunk in chunks)
        return
    from collections import deque  # a bulk read's (a post's check reads one tree)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=AHEAD) as ahead:
        coming = deque(ahead.submit(batch_output, git_dir, chunk) for chunk in chunks[:AHEAD])
        for at, chunk in enumerate(chunks):
            out = coming.popleft().result()
            if at + AHEAD < len(chunks):
                coming.append(ahead.submit(batch_output, git_dir, chunks[at + AHEAD]))
            yield chunk, out
