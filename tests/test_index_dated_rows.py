"""Reading a few rows by their dates (`segments.read_parquet(dated=...)`, `store.read_rows(timestamps=)`):
only the row groups whose timestamp statistics may hold one of the dates are read, and the rows kept
are exactly those a read of every row group keeps; a file without statistics is read whole."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from git_agora.index import segments


def write(path, stats: bool = True):
    stamps = [10, 11, 12, 20, 21, 22, 30, 31, 32, 40]  # row groups of 3: [10-12] [20-22] [30-32] [40]
    table = pa.table({"sha": [f"s{t}" for t in stamps], "timestamp": pa.array(stamps, pa.int64())})
    pq.write_table(table, path, row_group_size=3, write_statistics=stats)
    return table


@pytest.mark.parametrize("dated", [[21], [12, 40], [5], [35], [10, 22, 31, 40], []])
def test_only_the_row_groups_that_may_hold_a_date_are_read(tmp_path, dated):
    path = tmp_path / "s.parquet"
    write(path)
    read_groups = []
    original = segments._row_groups

    def spying(f, groups, columns, keep=None):
        read_groups.extend(groups)
        return original(f, groups, columns, keep)

    wanted = pa.array([f"s{t}" for t in dated], pa.string())

    def keep(table):
        return table.filter(pc.is_in(table["sha"], value_set=wanted))

    segments._row_groups = spying
    try:
        part = segments.read_parquet(path, keep=keep, dated=sorted(dated))
    finally:
        segments._row_groups = original
    whole = segments.read_parquet(path, keep=keep)
    assert part.to_pylist() == whole.to_pylist()
    expected = sorted({(t - 10) // 10 for t in dated if t in (10, 11, 12, 20, 21, 22, 30, 31, 32, 40)})
    assert read_groups == expected


def test_a_file_without_statistics_is_read_whole(tmp_path):
    path = tmp_path / "s.parquet"
    table = write(path, stats=False)
    assert segments.read_parquet(path, dated=[21]).to_pylist() == table.to_pylist()
