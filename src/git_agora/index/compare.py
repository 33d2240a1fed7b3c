"""Which rows of two tables differ (`git agora index --check`): rows only in one of them, rows listed
twice, rows out of order, and for rows in both, the columns whose values differ."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

LIMIT = 20

Reader = Callable[[Sequence[str]], pa.Table]
"""Reads these columns of one whole table, its rows in the table's order."""


def differences(name: str, mine: pa.Table, theirs: pa.Table, limit: int = LIMIT) -> list[str]:
    """What differs between the incremental table (`mine`) and the rebuilt one, one line each (at most
    `limit` lines, then a count of the rest)."""
    if mine.schema.names != theirs.schema.names:
        return [f"{name}: the columns differ ({', '.join(mine.schema.names)})"]
    if mine.equals(theirs):
        return []
    if "sha" in mine.schema.names:
        found, common = _row_set_differences(name, mine, theirs)
        found += _value_differences(name, mine, theirs, common, mine.schema.names)
    else:
        found = _set_differences(name, mine, theirs)
    return _limited(name, found or [f"{name}: the rows are the same but the tables differ"], limit)


def differences_by_column(
    name: str, read_mine: Reader, read_theirs: Reader, columns: Sequence[str], limit: int = LIMIT
) -> list[str]:
    """`differences` of two tables keyed by `sha`, read one column at a time beside the sha: first the
    rows (missing, listed twice, out of order), then each column's values, so that a million-row
    check holds two columns of each table at most, not both whole tables."""
    mine, theirs = read_mine(["sha"]), read_theirs(["sha"])
    found, common = ([], None) if mine.equals(theirs) else _row_set_differences(name, mine, theirs)
    for column in columns:
        if column == "sha":
            continue
        mine, theirs = read_mine(["sha", column]), read_theirs(["sha", column])
        if not mine.equals(theirs):
            if common is None:  # the same rows in the same order: only values differ
                common = mine.column("sha").to_pylist()
            found += _value_differences(name, mine, theirs, common, [column])
    return _limited(name, found, limit)


def _limited(name: str, found: list[str], limit: int) -> list[str]:
    return found[:limit] + ([f"{name}: ... and {len(found) - limit} more"] if len(found) > limit else [])


def _row_set_differences(name: str, mine: pa.Table, theirs: pa.Table) -> tuple[list[str], list[str]]:
    """Rows in one table only, rows listed twice, rows out of order; and the shas of the rows in both,
    in the rebuilt table's order."""
    a, b = mine.column("sha").to_pylist(), theirs.column("sha").to_pylist()
    found = []
    set_a, set_b = set(a), set(b)
    found += [f"{name}: {sha} is in the index but not in a rebuild" for sha in sorted(set_a - set_b)]
    found += [f"{name}: {sha} is missing from the index" for sha in sorted(set_b - set_a)]
    if len(a) != len(set_a):
        twice = sorted(sha for sha, n in Counter(a).items() if n > 1)
        found += [f"{name}: {sha} is listed more than once" for sha in twice]
    common = [sha for sha in b if sha in set_a]
    if [sha for sha in a if sha in set_b] != common:
        found.append(f"{name}: the rows are not in canonical order (timestamp, sha)")
    return found, common


def _value_differences(
    name: str, mine: pa.Table, theirs: pa.Table, common: list[str], columns: Sequence[str]
) -> list[str]:
    """For the rows in both tables (`common`, in the rebuilt order), the columns whose values differ."""
    position = {sha: i for i, sha in enumerate(mine.column("sha").to_pylist())}
    left = mine.take(pa.array([position[sha] for sha in common], pa.int64()))
    right = theirs.filter(pc.is_in(theirs.column("sha"), value_set=pa.array(common, pa.string())))
    shas = right.column("sha").to_pylist()
    found = []
    for column in columns:
        x, y = left.column(column), right.column(column)
        if x.equals(y):
            continue
        for i, (u, v) in enumerate(zip(x.to_pylist(), y.to_pylist())):
            if u != v:
                found.append(f"{name}: {shas[i]} {column}: {u!r} in the index, {v!r} in a rebuild")
    return found


def _set_differences(name: str, mine: pa.Table, theirs: pa.Table) -> list[str]:
    a = [tuple(r.values()) for r in mine.to_pylist()]
    b = [tuple(r.values()) for r in theirs.to_pylist()]
    found = [f"{name}: {row} is in the index but not in a rebuild" for row in sorted(set(a) - set(b), key=repr)]
    found += [f"{name}: {row} is missing from the index" for row in sorted(set(b) - set(a), key=repr)]
    if not found and a != b:
        found.append(f"{name}: the rows are not in canonical order or listed more than once")
    return found
