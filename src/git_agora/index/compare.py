"""Which rows of two tables differ (`git agora index --check`): rows only in one of them, rows listed
twice, rows out of order, and for rows in both, the columns whose values differ."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

LIMIT = 20


def differences(name: str, mine: pa.Table, theirs: pa.Table, limit: int = LIMIT) -> list[str]:
    """What differs between the incremental table (`mine`) and the rebuilt one, one line each (at most
    `limit` lines, then a count of the rest)."""
    if mine.schema.names != theirs.schema.names:
        return [f"{name}: the columns differ ({', '.join(mine.schema.names)})"]
    if mine.equals(theirs):
        return []
    found = _row_differences(name, mine, theirs) if "sha" in mine.schema.names else _set_differences(name, mine, theirs)
    if not found:
        found = [f"{name}: the rows are the same but the tables differ"]
    return found[:limit] + ([f"{name}: ... and {len(found) - limit} more"] if len(found) > limit else [])


def _row_differences(name: str, mine: pa.Table, theirs: pa.Table) -> list[str]:
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
    position = {sha: i for i, sha in enumerate(a)}
    left = mine.take(pa.array([position[sha] for sha in common], pa.int64()))
    right = theirs.filter(pc.is_in(theirs.column("sha"), value_set=pa.array(common, pa.string())))
    shas = right.column("sha").to_pylist()
    for column in mine.schema.names:
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
