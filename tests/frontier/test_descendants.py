"""The batch follow-on count in blocks equals a plain walk from every node, whatever the block size."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from frontier_tables import descendants_by_walk, node, random_table, table, verify
from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.frontier import descendants
from git_agora.frontier.descendants import MAX_BLOCK, MIN_BLOCK, block_size, count_descendants, set_width
from git_agora.frontier.evidence import current_verdicts, follow_on_work
from git_agora.frontier.graph import build_graph, topological_order


@st.composite
def dags(draw):
    """Rows of a random history: merges (up to 3 parents), four accounts, wip and endorsements,
    verifications (some failed, some replaced), invalid rows, parents that are not rows, clocks that
    disagree with the edges, and rows listed in any order."""
    size = draw(st.integers(1, 40))
    rows = [node("n0", "ann", t=draw(st.integers(0, 50)), tags=("setup",))]
    for i in range(1, size):
        who = draw(st.sampled_from(("ann", "bob", "cyd", "dee")))
        t = draw(st.integers(0, 50))
        valid = draw(st.integers(0, 5)) > 0
        if draw(st.integers(0, 4)) == 0:
            target = f"n{draw(st.integers(0, i - 1))}"
            verdict = draw(st.sampled_from(["confirmed", "partial", "failed"]))
            rows.append(verify(f"n{i}", who, target, verdict, t=t, valid=valid))
            continue
        parents = [f"n{p}" for p in draw(st.lists(st.integers(0, i - 1), min_size=0, max_size=3, unique=True))]
        if draw(st.booleans()):
            parents.append("not-a-row")
        kind = draw(st.sampled_from(["result", "result", "insight", "wip", "endorsed"]))
        rows.append(node(f"n{i}", who, *parents, t=t, tags=(kind,), valid=valid))
    return draw(st.permutations(rows))


@settings(max_examples=200, deadline=None)
@given(dags(), st.sampled_from([None, 1, 2, 3, 7]), st.data())
def test_blocks_count_what_a_walk_from_each_node_counts(rows, block, data):
    graph = build_graph(table(rows))
    qualifying = follow_on_work(graph, current_verdicts(graph))
    assert count_descendants(graph, qualifying, block).tolist() == descendants_by_walk(graph, qualifying)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=graph.n, max_size=graph.n)), dtype=bool)
    assert count_descendants(graph, mask, block).tolist() == descendants_by_walk(graph, mask)


@pytest.mark.parametrize("block", [None, 64, 1000])
def test_a_larger_random_graph_with_many_merges(block):
    graph = build_graph(random_table(1500, seed=7, merge_share=0.4))
    qualifying = follow_on_work(graph, current_verdicts(graph))
    assert count_descendants(graph, qualifying, block).tolist() == descendants_by_walk(graph, qualifying)


def test_no_nodes_no_edges_no_qualifying():
    assert count_descendants(build_graph(table([])), np.zeros(0, bool)).tolist() == []
    graph = build_graph(table([node("R", "ann"), node("A", "bob", "R")]))
    assert count_descendants(graph, np.zeros(2, bool)).tolist() == [0, 0]
    assert count_descendants(graph, np.ones(2, bool)).tolist() == [1, 0]


@settings(max_examples=100, deadline=None)
@given(dags())
def test_set_width_is_the_most_sets_a_sweep_holds(rows):
    # the memory bound: at a point r, the nodes at or after r with a parent before r (their sets are
    # pending there), and the nodes before r with two children at or after r (they hold a merged set)
    graph = build_graph(table(rows))
    rank = np.empty(graph.n, np.int64)
    rank[topological_order(graph)] = np.arange(graph.n)
    child, parent = rank[graph.child].tolist(), rank[graph.parent].tolist()

    def held(r: int) -> int:
        pushers = {c for c, p in zip(child, parent) if c >= r > p}
        later = [p for c, p in zip(child, parent) if c >= r > p]
        return len(pushers) + sum(later.count(p) >= 2 for p in set(later))

    assert set_width(rank[graph.child], rank[graph.parent], graph.n) == max(map(held, range(graph.n + 1)), default=0)


@pytest.mark.parametrize("shape", ["chain", "branches", "ladder"])
def test_lines_of_history_are_walked_as_chains(shape):
    # one long chain, 7 chains from one root, and a chain whose every node is also a parent of the last
    n = 1200
    rows = [node("n0", "ann")]
    for i in range(1, n):
        parents = [f"n{max(i - (7 if shape == 'branches' else 1), 0)}"]
        rows.append(node(f"n{i}", "bob", *parents, t=i))
    if shape == "ladder":
        rows[-1] = node(f"n{n - 1}", "bob", *(f"n{i}" for i in range(n - 1)), t=n)
    graph = build_graph(table(rows))
    qualifying = np.arange(graph.n) % 3 != 1
    for block in (None, 50, 1):
        assert count_descendants(graph, qualifying, block).tolist() == descendants_by_walk(graph, qualifying)


def test_block_size_keeps_the_pending_sets_within_the_budget():
    assert block_size(0) == block_size(1) == MAX_BLOCK
    assert block_size(10**9) == MIN_BLOCK
    width = 100_000
    assert MIN_BLOCK < block_size(width) < MAX_BLOCK and block_size(width) * width <= 8 * 32 * 2**20


def test_memory_stays_within_flat_arrays_and_the_set_budget(monkeypatch):
    # A random tree (each node on a uniformly drawn earlier one): wide descendant sets everywhere. With
    # 64 KiB for the sets, what is left is flat arrays and one dict entry per pending node, under 200
    # bytes a node; the earlier design (a set per node, as wide as the rest of the graph) took 650.
    monkeypatch.setattr(descendants, "MIN_BLOCK", 64)
    monkeypatch.setattr(descendants, "SET_BUDGET_BITS", 8 * 64 * 1024)
    n = 20_000
    parent = (np.random.default_rng(1).random(n) * np.arange(n)).astype(int)
    rows = [node("n0", "ann")] + [node(f"n{i}", "bob", f"n{parent[i]}", t=i) for i in range(1, n)]
    graph = build_graph(table(rows))
    qualifying = np.ones(n, dtype=bool)
    tracemalloc.start()
    try:
        counts = count_descendants(graph, qualifying)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * n + 64 * 1024
    subtree = np.ones(n, np.int64)  # a tree: n(v) is its subtree's size, less itself
    for i in range(n - 1, 0, -1):
        subtree[parent[i]] += subtree[i]
    assert counts.tolist() == (subtree - 1).tolist()
