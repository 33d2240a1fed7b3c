"""The pre-receive hook `git agora hook install REPO` puts in a bare repository: server-side enforcement
where a host runs hooks (a self-hosted git, Gitea; not github.com).

Refuses, with one line the pusher sees (`remote: git-agora: ...`):
- deleting `refs/agora/log/*` or `refs/agora/identity/*`, or moving one other than forward;
- a new contribution that breaks a rule a commit can break on its own (trailers, sizes, nesting, clock
  range, verification shape, ...: `contribution.intrinsic_problems` and `time_problems`);
- a contribution whose account is not the log it is pushed into, or (format 2) whose Git author or
  committer is not `ACCOUNT <ACCOUNT@agora>`, or that declares an older format than its setup;
- an unsigned contribution where the project's setup requires signatures, and one whose signature
  does not verify with a key the account's identity (on the server, or pushed with it) announces;
- an identity commit that the key before it did not sign, and an identity for an account whose key the
  policy pins (`[ci] keys` of the setup or of its account's amendments) that starts with another key;
  such an account's entries are verified with the pinned key, whatever identity the server holds.
Readers check everything again: the hook only keeps junk off the server.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from .config import ConfigError, ProjectConfig
from .contribution import (
    POLICY,
    Contribution,
    ContributionError,
    identity_problems,
    intrinsic_problems,
    older_than_setup,
    time_problems,
)
from .identity.chain import chain_keys_in
from .identity.keys import same_key
from .identity.signatures import verify_many
from .index.signatures import BAD, precheck, raw_commits
from .refs.git import LOG_OPTIONS, Git
from .refs.names import IDENTITY_PREFIX
from .refs.store import LOG_ENTRY_KEY

ZERO = "0" * 40
PROTECTED = ("refs/agora/log/", "refs/agora/identity/")
MAX_NEW_COMMITS = 100_000
GIT = Git(Path("."))  # a hook runs in the bare repository


def problems_of_update(old: str, new: str, ref: str, pushed: Mapping[str, str] | None = None) -> list[str]:
    """Why this ref update must be refused (empty: accept). `pushed`: every ref this push updates."""
    if not ref.startswith(PROTECTED):
        return []
    if new == ZERO:
        return [f"{ref}: deleting an account's log is refused (logs are append-only)"]
    if old != ZERO and _git("merge-base", "--is-ancestor", old, new).returncode != 0:
        return [f"{ref}: a forced update is refused (logs only move forward)"]
    pushed = pushed or {}
    logs = {**_refs("refs/agora/log/"), **{r: t for r, t in pushed.items() if r.startswith("refs/agora/log/")}}
    if ref.startswith(IDENTITY_PREFIX):
        account = ref[len(IDENTITY_PREFIX) :]
        return _identity_problems(ref, new, pinned_keys(_roots(_tip_entries(logs)), logs).get(account, ()))
    account = ref[len("refs/agora/log/") :]
    identity = pushed.get(IDENTITY_PREFIX + account) or _ref(IDENTITY_PREFIX + account)
    return _entry_problems(account, old, new, identity, logs)


def _identity_problems(ref: str, new: str, pinned: tuple[str, ...] = ()) -> list[str]:
    length = len(_git("rev-list", "--first-parent", new).stdout.split())
    keys = chain_keys_in(GIT, new)
    if len(keys) < length:
        return [f"{ref}: an identity commit that its previous key did not sign (or that names no key) is refused"]
    if pinned and not any(same_key(keys[0], key) for key in pinned):
        return [f"{ref}: the project's policy pins another key for this account ([ci] keys): refused"]
    return []


def account_keys(identity: str | None, pinned: tuple[str, ...]) -> tuple[str, ...]:
    """The keys an account's entries may be signed with: its identity's chain; for an account the policy
    pins, the pinned keys and a chain that starts with one of them (whatever else the server holds)."""
    chain = tuple(chain_keys_in(GIT, identity)) if identity else ()
    if not pinned:
        return chain
    return pinned + (chain if chain and any(same_key(chain[0], key) for key in pinned) else ())


def pinned_keys(roots: list[str], logs: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """The keys the project's policies pin per account: `[ci] keys` of each setup in `roots` and of its
    account's policy amendments in `logs` (this push's included), as readers take them
    (`ops.standing.pins_in_force`), so a squatter's identity on the server never locks a pinned account out."""
    pins: dict[str, set[str]] = {}
    for root in sorted(set(roots)):
        founder = _account_of(root)
        policies = [root, *_amendments(logs.get(f"refs/agora/log/{founder}"), founder)] if founder else [root]
        for sha in policies:
            for account, key in _ci_keys(sha).items():
                if account != founder:
                    pins.setdefault(account, set()).add(" ".join(key.split()[:2]))
    return {account: tuple(sorted(keys)) for account, keys in pins.items()}


