"""`index --check` compares column by column; it must say exactly what the whole-table comparison says."""

from __future__ import annotations

import random

import pyarrow as pa

from git_agora.index import compare


def table(rows: list[tuple[str, int, str]]) -> pa.Table:
    sha, ts, title = zip(*rows) if rows else ((), (), ())
    return pa.table(
        {"sha": pa.array(sha, pa.string()), "timestamp": pa.array(ts, pa.int64()), "title": pa.array(title)}
    )


def by_column(mine: pa.Table, theirs: pa.Table) -> list[str]:
    return compare.differences_by_column("contributions", mine.select, theirs.select, mine.schema.names, limit=1000)


def damaged(rows: list[tuple[str, int, str]], rng: random.Random) -> list[tuple[str, int, str]]:
    rows = list(rows)
    for _ in range(rng.randint(1, 3)):
        if not rows:
            break
        i = rng.randrange(len(rows))
        kind = rng.choice(("drop", "twice", "swap", "title", "extra"))
        if kind == "drop":
            del rows[i]
        elif kind == "twice":
            rows.insert(i, rows[i])
        elif kind == "swap" and i + 1 < len(rows):
            rows[i], rows[i + 1] = rows[i + 1], rows[i]
        elif kind == "title":
            rows[i] = (rows[i][0], rows[i][1], rows[i][2] + "!")
        else:
            rows.insert(i, (f"{rng.getrandbits(160):040x}", rows[i][1], "forged"))
    return rows


def test_column_by_column_says_what_the_whole_table_comparison_says():
    rng = random.Random(5)
    for _ in range(200):
        rows = [(f"{rng.getrandbits(160):040x}", t, f"title {t % 3}") for t in range(rng.randint(2, 12))]
        theirs = table(rows)
        mine = table(damaged(rows, rng))
        assert by_column(mine, theirs) == compare.differences("contributions", mine, theirs, limit=1000)


def test_equal_tables_and_a_value_alone():
    rows = [("a" * 40, 1, "x"), ("b" * 40, 2, "y")]
    assert by_column(table(rows), table(rows)) == []
    changed = table([rows[0], ("b" * 40, 2, "z")])
    assert by_column(changed, table(rows)) == [f"contributions: {'b' * 40} title: 'z' in the index, 'y' in a rebuild"]
