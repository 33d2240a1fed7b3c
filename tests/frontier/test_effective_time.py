"""Effective time: a contribution never counts as published before (or with) what it builds on (issue 26)."""

from __future__ import annotations

import numpy as np
from frontier_tables import node, random_table, sha, table
from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.frame import build_frame
from git_agora.frontier.graph import build_graph, effective_times, topological_order
from git_agora.frontier.views import new_bests


def by_walk(graph) -> list[int]:
    """max(own time, latest parent's effective time + 1), node by node in topological order."""
    times = graph.table["timestamp"].to_pylist()
    parents: dict[int, list[int]] = {}
    for c, p in zip(graph.child.tolist(), graph.parent.tolist()):
        parents.setdefault(c, []).append(p)
    effective = list(times)
    for v in topological_order(graph).tolist():
        effective[v] = max([times[v]] + [effective[p] + 1 for p in parents.get(v, [])])
    return effective


def test_a_backdated_copy_built_on_the_best_does_not_take_its_credit():
    rows = [
        node("S", "founder", t=0, tags=("setup",)),
        node("P", "bob", "S", t=150, metric=1.0),
        node("H", "carol", "P", t=200, metric=0.8),
        node("C", "mallory", "H", t=10, metric=0.8),  # a copy of H, dated long before its own parent
    ]
    contributions = table(rows)
    frame = build_frame(contributions, tolerance=0.01)
    at = {r.name: i for i, r in enumerate(rows)}
    assert frame.timestamp[at["C"]] == 201  # one second after H, whatever it claims
    assert new_bests(frame)[at["H"]] and not new_bests(frame)[at["C"]]
    best = analyze(contributions, config=AnalyzeConfig(tolerance=0.01)).summary.best
    assert best.sha == sha("H") and best.priority == "claimed time, unwitnessed" and best.tied_at_time == ()


def test_a_tie_on_effective_time_is_shown_with_how_it_was_broken():
    rows = [
        node("S", "founder", t=0, tags=("setup",)),
        node("A", "bob", "S", t=100, metric=0.5),
        node("B", "carol", "S", t=100, metric=0.5),
    ]
    result = analyze(table(rows), config=AnalyzeConfig(tolerance=0.01))
    best = result.summary.best
    other = sha("B") if best.sha == sha("A") else sha("A")
    assert best.tied_at_time == (other,)
    assert any("ties on priority" in n and "log position, then by sha" in n for n in result.summary.notes)


def test_clocks_that_agree_with_the_graph_are_the_effective_times():
    graph = build_graph(random_table(300, seed=2))  # times follow creation order: every parent earlier
    assert np.array_equal(effective_times(graph), graph.table["timestamp"].to_numpy())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=40))
def test_effective_times_equal_a_walk_in_topological_order(specs):
    rows = [node("n0", "a", t=0, tags=("setup",))]
    for i, (t, first, second) in enumerate(specs, start=1):
        parents = dict.fromkeys([f"n{first % i}", f"n{second % i}"])
        rows.append(node(f"n{i}", "ab"[i % 2], *parents, t=t))
    graph = build_graph(table(rows))
    assert effective_times(graph).tolist() == by_walk(graph)
