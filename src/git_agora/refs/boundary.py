"""Where new history meets old, learnt before a fetch, so that neither side walks the whole graph.

A fetched commit with an old parent (a new account's first contribution on the setup, a result on a
months-old one) costs git 2.39 a walk from every ref tip down to that parent's date, twice: the server's
`pack-objects` from the client's haves, and the client's connectivity check from `--all`. With a
thousand account logs that is several seconds on each side at a million contributions, commit-graph or
not (the walk keeps a date-sorted list as wide as the number of logs). Named beforehand, such a parent
ends both walks at once: sent as a `have`, the server's walk stops there; standing as a ref, so does the
client's check.

`probe` learns those parents with shallow fetches of the moved refs into a scratch repository (depth 3,
deeper for the logs with more new entries);
`proven` keeps the ones whose whole history this clone is known to hold (a ref tip, or a commit in its
commit-graph, which git writes from refs only), the only ones that may stand as refs.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from ..drafts import sweep_abandoned_folders
from .catfile import CatFile, parents
from .commitgraph import HEADER, chunk_table, graph_files, table_size
from .git import Git

PROBE_DEPTHS = (3, 8, 32)
"""The probe's depths, each tried for the logs the one before did not reach down to known commits from:
a log with k new entries needs k + 1 (the new log commits, below them the entries and the old tip; each
entry's parents are read from the entry itself). 3 holds one or two: an account posting twice between
two fetches is the common case in a busy community, and a second round cost it a connection and the
remote's `pack-objects` again (0.52 against 0.37 s a fetch at a million contributions), while the third
level adds to a +1 only commits this clone has, whose trees share most of their files with the entry's
(a +1 fetch 0.382 against 0.383 s; the probe of a project with a 5 MB file 562 bytes more). A plain
fetch of every log instead walks the history whenever one of those entries rests on an old parent (23 s
at a million contributions); beyond 31 new entries in a log the caller fetches as usual (a clone
catching up)."""


PROBE_PREFIX = "probe-"  # the scratch repositories under .git/agora: `probe-<pid>-*`


def probe(common_dir: str | os.PathLike[str], remote: str, tips: dict[str, str]) -> set[str] | None:
    """The commits this clone already has on which the new commits of `tips` (remote ref -> sha) rest,
    read from depth-limited fetches into a scratch repository that reads this clone's config (the
    remote's URL, credentials): each of `PROBE_DEPTHS` in turn for the refs not reached down yet. None
    when a fetch fails or the deepest did not reach commits this clone has (a log with more new entries,
    a ref that moved meanwhile): the caller fetches as usual."""
    common_dir = Path(common_dir)
    try:
        (common_dir / "agora").mkdir(exist_ok=True)
        sweep_abandoned_folders(common_dir / "agora", PROBE_PREFIX)  # a killed fetch's, with what it fetched
        scratch = Path(tempfile.mkdtemp(prefix=f"{PROBE_PREFIX}{os.getpid()}-", dir=common_dir / "agora"))
    except OSError:
        return None
    try:
        git = Git(scratch)
        _bare_repository(scratch, common_dir / "config")
        found: set[str] = set()
        left = dict(tips)
        for depth in PROBE_DEPTHS:
            proc = git.transfer(
                "fetch", "-q", f"--depth={depth}", "--no-tags", "--no-write-fetch-head", remote, *sorted(left)
            )
            if proc.returncode != 0:
                return None
            with CatFile(scratch) as theirs, CatFile(common_dir) as ours:
                if any(theirs.commit(sha) is None for sha in left.values()):
                    return None  # a ref moved since it was listed
                boundary, reached = _boundaries(theirs, ours, left)
            found |= boundary
            left = {ref: sha for ref, sha in left.items() if ref not in reached}
            if not left:  # the probe holds every new object: the fetch then only updates refs
                _adopt_objects(scratch / "objects", common_dir)
                return found
        return None
    except (OSError, RuntimeError):
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _bare_repository(path: Path, borrowed_config: Path) -> None:
    """The files of an empty bare repository (`git init --bare --template=` writes the same, in a process
    of its own: 10-20 ms of a +1 fetch), whose configuration includes this clone's (the remote's URL,
    credentials) and turns off what a scratch repository must not do."""
    for folder in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
        (path / folder).mkdir(parents=True, exist_ok=True)
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    config = f"[include]\n\tpath = {_quoted(borrowed_config)}\n"
    config += "[core]\n\tbare = true\n[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n"
    config += "[fetch]\n\twriteCommitGraph = false\n"
    (path / "config").write_text(config)


UNPACK_BELOW = 100
"""git's `fetch.unpackLimit`: a pack of the probe that brings fewer objects this clone lacks gives up only
those, as loose objects; one that brings more is kept whole, as git fetch keeps a pack."""


def _adopt_objects(source: Path, common_dir: Path) -> None:
    """Copy what a probe fetched into this clone's object directory (objects are named by their content:
    one this clone holds, loose, packed or through alternates, is left alone; an index is placed after
    its pack). A shallow fetch sends every object of the commits within its depth, a new entry's whole
    tree included, which this clone mostly holds already (a code-bearing project's files): such a pack
    gives up only the objects this clone lacks (`git unpack-objects` writes no object the repository
    has), so a fetch does not store the project's files again."""
    target = common_dir / "objects"
    objects = source.glob("[0-9a-f][0-9a-f]/" + "[0-9a-f]" * 38)
    loose = {path.parent.name.encode() + path.name.encode(): path for path in objects}
    for sha in sorted(_lacked(common_dir, list(loose))):
        _place(loose[sha], target / loose[sha].relative_to(source))
    for pack in sorted(source.glob("pack/pack-*.pack")):
        index = pack.with_suffix(".idx")
        with open(index, "rb") as listing:
            shown = subprocess.run(["git", "show-index"], stdin=listing, capture_output=True, check=True)
        if len(_lacked(common_dir, [line.split(b" ")[1] for line in shown.stdout.splitlines()])) < UNPACK_BELOW:
            _unpack(common_dir, pack)
        else:
            _place(pack, target / "pack" / pack.name)
            _place(index, target / "pack" / index.name)


def _lacked(common_dir: Path, shas: list[bytes]) -> set[bytes]:
    """Those of `shas` (hex) the repository does not hold."""
    if not shas:
        return set()
    answers = Git(common_dir).run_bytes(
        "cat-file", "--batch-check", "--buffer", input=b"".join(sha + b"\n" for sha in shas)
    )
    return {line.split(b" ")[0] for line in answers.splitlines() if line.endswith(b" missing")}


def _unpack(common_dir: Path, pack: Path) -> None:
    with open(pack, "rb") as data:
        unpacked = subprocess.run(
            ["git", "--git-dir", str(common_dir), "unpack-objects", "-q"], stdin=data, capture_output=True
        )
    if unpacked.returncode != 0:  # a full disk, say: what was written is whole objects; the caller falls back
        raise OSError(unpacked.stderr.decode("utf-8", "replace").strip())


def _place(source: Path, target: Path) -> None:
    if target.exists():
        return
    target.parent.mkdir(exist_ok=True)
    temporary = target.with_name(f"tmp-probe-{target.name}")
    try:
        shutil.copyfile(source, temporary)
        temporary.replace(target)
    except OSError:
        temporary.unlink(missing_ok=True)  # a full disk leaves no half copy behind; the caller falls back
        raise


def _quoted(path: Path) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Probed(Protocol):
    def commit(self, sha: str) -> bytes | None: ...


def _boundaries(theirs: _Probed, ours: _Probed, tips: dict[str, str]) -> tuple[set[str], set[str]]:
    """(the first commits this clone has on every path down from the reached tips, the refs of `tips`
    reached): a tip is reached when no path down from it leaves the probe before such a commit. One walk
    for all the tips, each commit read once, however many logs share it."""
    below: dict[str, list[str]] = {}  # the probe's new commits, with their parents
    held: set[str] = set()
    missing: set[str] = set()  # neither here nor in the probe: a path left it
    todo = list(tips.values())
    while todo:
        sha = todo.pop()
        if sha in below or sha in held or sha in missing:
            continue
        if ours.commit(sha) is not None:
            held.add(sha)
            continue
        raw = theirs.commit(sha)
        if raw is None:
            missing.add(sha)
            continue
        below[sha] = parents(raw)
        todo += below[sha]
    short = _leading_to(missing, below)
    reached = {ref for ref, sha in tips.items() if sha not in short}
    boundary: set[str] = set()
    seen: set[str] = set()
    todo = [tips[ref] for ref in reached]
    while todo:
        sha = todo.pop()
        if sha in seen:
            continue
        seen.add(sha)
        if sha in held:
            boundary.add(sha)
        else:
            todo += below[sha]
    return boundary, reached


def _leading_to(ends: set[str], below: dict[str, list[str]]) -> set[str]:
    """`ends` and every commit of `below` with a path down to one of them."""
    above: dict[str, list[str]] = {}
    for sha, ps in below.items():
        for parent in ps:
            above.setdefault(parent, []).append(sha)
    found = set(ends)
    todo = list(ends)
    while todo:
        for child in above.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def proven(common_dir: str | os.PathLike[str], shas: Iterable[str], ref_tips: Iterable[str]) -> set[str]:
    """Those of `shas` whose whole history this clone holds: ref tips, and commits in its commit-graph
    (git writes one from the commits reachable from refs, and stops at a missing parent)."""
    common_dir = Path(common_dir)
    wanted = set(shas)
    found = wanted & set(ref_tips)
    rest = wanted - found
    if rest:
        found |= in_commit_graph(common_dir / "objects", rest)
    return found


def commit_graph_size(objects: str | os.PathLike[str]) -> int:
    """How many commits the commit-graph files of an object directory list (0 without a readable one)."""
    total = 0
    for path in graph_files(Path(objects)):
        with contextlib.suppress(OSError, ValueError), _mapped(path) as data:
            total += _commit_count(data)
    return total


@contextlib.contextmanager
def _mapped(path: Path) -> Iterator[mmap.mmap]:
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        yield data


def _chunks(data: mmap.mmap) -> dict[bytes, int]:
    """Where each chunk of a commit-graph file starts ({} for a file this package does not read)."""
    found = chunk_table(data[: table_size(data[:HEADER])], len(data))
    return {} if found is None else {name: start for name, (start, _end) in found.items()}


def _commit_count(data: mmap.mmap) -> int:
    fanout = _chunks(data).get(b"OIDF")
    if fanout is None or fanout + 1024 > len(data):
        return 0
    return int.from_bytes(data[fanout + 1020 : fanout + 1024], "big")


def in_commit_graph(objects: Path, shas: Iterable[str]) -> set[str]:
    """Those of `shas` listed in the commit-graph files git reads in an object directory
    (`commitgraph.graph_files`); an unreadable or unknown file lists nothing."""
    keys = {bytes.fromhex(s) for s in shas if len(s) == 40}
    found: set[bytes] = set()
    for path in graph_files(Path(objects)):
        found |= _listed(path, keys - found)
    return {key.hex() for key in found}


def _listed(path: Path, keys: set[bytes]) -> set[bytes]:
    if not keys:
        return set()
    try:
        with _mapped(path) as data:
            return {key for key in keys if _has(data, key)}
    except (OSError, ValueError):
        return set()


def _has(data: mmap.mmap, key: bytes) -> bool:
    """Binary search of one commit-graph file (format version 1, SHA-1): the OID fanout and lookup chunks."""
    chunks = _chunks(data)
    fanout, lookup = chunks.get(b"OIDF"), chunks.get(b"OIDL")
    if fanout is None or lookup is None or fanout + 1024 > len(data):
        return False

    def count(byte: int) -> int:
        return int.from_bytes(data[fanout + 4 * byte : fanout + 4 * byte + 4], "big")

    lo, hi = (count(key[0] - 1) if key[0] else 0), count(key[0])
    if hi > count(255) or lookup + 20 * count(255) > len(data):
        return False
    while lo < hi:
        mid = (lo + hi) // 2
        at = bytes(data[lookup + 20 * mid : lookup + 20 * mid + 20])
        if at == key:
            return True
        lo, hi = (mid + 1, hi) if at < key else (lo, mid)
    return False
