"""The pre-receive hook `git agora hook install REPO` puts in a bare repository: server-side enforcement
where a host runs hooks (a self-hosted git, Gitea; not github.com).

Refuses, with one line the pusher sees (`remote: git-agora: ...`):
- deleting `refs/agora/log/*` or `refs/agora/identity/*`, or moving one other than forward;
- a new contribution that breaks a rule a commit can break on its own (trailers, sizes, nesting, clock
  range, verification shape, ...: `contribution.intrinsic_problems` and `time_problems`);
- a contribution whose account is not the log it is pushed into.
Readers check everything again: the hook only keeps junk off the server.
"""

from __future__ import annotations

import subprocess
import sys
import time

from .contribution import Contribution, ContributionError, intrinsic_problems, time_problems
from .refs.store import LOG_ENTRY_KEY

ZERO = "0" * 40
PROTECTED = ("refs/agora/log/", "refs/agora/identity/")
MAX_NEW_COMMITS = 100_000


def problems_of_update(old: str, new: str, ref: str) -> list[str]:
    """Why this ref update must be refused (empty: accept)."""
    if not ref.startswith(PROTECTED):
        return []
    if new == ZERO:
        return [f"{ref}: deleting an account's log is refused (logs are append-only)"]
    if old != ZERO and _git("merge-base", "--is-ancestor", old, new).returncode != 0:
        return [f"{ref}: a forced update is refused (logs only move forward)"]
    if not ref.startswith("refs/agora/log/"):
        return []
    account = ref[len("refs/agora/log/") :]
    return _entry_problems(account, old, new)


def _entry_problems(account: str, old: str, new: str) -> list[str]:
    """The contributions this update appends to `account`'s log: each must be readable and valid."""
    span = [new] if old == ZERO else [new, f"^{old}"]
    out = _git("log", "--first-parent", f"--format=%(trailers:key={LOG_ENTRY_KEY},valueonly)", *span).stdout
    entries = [line for line in out.split() if len(line) == 40][:MAX_NEW_COMMITS]
    problems, now = [], int(time.time())
    for sha in entries:
        header, _, message = _git("log", "-1", "--format=%ct %P%n%B", sha).stdout.partition("\n")
        when, *parents = header.split()
        try:
            c = Contribution.from_message(message, sha=sha, parents=parents)
        except ContributionError as exc:
            problems.append(f"{sha[:12]}: not a contribution ({exc})")
            continue
        found = [] if c.account == account else [f"account {c.account} pushed into the log of {account}"]
        found += time_problems(int(when), now) if when.isdigit() else ["unreadable committer time"]
        found += intrinsic_problems(c)
        problems += [f"{sha[:12]}: {p}" for p in found]
    return problems


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True, text=True)


def pre_receive(lines: list[str]) -> int:
    problems = []
    for line in lines:
        parts = line.split()
        if len(parts) == 3:
            problems += problems_of_update(*parts)
    for problem in problems[:20]:
        print(f"git-agora: {problem}", file=sys.stderr)
    if len(problems) > 20:
        print(f"git-agora: ... and {len(problems) - 20} more", file=sys.stderr)
    return 1 if problems else 0


def main() -> int:
    return pre_receive(sys.stdin.read().splitlines())


if __name__ == "__main__":
    sys.exit(main())
