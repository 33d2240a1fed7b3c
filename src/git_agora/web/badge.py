"""The site's status badge: `badge.json`, a shields.io endpoint (`https://img.shields.io/endpoint?url=...`,
docs/site.md), saying in a few words what a founder wants to see at a glance: the best result and whether
the project's verifiers stand behind it, and whether anything failed its rerun or nothing was verified.

`badge` is pure: it is given the numbers and returns the endpoint's JSON object.
"""

from __future__ import annotations

from typing import Any

LABEL = "agora"
# the colours shields.io names: green where the best holds up, orange where something needs a look
COLORS = {
    "confirmed": "brightgreen",
    "partial": "yellowgreen",
    "unverified": "yellow",
    "contested": "orange",
    "failed": "red",
    "none": "lightgrey",
}


def badge(best: float | None, status: str | None, verified: int, failed: int, contested: int = 0) -> dict[str, Any]:
    """The endpoint JSON for a project whose best result is `best` (None: no scored result) with its
    `status` (confirmed, partial, contested, unverified), where `verified` results are confirmed or
    partly confirmed, `failed` results failed their rerun and `contested` ones are disputed:

    - no result and nothing failed: "no results yet" (grey);
    - nothing scored but claims that failed: "3 failed" (red);
    - no verdict that counts on any result: "best 1.234, nothing verified" (yellow);
    - otherwise the best and its status, "best 1.234 confirmed" (green; yellow-green when partial,
      yellow when unverified, orange when contested), and ", 3 failed" after it, in orange, when results
      failed their rerun: a claim the CI caught is what a founder looks at first.
    """
    if best is None:
        if failed:
            return _endpoint(f"{failed} failed", COLORS["failed"])
        return _endpoint("no results yet", COLORS["none"])
    value = f"best {_number(best)}"
    if not verified and not failed and not contested:
        return _endpoint(f"{value}, nothing verified", COLORS["unverified"])
    shown = status if status in COLORS else "unverified"
    message = f"{value} {shown}"
    color = COLORS[shown]
    if failed:
        message += f", {failed} failed"
        color = COLORS["contested"]
    return _endpoint(message, color)


def _number(value: float) -> str:
    """Six significant digits, as a badge has room for (1.234, 0.000123, 1.2e+07)."""
    return f"{value:.6g}"


def _endpoint(message: str, color: str) -> dict[str, Any]:
    return {"schemaVersion": 1, "label": LABEL, "message": message, "color": color}