def _roots(entries: list[str]) -> list[str]:
    """The setups at the root of these contributions' first-parent lines."""
    return _git("rev-list", "--first-parent", "--max-parents=0", *entries).stdout.split() if entries else []


def _tip_entries(logs: Mapping[str, str]) -> list[str]:
    """The newest contribution each log lists."""
    if not logs:
        return []
    entries = f"--format=%(trailers:key={LOG_ENTRY_KEY},valueonly)"
    args = ["log", *LOG_OPTIONS, "--no-walk=unsorted", entries, *logs.values()]
    return [line for line in _git(*args).stdout.split() if len(line) == 40]


def _amendments(log: str | None, founder: str) -> list[str]:
    """The policy amendments in the founder's log (readers judge which is in force; any may pin)."""
    if log is None:
        return []
    out = _git("log", *LOG_OPTIONS, "--first-parent", f"--format=%(trailers:key={LOG_ENTRY_KEY},valueonly)", log).stdout
    entries = [line for line in out.split() if len(line) == 40]
    return [sha for sha, (_, _, _, message) in _read(entries).items() if _is_policy_of(message, founder)]


def _is_policy_of(message: str, founder: str) -> bool:
    try:
        c = Contribution.from_message(message)
    except ContributionError:
        return False
    return c.account == founder and POLICY in c.tags


@cache
def _account_of(sha: str) -> str | None:
    try:
        return Contribution.from_message(_git("log", *LOG_OPTIONS, "-1", "--format=%B", sha).stdout).account
    except ContributionError:
        return None


@cache
def _ci_keys(sha: str) -> Mapping[str, str]:
    try:
        keys = ProjectConfig.parse(_git("cat-file", "-p", f"{sha}:agora.toml").stdout).ci_keys
    except (ConfigError, ValueError, TypeError, AttributeError):
        return {}
    return {str(a): str(k) for a, k in keys.items()} if isinstance(keys, Mapping) else {}


def _refs(prefix: str) -> dict[str, str]:
    out = _git("for-each-ref", "--format=%(refname) %(objectname)", prefix).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def _entry_problems(
    account: str, old: str, new: str, identity: str | None, logs: Mapping[str, str] | None = None
) -> list[str]:
    """The contributions this update appends to `account`'s log: each must be readable, valid, and
    signed as the project asks, by a key the account's identity announces (`account_keys`)."""
    span = [new] if old == ZERO else [new, f"^{old}"]
    entries_format = f"--format=%(trailers:key={LOG_ENTRY_KEY},valueonly)"
    out = _git("log", *LOG_OPTIONS, "--first-parent", entries_format, *span).stdout
    entries = list(dict.fromkeys(line for line in out.split() if len(line) == 40))[:MAX_NEW_COMMITS]
    keys = account_keys(identity, pinned_keys(_roots(entries), logs or {}).get(account, ()))
    raws = raw_commits(Path("."), entries)
    problems, now, checks = [], int(time.time()), {}
    required = _signatures_required(entries)
    setup_format = _setup_format(entries)
    for sha, (when, parents, people, message) in _read(entries).items():
        try:
            c = Contribution.from_message(message, sha=sha, parents=parents)
        except ContributionError as exc:
            problems.append(f"{sha[:12]}: not a contribution ({exc})")
            continue
        found = [] if c.account == account else [f"account {c.account} pushed into the log of {account}"]
        found += time_problems(int(when), now) if when.isdigit() else ["unreadable committer time"]
        found += intrinsic_problems(c) + identity_problems(c.format, c.account, *people)
        found += [p for p in [older_than_setup(int(c.format), setup_format)] if p]
        problems += [f"{sha[:12]}: {p}" for p in found]
        checks[sha] = precheck(raws.get(sha), keys, required)
    jobs = {sha: job for sha, job in checks.items() if isinstance(job, tuple)}
    checks |= {sha: None if good else BAD for sha, good in zip(jobs, verify_many(list(jobs.values())))}
    return problems + [f"{sha[:12]}: {found}" for sha, found in checks.items() if isinstance(found, str)]


