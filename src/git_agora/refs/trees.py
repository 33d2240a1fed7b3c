"""Trees read in bulk: which of them hold a path git refuses to check out (`contribution.checkout_refused`:
a `.git` component, `.`, `..` or an empty name, a `.gitmodules` symbolic link). Readers mark such a
contribution invalid, writers refuse it.

Each distinct tree object is read once, in chunks of `CHUNK` trees through one `git cat-file --batch
--buffer` each (`catfile.batch_output`), the answers taken apart in bulk (a round trip per object cost
as much as git's own reading); git reads the next chunk while this process looks at the last. A chunk's
answers (each headed by its type and size only, no object id) are searched whole for what such a name
holds: "git" in any case or a code point HFS+ ignores (every name `dotgit_component` flags holds one or
the other), a symbolic link's mode (NTFS's short names of `.gitmodules` need not hold "git"), a mode
followed by "", "." or ".."; and for a folder's mode. A mode is read as git reads it, by its kind bits:
`40755` and `0040000` are folders too. Only the trees a match falls in are cut out and their entries
parsed (at a million contributions, 660,000 trees, most chunks match nowhere). A tree's answer is the
first offending path under it, so a subtree shared by thousands of trees is judged once. This is the
whole tree, not a diff against a parent: a path kept from an invalid parent is found too.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator

from ..contribution import HFS_IGNORED, checkout_refused
from .catfile import batch_output

EMPTY_NAME = "(an empty name)"  # how a path shows an entry with no name (git cannot check it out)
CHUNK = 32768  # trees asked of one `git cat-file` (their answers held in memory at once: about 5 MB)

_ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.S)
_KIND, _FOLDER, _LINK = 0o170000, 0o040000, 0o120000  # the bits of a mode git reads as its kind (`S_IFMT`)
# a mode git reads as a folder's or a link's (and a few others): the fifth digit from its end 4 or 2
_FOLDER_OR_LINK = re.compile(rb"[24][0-7]{4} ")
_HEADER = "%(objecttype) %(objectsize)"  # no object id: a search of the answers meets hex digits only in bodies


def dotgit_paths(git_dir: str | os.PathLike[str], trees: Iterable[str]) -> dict[str, str]:
    """tree -> the first path git refuses to check out (`contribution.DOTGIT_REASON`), for the trees (of
    `trees`) that hold one."""
    roots = list(dict.fromkeys(trees))
    children: dict[str, list[tuple[str, str]]] = {}  # tree -> its subtrees (name, oid), where it has any
    own: dict[str, str] = {}  # tree -> an offending entry of its own
    read: set[str] = set()
    level = roots
    while level:
        read.update(level)
        below: list[str] = []
        for tree, body in _looked_at(git_dir, level):
            subtrees: list[tuple[str, str]] = []
            for match in _ENTRY.finditer(body):
                name = match.group(2).decode("utf-8", "surrogateescape")
                kind = int(match.group(1), 8) & _KIND  # as git reads a mode (a padded or odd one too)
                if tree not in own and checkout_refused(name, kind == _LINK):
                    own[tree] = name or EMPTY_NAME
                if kind == _FOLDER:
                    subtrees.append((name, match.group(3).hex()))
            if subtrees:
                children[tree] = subtrees
                below += [oid for _, oid in subtrees]
        level = [oid for oid in dict.fromkeys(below) if oid not in read]
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


# the code points HFS+ ignores in a name (`contribution.hfs_dotgit`: `.g\u200cit`) in UTF-8: how they
# start, and the byte that may follow (searched for apart, the start alone matches in object ids)
_IGNORED = [
    (lead, frozenset(char.encode()[len(lead) :] for char in HFS_IGNORED if char.encode().startswith(lead)))
    for lead in (b"\xe2\x80", b"\xe2\x81", b"\xef\xbb")
]


_DOTS = (b" \0", b" .\0", b" ..\0")  # an entry named "", "." or "..", after its mode


def _after_a_digit(data: bytes, at: int) -> bool:
    """Whether an octal digit ends at `at`, as a tree entry's mode does (an object id holds one before
    such a match rarely, and no matter: a tree a false match falls in is only parsed)."""
    return at >= 1 and 48 <= data[at - 1] <= 55


def _looked_at(git_dir: str | os.PathLike[str], oids: list[str]) -> Iterator[tuple[str, bytes]]:
    """(oid, body) of the trees among these objects whose bytes hold "git" in any ASCII case, a code
    point HFS+ ignores, a mode git may read as a folder's or a symbolic link's (NTFS's short names of
    `.gitmodules` need not hold "git") or an entry named "", "." or "..": the others (flat trees
    without such names, other objects, missing ones) have nothing to look at."""
    for asked, out in _chunks_read(git_dir, oids):
        hits = _found(out.lower(), b"git") + [found.start() for found in _FOLDER_OR_LINK.finditer(out)]
        hits += [
            at
            for lead, ends in _IGNORED
            for at in _found(out, lead)
            if out[at + len(lead) : at + len(lead) + 1] in ends
        ]
        hits += [at for name in _DOTS for at in _found(out, name) if _after_a_digit(out, at)]
        hits.sort()
        if hits:
            yield from _hit_trees(out, asked, hits)


def _found(data: bytes, needle: bytes) -> list[int]:
    """Where `needle` starts in `data` (a search per match: a fifth of the time of one expression for both
    needles over a chunk's answers)."""
    found: list[int] = []
    at = data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


def _hit_trees(out: bytes, asked: list[str], hits: list[int]) -> Iterator[tuple[str, bytes]]:
    """The trees of `batch_output`'s answer `out` (for `asked`) that hold one of the sorted positions."""
    at, next_hit = 0, 0
    for oid in asked:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if header[-1] == b"missing":  # "<oid> missing"
            at = end + 1
            continue
        body_end = end + 1 + int(header[1])
        while next_hit < len(hits) and hits[next_hit] < end:
            next_hit += 1  # in this header ("<type> <size>"): nothing to look at
        if next_hit < len(hits) and hits[next_hit] < body_end:
            if header[0] == b"tree":
                yield oid, out[end + 1 : body_end]
            while next_hit < len(hits) and hits[next_hit] < body_end:
                next_hit += 1
            if next_hit == len(hits):
                return
        at = body_end + 1


AHEAD = 2  # chunks git reads at once (a process each) while the caller looks at the last


def _chunks_read(git_dir: str | os.PathLike[str], oids: list[str]) -> Iterator[tuple[list[str], bytes]]:
    """Each chunk of `CHUNK` oids with `batch_output`'s answer for it; past one chunk, git reads the next
    `AHEAD` while the caller looks at this one (a thread waiting on git holds no lock)."""
    chunks = [oids[start : start + CHUNK] for start in range(0, len(oids), CHUNK)]
    if len(chunks) < 2:
        yield from ((chunk, batch_output(git_dir, chunk, _HEADER)) for chunk in chunks)
        return
    from collections import deque  # a bulk read's (a post's check reads one tree)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=AHEAD) as ahead:
        coming = deque(ahead.submit(batch_output, git_dir, chunk, _HEADER) for chunk in chunks[:AHEAD])
        for at, chunk in enumerate(chunks):
            out = coming.popleft().result()
            if at + AHEAD < len(chunks):
                coming.append(ahead.submit(batch_output, git_dir, chunks[at + AHEAD], _HEADER))
            yield chunk, out
