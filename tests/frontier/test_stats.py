"""Graph statistics on a small graph, every number worked out by hand."""

from __future__ import annotations

import json

from frontier_tables import node, random_table, table, verify

from git_agora.frontier.stats import graph_stats

# Scored results in time order (value, account):
#   R 1.00 alice, A 0.98 bob, B 0.90 carol, D 0.95 dave, Q 0.95 frank, Q2 0.95 dave, Q3 0.95 gina, A2 0.98 bob
GRAPH = [
    node("R", "alice", t=0, tags=("setup",), metric=1.00),
    node("A", "bob", "R", t=1, metric=0.98),
    node("B", "carol", "R", t=2, metric=0.90, tags=("result", "lr")),
    node("D", "dave", "A", "B", t=4, metric=0.95),
    node("H", "erin", "D", t=5, tags=("hypothesis",)),
    node("Q", "frank", "R", t=10, metric=0.95),
    node("Q2", "dave", "D", t=12, metric=0.95),
    node("Q3", "gina", "H", t=20, metric=0.95),
    node("A2", "bob", "A", t=21, metric=0.98),  # bob repeats his own score: not a pair
    verify("V1", "carol", "A", "confirmed", t=22),
    verify("V2", "carol", "A", "failed", t=23),
    verify("V3", "dave", "B", "failed", t=24),
    node("O", "hana", "I", t=25, metric=0.70),  # its parent I is invalid: O stands alone
    node("I", "hana", t=26, valid=False, metric=0.10),
]


def test_small_graph():
    s = graph_stats(table(GRAPH))
    assert s.nodes == 13
    # A-R B-R D-A D-B H-D Q-R Q2-D Q3-H A2-A V1-A V2-A V3-B (O-I dropped: I is invalid)
    assert (s.edges, s.multi_parent_nodes) == (12, 1)
    assert s.largest_component_share == 12 / 13
    tags = dict(s.tag_counts)
    assert (tags["result"], tags["verification"], tags["lr"], tags["setup"]) == (8, 3, 1, 1)
    assert s.tag_counts[0] == ("result", 8)
    assert (s.verifications, s.verified_targets, s.failed_verifications) == (3, 2, 2)


def test_new_bests_min_and_max():
    s = graph_stats(table(GRAPH))
    # min: 1.00, 0.98, 0.90, then 0.70 (O)
    assert (s.scored_results, s.new_bests, s.best_value) == (9, 4, 0.70)
    s = graph_stats(table(GRAPH), tolerance=0.05)
    assert s.new_bests == 3  # 1.00, 0.90 (gain 0.10), 0.70; A's 0.02 is noise
    s = graph_stats(table(GRAPH), direction="max")
    assert (s.new_bests, s.best_value) == (1, 1.00)


def test_equal_scores_between_accounts():
    s = graph_stats(table(GRAPH))
    # 0.95: dave first at 4, frank at 10, gina at 20 -> gaps 6, 16, 10. 0.98 is bob twice: no pair.
    assert s.equal_score_pairs == 3
    assert s.equal_score_gaps == (6, 10, 16)
    assert s.equal_score_median_gap == 10.0


def test_improvement_share():
    s = graph_stats(table(GRAPH))
    # min, first 1.00, best 0.70: total 0.30. Best of the first 1 / 5 results: 1.00 / 0.90.
    shares = dict(s.improvement_share)
    assert set(shares) == {1, 5}
    assert shares[1] == 0.0
    assert abs(shares[5] - 0.10 / 0.30) < 1e-12


def test_to_dict_is_json_and_empty_graph():
    data = json.loads(json.dumps(graph_stats(table(GRAPH)).to_dict()))
    assert data["tag_counts"]["result"] == 8 and data["improvement_share"]["1"] == 0.0
    empty = graph_stats(table([]))
    assert (empty.nodes, empty.largest_component_share, empty.best_value) == (0, 0.0, None)
    assert empty.improvement_share == () and empty.equal_score_median_gap is None
    json.dumps(empty.to_dict())


def test_no_improvement_gives_null_shares():
    rows = [node("R", "alice", tags=("setup",), metric=1.0), node("A", "bob", "R", t=1, metric=1.0)]
    assert graph_stats(table(rows)).improvement_share == ((1, None),)


def test_large_random_graph_runs():
    s = graph_stats(random_table(20_000, seed=4))
    assert s.nodes == 20_000 and s.largest_component_share == 1.0
    assert s.scored_results > 0 and s.new_bests >= 1
    assert len(s.improvement_share) == 6