def _read(shas: list[str]) -> dict[str, tuple[str, list[str], tuple[str, str], str]]:
    """{sha: (committer time, parents, (Git author, committer), message)} of the given commits, in one
    `git log --no-walk`."""
    if not shas:
        return {}
    record = "--format=%H %ct %P%n%an <%ae>%x1f%cn <%ce>%n%B"
    args = ["git", "log", *LOG_OPTIONS, "--no-walk=unsorted", "-z", record, "--stdin"]
    out = subprocess.run(args, input="\n".join(shas) + "\n", capture_output=True, text=True).stdout
    records = {}
    for record in filter(None, out.split("\0")):
        header, _, rest = record.partition("\n")
        people, _, message = rest.partition("\n")
        author, _, committer = people.partition("\x1f")
        sha, when, *parents = header.split(" ") + [""]
        records[sha] = (when, [p for p in parents if p], (author, committer), message)
    return records


def _setup_format(shas: list[str]) -> int:
    """The newest Agora-Format a setup at the root of these contributions' first-parent lines declares
    (1 when none can be read): no contribution may declare an older one."""
    roots = _git("rev-list", "--first-parent", "--max-parents=0", *shas).stdout.split() if shas else []
    return max((_declared_by(root) for root in roots), default=1)


@cache
def _declared_by(root: str) -> int:
    try:
        return int(Contribution.from_message(_git("log", *LOG_OPTIONS, "-1", "--format=%B", root).stdout).format)
    except ContributionError:
        return 1


def _signatures_required(shas: list[str]) -> bool:
    """Whether a setup at the root of these contributions' first-parent lines requires signatures (new
    projects do): one walk for the whole push, not one per entry."""
    if not shas:
        return False
    roots = _git("rev-list", "--first-parent", "--max-parents=0", *shas).stdout.split()
    return any(_required_by(root) for root in roots)


@cache
def _required_by(root: str) -> bool:
    text = _git("cat-file", "-p", f"{root}:agora.toml").stdout
    try:
        identity = ProjectConfig.parse(text).sections.get("identity", {})
    except ConfigError:
        return False
    return isinstance(identity, dict) and identity.get("signatures") == "required"


def _ref(name: str) -> str | None:
    out = _git("rev-parse", "--verify", "--quiet", name).stdout.strip()
    return out or None


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True, text=True)


def pre_receive(lines: list[str]) -> int:
    updates = [parts for parts in (line.split() for line in lines) if len(parts) == 3]
    pushed = {ref: new for _, new, ref in updates if new != ZERO}
    problems = []
    for old, new, ref in updates:
        problems += problems_of_update(old, new, ref, pushed)
    for problem in problems[:20]:
        print(f"git-agora: {problem}", file=sys.stderr)
    if len(problems) > 20:
        print(f"git-agora: ... and {len(problems) - 20} more", file=sys.stderr)
    return 1 if problems else 0


def main() -> int:
    return pre_receive(sys.stdin.read().splitlines())


if __name__ == "__main__":
    sys.exit(main())
