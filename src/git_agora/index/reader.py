"""Bulk reading of commits under refs/agora through one `git log` process.

`git log --date-order` from the new tips down to the old ones is the fastest walk measured for a
limited walk and at a million contributions (`--topo-order` is pathological on log merges); a smaller
rebuild streams in git's default order (`walk_blocks`). One process replaces thousands of object reads.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from ..contribution import Contribution, ContributionError, NewerFormat
from ..refs.boundary import commit_graph_size
from ..refs.git import LOG_OPTIONS
from ..refs.store import LOG_ENTRY_KEY, LOG_FORMAT_TRAILER

_FORMAT = "%H %T %ct %P%n%an <%ae>%x1f%cn <%ce>%n%B"  # the Git author and committer: `contribution.identity_problems`


@dataclass(frozen=True)
class RawCommit:
    sha: str
    tree: str
    timestamp: int
    parents: tuple[str, ...]
    message: str
    problem: str | None = None  # what made the header unreadable
    author: str = ""  # `Name <email>`, as git reads them from the commit
    committer: str = ""


@dataclass(frozen=True)
class ParsedCommit:
    """A contribution, or a commit under refs/agora that failed to decode as one (with why)."""

    raw: RawCommit
    contribution: Contribution | None
    problem: str | None = None


DATE_ORDER_FROM = 500_000
"""Commits in the commit-graph from which a rebuild walks in date order (`walk_blocks`): 200,000 commits
(100,000 contributions) rebuild faster in the default order, 2,000,000 in date order."""


def walk_blocks(
    git_dir: str | os.PathLike[str], tips: list[str], exclude: list[str], size: int = 1 << 20
) -> Iterator[bytes]:
    """Every commit reachable from tips and not from exclude, as blocks of undecoded records, log commits
    included (`records` splits one): a large walk hands them to worker processes, which also read the log
    commits (`listing.log_links`).

    Their order is not walk order. A walk that excludes nothing (a rebuild) takes git's default order,
    whose first records come at once, so the workers parse while git is still walking; `--date-order`
    prints nothing until git has walked everything without a commit-graph (a second at 100,000
    contributions, both cores idle), and 0.16 s in with one. At a million the default order costs git
    5.6 s more CPU (22 s against 16.4 s: its queue of pending commits is as wide as the accounts), more
    than the 2.4 s date order keeps the cores waiting: from `DATE_ORDER_FROM` commits in the
    commit-graph a rebuild walks in date order. A walk that excludes commits is limited before it prints
    in any order, and date order is the fastest there."""
    if tips:
        streams_first = not exclude and commit_graph_size(os.path.join(git_dir, "objects")) < DATE_ORDER_FROM
        order = ["log"] if streams_first else ["log", "--date-order"]
        yield from _blocks(order, [*tips, *(f"^{sha}" for sha in exclude)], git_dir, size)


def printed_by_git(git_dir: str | os.PathLike[str], shas: list[str], size: int = 1 << 20) -> Iterator[bytes]:
    """These commits (no walk) as `walk_blocks` gives them, log commits included."""
    if shas:
        yield from _blocks(["log", "--no-walk=unsorted"], shas, git_dir, size)


def records(block: bytes) -> list[bytes]:
    """The records of one block of `walk_blocks`."""
    return block.split(b"\0")


def as_raw(commit: RawCommit | bytes) -> RawCommit:
    """A commit as `read` gives it, from either form."""
    return _raw_commit(commit) if isinstance(commit, bytes) else commit


def read(git_dir: str | os.PathLike[str], shas: list[str]) -> Iterator[RawCommit]:
    """These commits only (no walk), log commits left out (a log commit is transport, not a contribution:
    skipped before decoding)."""
    if shas:
        yield from _records(["log", "--no-walk=unsorted", "--ignore-missing"], shas, git_dir)


def _records(command: list[str], revisions: list[str], git_dir: str | os.PathLike[str]) -> Iterator[RawCommit]:
    return (_raw_commit(record) for record in _split(command, revisions, git_dir))


def _split(command: list[str], revisions: list[str], git_dir: str | os.PathLike[str]) -> Iterator[bytes]:
    """The records git prints, log commits left out, while git is still walking."""
    for block in _blocks(command, revisions, git_dir):
        yield from (r for r in block.split(b"\0") if not is_transport(r))  # log and identity commits


def _blocks(
    command: list[str], revisions: list[str], git_dir: str | os.PathLike[str], size: int = 1 << 20
) -> Iterator[bytes]:
    """What git prints, cut into blocks of whole records (`block.split(b"\\0")` gives the records), while
    git is still walking."""
    args = ["git", "--git-dir", str(git_dir), *command, *LOG_OPTIONS, "-z", f"--format={_FORMAT}", "--stdin"]
    # git flushes its output after every commit into a pipe (a write per commit, 1,000,000 at a million
    # contributions) unless told not to: then it writes whole buffers, 0.7 s less of its system time
    unflushed = {**os.environ, "GIT_FLUSH": "0"}
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=unflushed)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(("\n".join(revisions) + "\n").encode())
        proc.stdin.close()
        yield from record_blocks(proc.stdout, size)
        if proc.wait() != 0:
            errors.seek(0)
            raise RuntimeError(f"git log failed: {errors.read().decode(errors='replace').strip()}")


PIPE_BYTES = 1 << 20  # the pipe git writes into (Linux's default limit for an unprivileged process)
FILL_WAIT_S = 0.002


def record_blocks(stream: IO[bytes], size: int) -> Iterator[bytes]:
    """What a process writes to the pipe `stream`, as blocks of whole NUL-separated records of about
    `size` bytes (a longer record makes a longer block).

    Git writes a commit at a time: a reader that wakes for each write switches tasks 200,000 times for
    100,000 contributions (half a CPU-second on 2 cores). So the pipe is enlarged, once the output has
    filled a block a short read is followed by a pause that lets git fill the pipe (at most `FILL_WAIT_S`
    lost at the end; a small output, such as the few commits of an update, never waits), and the bytes
    are read into one reused buffer, copied once into the block they end up in."""
    fd = stream.fileno()
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or over the user's pipe quota
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, min(size, PIPE_BYTES))
    buffer = bytearray(size)
    view, filled, large = memoryview(buffer), 0, False
    while got := os.readv(fd, [view[filled:]]):
        filled += got
        if filled < len(buffer):
            if large and got < size // 4:
                time.sleep(FILL_WAIT_S)
            continue
        large = True
        cut = buffer.rfind(b"\0", 0, filled)
        if cut < 0:  # one record fills the buffer: a larger one
            view.release()
            buffer += bytes(len(buffer))
            view = memoryview(buffer)
            continue
        yield bytes(view[:cut])
        rest = filled - cut - 1
        view[:rest] = view[cut + 1 : filled]
        filled = rest
    if filled > 1 or (filled and buffer[0]):  # git ends its output with a NUL: no empty last record
        yield bytes(view[: filled - 1 if buffer[filled - 1] == 0 else filled])


LOG_BLOCK = f"\n\n{LOG_FORMAT_TRAILER}\n{LOG_ENTRY_KEY}: ".encode()
LOG_BLOCK_LENGTH = len(LOG_BLOCK) + 41  # the block, a 40-hex sha and the final newline


IDENTITY_BLOCK = b"\n\nAgora-Identity-Format: 1\nAgora-Key: "
IDENTITY_WITHIN = 1024  # the identity block lies in a commit's last bytes


def is_transport(text: bytes) -> bool:
    """Whether a commit message (or a `git log` record, which ends with it) is an account log commit's or
    an identity commit's."""
    return text[-LOG_BLOCK_LENGTH:].startswith(LOG_BLOCK) or IDENTITY_BLOCK in text[-IDENTITY_WITHIN:]


