"""Bulk reading of commits under refs/agora through one `git log` process.

`git log --date-order` from the new tips down to the old ones is the fastest walk measured (its
default topological order is pathological on log merges), and one process replaces thousands of
object reads.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..contribution import Contribution, ContributionError
from ..refs.store import LOG_ENTRY_KEY

_FORMAT = "%H %T %ct %P%n%B"
_LOG_MARKER = "\nAgora-Log-Format: 1\n"


@dataclass(frozen=True)
class RawCommit:
    sha: str
    tree: str
    timestamp: int
    parents: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class LogCommit:
    sha: str
    account: str
    entry: str
    previous: str | None  # the log commit before it, None for the first


@dataclass(frozen=True)
class ParsedCommit:
    """A contribution, or a commit under refs/agora that failed to decode as one (with why)."""

    raw: RawCommit
    contribution: Contribution | None
    problem: str | None = None


def walk(git_dir: Path, tips: list[str], exclude: list[str]) -> Iterator[RawCommit]:
    """Every commit reachable from tips and not from exclude, newest first."""
    if not tips:
        return
    args = ["git", "--git-dir", str(git_dir), "log", "-z", "--date-order", f"--format={_FORMAT}", "--stdin"]
    stdin = "\n".join([*tips, *(f"^{sha}" for sha in exclude)]) + "\n"
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(stdin.encode())
    if proc.returncode != 0:
        raise RuntimeError(f"git log failed: {err.decode(errors='replace').strip()}")
    for record in out.decode("utf-8", "replace").split("\0"):
        if not record:
            continue
        header, _, message = record.partition("\n")
        sha, tree, ts, *parents = header.split(" ")
        yield RawCommit(sha, tree, int(ts), tuple(p for p in parents if p), message)


def is_log_commit(raw: RawCommit) -> bool:
    return _LOG_MARKER in raw.message


def parse_log_commit(raw: RawCommit) -> LogCommit | None:
    account = entry = None
    for line in raw.message.splitlines():
        if line.startswith(f"{LOG_ENTRY_KEY}: "):
            entry = line.split(": ", 1)[1].strip()
        elif line.startswith("agora log: "):
            account = line.split(": ", 1)[1].strip()
    if not account or not entry:
        return None
    previous = raw.parents[0] if len(raw.parents) == 2 else None
    return LogCommit(raw.sha, account, entry, previous)


def parse(raw: RawCommit) -> ParsedCommit:
    try:
        contribution = Contribution.from_message(
            raw.message, sha=raw.sha, parents=raw.parents, timestamp=raw.timestamp, tree=raw.tree
        )
    except ContributionError as exc:
        return ParsedCommit(raw, None, str(exc))
    return ParsedCommit(raw, contribution)
