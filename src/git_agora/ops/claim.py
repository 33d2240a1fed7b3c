"""`claim`: tell everyone what you are trying, until when, before spending compute on it."""

from __future__ import annotations

import time

from ..contribution import WIP
from ..errors import AgoraError
from ..frontier.claims import CLAIM_COLUMNS, DEFAULT_SECONDS, UNTIL_KEY, Claim, active_claims, parse_duration
from ..project import Project
from .publish import Published, post


def claim(
    project: Project, sha: str, description: str, lasting: int | str = DEFAULT_SECONDS, now: float | None = None
) -> Published:
    """Publish a claim on `sha` (a `wip` contribution built on it) lasting `lasting` (seconds, or a
    duration such as '90m', '2h', '1d') from now."""
    if not description.strip():
        raise AgoraError("empty description: say what you are trying (-m)")
    try:
        seconds = parse_duration(lasting) if isinstance(lasting, str) else int(lasting)
    except ValueError as exc:
        raise AgoraError(str(exc)) from None
    if seconds <= 0:
        raise AgoraError("a claim lasts a positive time (--for 30m, 2h, 1d)")
    start = int(now if now is not None else time.time())
    meta = {UNTIL_KEY: start + seconds}
    return post(project, description, [WIP], parents=[sha], meta=meta, timestamp=start)


def release(project: Project, sha: str, now: float | None = None) -> Published:
    """End your claim on `sha` now (a newer claim of yours on it that has already expired)."""
    target = project.contribution_sha(sha)
    mine = [c for c in claims(project, now) if c.account == project.account and c.target == target]
    if not mine:
        raise AgoraError(f"you have no active claim on {sha[:12]}")
    end = int(now if now is not None else time.time())
    title = f"released: the claim on {target[:12]}"  # fixed words: nothing copied from the claim's text
    return post(project, title, [WIP], parents=[mine[0].target], meta={UNTIL_KEY: end}, timestamp=end)


def claims(project: Project, now: float | None = None) -> tuple[Claim, ...]:
    """The claims active now, newest first."""
    from .indexing import load

    return tuple(active_claims(load(project, CLAIM_COLUMNS).contributions, now if now is not None else time.time()))
