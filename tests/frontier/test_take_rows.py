"""`graph.take_rows`: rows taken chunk by chunk are exactly Arrow's take, in the order asked, repeats and
all; a row out of range is an error, as it is for Arrow."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from git_agora.frontier.graph import take_rows


def chunked(rng: np.random.Generator, n: int) -> pa.ChunkedArray:
    cuts = np.sort(rng.integers(0, n + 1, rng.integers(0, 6)))
    values = [f"row {i}" if i % 7 else None for i in range(n)]
    bounds = [0, *cuts.tolist(), n]
    return pa.chunked_array([pa.array(values[a:b], pa.string()) for a, b in zip(bounds, bounds[1:])], pa.string())


@pytest.mark.parametrize("seed", range(20))
def test_the_rows_are_arrows_take_in_the_order_asked(seed):
    rng = np.random.default_rng(seed)
    column = chunked(rng, int(rng.integers(1, 60)))
    nodes = rng.integers(0, len(column), int(rng.integers(0, 40)))  # unsorted, with repeats
    assert take_rows(column, nodes).to_pylist() == column.take(pa.array(nodes, pa.int64())).to_pylist()
    table = pa.table({"s": column, "n": pa.chunked_array([pa.array(range(len(column)))])})
    assert take_rows(table, nodes).to_pylist() == table.take(pa.array(nodes, pa.int64())).to_pylist()
    assert take_rows(table, nodes).schema == table.schema


def test_a_row_out_of_range_is_an_error():
    column = pa.chunked_array([pa.array(["a", "b"]), pa.array(["c"])])
    for bad in ([3], [-1], [0, 5]):
        with pytest.raises(IndexError):
            take_rows(column, np.array(bad))
    assert take_rows(column, np.array([], np.int64)).to_pylist() == []