_INT64_MAX = 2**63 - 1


def _raw_commit(record: bytes) -> RawCommit:
    """One `git log` record. Git prints an empty %ct for a time it cannot parse (negative, say) and any
    digits for a huge one: both become a `problem`, never an exception."""
    header, _, message = record.decode("utf-8", "replace").partition("\n")
    people, _, message = message.partition("\n")
    author, _, committer = people.partition("\x1f")
    fields = header.split(" ")
    sha, tree, ts = (fields + ["", "", ""])[:3]
    parents = fields[3:]
    problem = None
    if not ts.isdigit():
        timestamp, problem = 0, "the committer time is missing or not a number"
    elif int(ts) > _INT64_MAX:
        timestamp, problem = _INT64_MAX, f"the committer time {ts} is out of range"
    else:
        timestamp = int(ts)
    return RawCommit(sha, tree, timestamp, tuple(p for p in parents if p), message, problem, author, committer)


def parse(raw: RawCommit) -> ParsedCommit:
    """Decode one commit; never raises: anything unreadable is a problem of that commit only."""
    if raw.problem:
        return ParsedCommit(raw, None, f"unreadable: {raw.problem}")
    try:
        contribution = Contribution.from_message(
            raw.message, sha=raw.sha, parents=raw.parents, timestamp=raw.timestamp, tree=raw.tree
        )
    except NewerFormat as exc:
        return ParsedCommit(raw, None, str(exc))
    except ContributionError as exc:
        return ParsedCommit(raw, None, f"not a contribution: {exc}")
    except Exception as exc:  # a reader must survive any commit: report it, keep reading
        return ParsedCommit(raw, None, f"unreadable: {type(exc).__name__}")
    return ParsedCommit(raw, contribution)
