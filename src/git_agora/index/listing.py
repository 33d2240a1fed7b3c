"""Which account logs list which contributions: a contribution counts only when the log of the
account it names lists it (in a local, remote-tracking or quarantined copy of that log).

Entries are read from each moved log's first-parent chain, from its new tip down to its old one, so
an update costs what is new; nothing walks the contribution graph.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from ..refs.names import LOG_PREFIX, QUARANTINE_PREFIX, REMOTES_PREFIX
from ..refs.store import LOG_ENTRY_KEY

NOT_LISTED = "not listed in the log of its account"


def log_account(ref: str) -> str | None:
    """The account whose log `ref` is (a local, remote-tracking or quarantined copy), else None."""
    if ref.startswith(LOG_PREFIX):
        return ref[len(LOG_PREFIX) :]
    if ref.startswith(REMOTES_PREFIX) and "/log/" in ref:
        return ref.split("/log/", 1)[1]
    if ref.startswith(QUARANTINE_PREFIX):
        parts = ref[len(QUARANTINE_PREFIX) :].split("/")
        return parts[1] if len(parts) == 3 else None
    return None


def new_entries(git_dir: Path, old_tips: Mapping[str, str], new_tips: Mapping[str, str]) -> dict[str, set[str]]:
    """{contribution sha: accounts whose log newly lists it} for every log ref that moved."""
    listed: dict[str, set[str]] = {}
    for ref, tip in new_tips.items():
        account = log_account(ref)
        if account is None or old_tips.get(ref) == tip:
            continue
        old = old_tips.get(ref)
        entries = _chain_entries(git_dir, tip, old)
        if entries is None:  # the old tip is gone: read the whole chain
            entries = _chain_entries(git_dir, tip, None) or []
        for entry in entries:
            listed.setdefault(entry, set()).add(account)
    return listed


def _chain_entries(git_dir: Path, tip: str, old: str | None) -> list[str] | None:
    """The entries of the log commits on `tip`'s first-parent chain, down to `old`. The chain of a new
    log ends at its first commit, whose first parent is a contribution: reading stops there instead of
    following the contribution graph down to the setup. None when git cannot read the range."""
    args = ["git", "--git-dir", str(git_dir), "log", "--first-parent", "-z"]
    args += [f"--format=%(trailers:key={LOG_ENTRY_KEY},valueonly)", tip, "--stdin"]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"^{old}\n".encode() if old else b"")
    proc.stdin.close()
    entries, pending, ended = [], b"", False
    while not ended and (chunk := proc.stdout.read(1 << 16)):
        records = (pending + chunk).split(b"\0")
        pending = records.pop()
        for record in records:
            found = [line for line in record.decode("utf-8", "replace").split() if len(line) == 40]
            if not found:  # not a log commit: the chain has ended
                ended = True
                break
            entries += found
    if ended:
        proc.kill()
    elif pending.strip():
        entries += [line for line in pending.decode("utf-8", "replace").split() if len(line) == 40]
    code = proc.wait()
    return entries if ended or code == 0 else None
