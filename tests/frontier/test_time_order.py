"""`graph.chronological_order` and `scored.in_time`: rows by (time, log position, sha), nulls first,
exactly as sorting the tuples gives them, on the one-key path (times and log positions that fit one
int64) and on the lexsort (a null time, far from every other, does not); and `Graph.account_names`,
which the views group accounts by."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from git_agora.frontier.graph import Graph, chronological_order
from git_agora.frontier.scored import in_time

NULL_FIRST = -(1 << 63)


def table(rng: np.random.Generator, n: int, *, null_times: bool, column: str) -> pa.Table:
    times = rng.integers(1_700_000_000, 1_700_000_000 + int(rng.integers(1, 50)), n).tolist()
    if rng.random() < 0.5:
        times.sort()  # how an index stores them: nearly always in time order already
    seqs = [int(s) if rng.random() > 0.2 else None for s in rng.integers(0, 5, n)]
    if null_times:
        times = [None if rng.random() < 0.2 else t for t in times]
    shas = [f"{int(x):040x}" for x in rng.integers(0, 1 << 62, n)]
    chunks = max(1, int(rng.integers(1, 4)))
    bounds = np.linspace(0, n, chunks + 1).astype(int).tolist()

    def chunked(values, kind):
        return pa.chunked_array([pa.array(values[a:b], kind) for a, b in zip(bounds, bounds[1:])], kind)

    columns = {column: chunked(times, pa.int64()), "log_seq": chunked(seqs, pa.int64())}
    return pa.table({**columns, "sha": chunked(shas, pa.string())})


def expected(t: pa.Table, rows: list[int], column: str) -> list[int]:
    times, seqs, shas = (t[name].to_pylist() for name in (column, "log_seq", "sha"))

    def key(i: int):
        return (NULL_FIRST if times[i] is None else times[i], -1 if seqs[i] is None else seqs[i], shas[i])

    return sorted(rows, key=key)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("null_times", [False, True])
def test_rows_are_in_the_order_of_their_sorted_keys(seed, null_times):
    rng = np.random.default_rng(seed)
    column = "priority" if seed % 2 else "timestamp"  # a graph's table orders by priority
    t = table(rng, int(rng.integers(0, 80)), null_times=null_times, column=column)
    assert chronological_order(t).tolist() == expected(t, list(range(t.num_rows)), column)
    nodes = rng.permutation(t.num_rows)[: int(rng.integers(0, t.num_rows + 1))]
    assert in_time(t, nodes).tolist() == expected(t, nodes.tolist(), column)


def test_times_too_far_apart_for_one_key_are_ordered_alike():
    t = pa.table(
        {
            "timestamp": pa.array([(1 << 62) + 5, None, -(1 << 62), (1 << 62) + 5, 0], pa.int64()),
            "log_seq": pa.array([1 << 40, 3, None, 0, 2], pa.int64()),
            "sha": pa.array(["d", "c", "b", "a", "e"]),
        }
    )
    assert chronological_order(t).tolist() == [1, 2, 4, 3, 0]


@pytest.mark.parametrize("seed", range(10))
def test_each_account_code_is_named_by_the_account_of_its_nodes(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    accounts = [None if rng.random() < 0.1 else f"account-{int(a)}" for a in rng.integers(0, 6, n)]
    graph = Graph(
        pa.table({"account": pa.array(accounts, pa.string())}),
        pc.dictionary_encode(pc.fill_null(pa.array(accounts, pa.string()), "")).indices.to_numpy().astype(np.int64),
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
    )
    names = graph.account_names
    assert [names[code] for code in graph.account] == [a or "" for a in accounts]
    assert len(names) == len(set(a or "" for a in accounts))
