"""Account names that look alike: `f0under`, `Founder` and `founder_` beside `founder`.

A name's *skeleton* folds what a reader confuses at a glance: case, the separators `.`, `_` and `-`, the
digits 0 and 1 (as o and l), i and l, and the pairs rn (m) and vv (w). Two accounts with one skeleton
look alike; the later one (by its first contribution) is marked "looks like NAME" by readers, and
writers warn before creating it. Names that differ only by case are refused outright (their refs
collide on a case-insensitive filesystem). Standard library only: a post imports it.
"""

from __future__ import annotations

from collections.abc import Iterable

_FOLD = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l", ".": None, "_": None, "-": None})


def skeleton(name: str) -> str:
    """What a reader sees of a name at a glance (module docstring)."""
    return name.lower().replace("rn", "m").replace("vv", "w").translate(_FOLD)


def look_alikes(accounts_in_order: Iterable[str]) -> dict[str, str]:
    """Each account that looks like an earlier one (first appearance first), mapped to that earlier one."""
    first: dict[str, str] = {}
    marked: dict[str, str] = {}
    for account in accounts_in_order:
        key = skeleton(account)
        if key in first and first[key] != account:
            marked[account] = first[key]
        else:
            first.setdefault(key, account)
    return marked
