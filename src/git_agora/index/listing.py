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
        args = ["git", "--git-dir", str(git_dir), "log", "--first-parent"]
        args += [f"--format=%(trailers:key={LOG_ENTRY_KEY},valueonly)", tip]
        old = old_tips.get(ref)
        stdin = f"^{old}\n" if old else ""
        proc = subprocess.run([*args, "--stdin"], input=stdin, capture_output=True, text=True)
        if proc.returncode != 0 and old:  # the old tip is gone: read the whole chain
            proc = subprocess.run(args, capture_output=True, text=True)
        out = proc.stdout
        for line in out.split():
            if len(line) == 40:
                listed.setdefault(line, set()).add(account)
    return listed
