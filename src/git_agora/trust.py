"""Local trust state, `.git/agora/trust.json`: what this clone has seen and decided, kept outside the
rebuildable index (`index --rebuild` keeps it, `index --check` does not compare it).

Holds the tamper reports: remote logs that were rewritten or deleted (and where their old tips are
kept). A report stays listed by `git agora status`, `analyze` and `log --rejected` until acknowledged.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .identity.chain import chain_keys, identity_account
from .identity.keys import same_key
from .locks import READ_ONLY_ERRORS
from .refs.quarantine import RewrittenLog
from .refs.store import Repository

TRUST_FILE = "trust.json"


@dataclass(frozen=True)
class TamperReport:
    id: str  # the quarantine ref's last part: the old tip, short
    kind: str  # rewritten | deleted
    remote: str
    account: str
    old_tip: str
    new_tip: str | None
    quarantine_ref: str
    seen: int
    acknowledged: bool = False

    def describe(self) -> str:
        return (
            f"[{self.id}] the log of {self.account} on {self.remote} was {self.kind}; its old tip is kept as "
            f"{self.quarantine_ref}"
        )

    def to_dict(self) -> dict:
        return asdict(self)


def _path(repo: Repository) -> Path:
    return Path(repo.agora_path, TRUST_FILE)


def _load(repo: Repository) -> dict:
    try:
        data = json.loads(_path(repo).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {"tamper": []}
    return data if isinstance(data, dict) else {"tamper": []}


def _save(repo: Repository, data: dict, best_effort: bool = False) -> None:
    """Replace trust.json. With `best_effort` (reading commands), a read-only `.git/agora` keeps the
    change in memory only: it is made again by the next command that can write."""

    path = _path(repo)
    tmp = path.with_name(f".{TRUST_FILE}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        if best_effort and exc.errno in READ_ONLY_ERRORS:
            return
        raise


def record_tampering(repo: Repository, events: list[RewrittenLog]) -> None:
    if not events:
        return
    data = _load(repo)
    known = {report["quarantine_ref"] for report in data["tamper"]}
    for event in events:
        if event.quarantine_ref in known:
            continue
        kind = "deleted" if event.new_tip is None else "rewritten"
        data["tamper"].append(
            asdict(
                TamperReport(
                    event.old_tip[:12],
                    kind,
                    event.remote,
                    event.account,
                    event.old_tip,
                    event.new_tip,
                    event.quarantine_ref,
                    int(time.time()),
                )
            )
        )
    _save(repo, data, best_effort=True)


def tamper_reports(repo: Repository, include_acknowledged: bool = False) -> list[TamperReport]:
    reports = [TamperReport(**report) for report in _load(repo).get("tamper", [])]
    return [r for r in reports if include_acknowledged or not r.acknowledged]


def acknowledge(repo: Repository, ids: list[str]) -> list[TamperReport]:
    """Mark reports acknowledged (`all` for every one); returns those it marked; unknown ids are an error."""
    data = _load(repo)
    reports = data.get("tamper", [])
    wanted = {r["id"] for r in reports} if ids == ["all"] else set(ids)
    unknown = wanted - {r["id"] for r in reports}
    if unknown:
        raise KeyError(", ".join(sorted(unknown)))
    marked = []
    for report in reports:
        if report["id"] in wanted and not report["acknowledged"]:
            report["acknowledged"] = True
            marked.append(TamperReport(**report))
    _save(repo, data)
    return marked


def trusted_keys(
    repo: Repository, refs: Mapping[str, str], decided: Mapping[str, Sequence[str]] | None = None
) -> dict[str, tuple[str, ...]]:
    """The keys this clone trusts for every account with an identity among `refs` (ref -> tip).

    - An account the policy speaks for (`decided`: account -> the keys policies pin for it, `[ci] keys`):
      those keys and what the valid chains holding one announce after it, whatever this clone saw first
      (the same for every reader of the same history; no pin is written).
    - Any other account: the valid chain that starts with the key pinned here (trust on first use: the
      first identity seen is pinned now).

    Chains are cached by tip (commits never change); the file is written only on change."""

    decided = decided or {}
    tips: dict[str, list[str]] = {}
    for ref, tip in refs.items():
        account = identity_account(ref)
        if account is not None:
            tips.setdefault(account, []).append(tip)
    data = _load(repo)
    before = json.dumps(data, sort_keys=True)
    cache, pins = data.setdefault("chains", {}), data.setdefault("keys", {})
    trusted = {}
    for account in sorted(set(tips) | set(decided)):
        account_tips = list(dict.fromkeys(tips.get(account, [])))
        for tip in account_tips:
            if tip not in cache:
                cache[tip] = chain_keys(repo, tip)
        chains = [cache[tip] for tip in account_tips if cache[tip]]
        if account in decided:
            trusted[account] = _from_pins(decided[account], chains)
            continue
        pinned = pins.get(account) or (chains[0][0] if chains else None)
        if pinned is None:
            continue
        pins[account] = pinned
        matching = [keys for keys in chains if same_key(keys[0], pinned)]
        trusted[account] = tuple(max(matching, key=lambda keys: len(list(keys)))) if matching else (pinned,)
    for account, pinned in pins.items():  # an identity gone from the remote: the pinned key still holds
        if account not in decided:
            trusted.setdefault(account, (pinned,))
    if json.dumps(data, sort_keys=True) != before:
        _save(repo, data, best_effort=True)
    return trusted


def _from_pins(keys: Sequence[str], chains: list[list[str]]) -> tuple[str, ...]:
    """The pinned keys, then every key a valid chain announces after one of them (a rotation the pinned
    key signed), in a fixed order: neither which chain arrived first nor from where changes it."""
    pinned = [" ".join(k.split()[:2]) for k in keys]
    later: set[str] = set()
    for chain in chains:
        at = next((i for i, key in enumerate(chain) if any(same_key(key, p) for p in pinned)), None)
        if at is not None:
            later.update(" ".join(k.split()[:2]) for k in chain[at + 1 :])
    return tuple(dict.fromkeys([*sorted(set(pinned)), *sorted(later - set(pinned))]))


def competing_identities(repo: Repository, account: str, refs: Mapping[str, str]) -> bool:
    """Whether this clone holds identities for `account` that start with different keys (from different
    remotes): then which one a first use pinned depends on where a reader fetched first."""
    roots = set()
    cache = _load(repo).get("chains", {})
    for ref, tip in refs.items():
        if identity_account(ref) == account:
            keys = cache.get(tip) or chain_keys(repo, tip)
            if keys:
                roots.add(" ".join(keys[0].split()[:2]))
    return len(roots) > 1


def pinned_on_first_use(repo: Repository, account: str) -> bool:
    """Whether this clone pinned `account`'s key on first use."""
    return account in _load(repo).get("keys", {})
