"""Claims (the paper's `wip`): "I am trying this, until then", so that others spend compute elsewhere.

A claim is a valid contribution tagged `wip` whose first parent is the claimed contribution (the
*target*) and whose metadata holds `claim_until` (unix seconds). For each account and target only the
newest claim counts (a claim with `claim_until` in the past releases an earlier one). A claim is
*active* at time `now` when `now < claim_until` (at most a week after the claim: readers cap what a
hand-written commit asks) and its account has not yet published follow-up work
on it: a valid contribution that is not wip, built on the target or on the claim, no older than the
claim. Claims weigh nothing in evidence (`wip` weighs 0, see `evidence`); they only inform.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import WIP
from .graph import tag_mask

UNTIL_KEY = "claim_until"
DEFAULT_SECONDS = 2 * 3600
LONGEST_SECONDS = 7 * 24 * 3600
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Claim:
    sha: str
    target: str
    account: str
    since: int  # the claim's committer time
    until: int
    title: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_duration(text: str) -> int:
    """Seconds in '90m', '2h', '1.5d', '45s' or '600' (seconds); at most a week. ValueError otherwise."""
    found = _DURATION.match(text)
    if found is None:
        raise ValueError(f"not a duration: {text!r} (say 30m, 2h or 1d)")
    seconds = round(float(found.group(1)) * _UNIT_SECONDS[found.group(2) or "s"])
    if seconds > LONGEST_SECONDS:
        raise ValueError(f"a claim lasts at most a week, not {text.strip()}")
    return seconds


CLAIM_COLUMNS = ("sha", "account", "timestamp", "title", "tags", "valid", "metadata", "parents")
"""The columns `active_claims` reads (a million-row index need not be read whole to list claims)."""


def active_claims(contributions: pa.Table, now: float) -> list[Claim]:
    """The claims active at `now`, newest first."""
    newest = _newest_claims(contributions)
    if not newest:
        return []
    followed = _followed_up(contributions, newest)
    active = [c for c in newest if c.until > now and c.sha not in followed]
    return sorted(active, key=lambda c: (-c.since, c.sha))


def claims_on(claims: list[Claim]) -> dict[str, list[Claim]]:
    """Active claims grouped by the contribution they claim."""
    grouped: dict[str, list[Claim]] = {}
    for claim in claims:
        grouped.setdefault(claim.target, []).append(claim)
    return grouped


def _newest_claims(contributions: pa.Table) -> list[Claim]:
    wip = contributions.filter(pc.and_(contributions["valid"], pa.array(tag_mask(contributions, WIP))))
    table = wip.filter(pc.fill_null(pc.match_substring(wip["metadata"], f'"{UNTIL_KEY}"'), False))  # the few wip rows
    newest: dict[tuple[str, str], Claim] = {}
    for row in table.select(["sha", "account", "timestamp", "title", "metadata", "parents"]).to_pylist():
        until = _until(row["metadata"])
        if until is None or not row["parents"]:
            continue
        until = min(until, row["timestamp"] + LONGEST_SECONDS)  # a hand-written commit may claim forever
        claim = Claim(row["sha"], row["parents"][0], row["account"], row["timestamp"], until, row["title"])
        key = (claim.account, claim.target)
        if key not in newest or (claim.since, claim.sha) > (newest[key].since, newest[key].sha):
            newest[key] = claim
    return list(newest.values())


def _until(metadata: str | None) -> int | None:
    try:
        value = json.loads(metadata or "{}").get(UNTIL_KEY)
    except (ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _followed_up(contributions: pa.Table, claims: list[Claim]) -> set[str]:
    """The claims whose account published non-wip work on the target or the claim since claiming."""
    accounts = pa.array(sorted({c.account for c in claims}))
    oldest = min(c.since for c in claims)
    not_wip = pa.array(~tag_mask(contributions, WIP))
    recent_by_claimers = pc.and_(
        pc.is_in(contributions["account"], value_set=accounts), pc.greater_equal(contributions["timestamp"], oldest)
    )
    candidates = contributions.filter(pc.and_(pc.and_(contributions["valid"], not_wip), recent_by_claimers))
    work = candidates.select(["account", "timestamp", "parents"]).to_pylist()
    followed = set()
    for claim in claims:
        if any(
            row["account"] == claim.account
            and row["timestamp"] >= claim.since
            and ({claim.target, claim.sha} & set(row["parents"] or ()))
            for row in work
        ):
            followed.add(claim.sha)
    return followed
