"""Graph statistics on small graphs, every number worked out by hand."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from frontier_tables import everyone, node, random_table, sha, table, verify

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.stats import HOUR, component_sizes, gap_percentiles, graph_stats

# Results in time order (value, account); A and B end up failed-verified, so they are not scored:
#   R 1.00 alice, [A 0.98 bob], [B 0.90 carol], D 0.95 dave, Q 0.95 frank, Q2 0.95 dave, Q3 0.95 gina,
#   A2 0.98 bob, O 0.70 hana
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
    verify("V2", "carol", "A", "failed", t=23),  # carol's newest verdict on A: A is failed
    verify("V3", "dave", "B", "failed", t=24),
    node("O", "hana", "I", t=25, metric=0.70),  # its parent I is invalid: O stands alone
    node("I", "hana", t=26, valid=False, metric=0.10),
]


def test_small_graph():
    s = graph_stats(table(GRAPH))
    assert (s.nodes, s.accounts) == (13, 8)
    # A-R B-R D-A D-B H-D Q-R Q2-D Q3-H A2-A V1-A V2-A V3-B (O-I dropped: I is invalid)
    assert (s.edges, s.multi_parent_nodes) == (12, 1)
    assert (s.components, s.largest_component_share) == (2, 12 / 13)
    tags = dict(s.tag_counts)
    assert (tags["result"], tags["verification"], tags["lr"], tags["setup"]) == (8, 3, 1, 1)
    assert s.tag_counts[0] == ("result", 8)
    assert (s.verifications, s.verified_targets, s.failed_verifications) == (3, 2, 2)


def test_new_bests_min_and_max():
    s = graph_stats(table(GRAPH), root=everyone(table(GRAPH)))
    # min: 1.00 (R), 0.95 (D), 0.70 (O); A and B are failed-verified
    assert (s.scored_results, s.new_bests, s.new_bests_strict, s.best_value) == (7, 3, 3, 0.70)
    assert (s.best_sha, s.first_value, s.strict_best_value) == (sha("O"), 1.00, 0.70)
    s = graph_stats(table(GRAPH), tolerance=0.06, root=everyone(table(GRAPH)))
    assert (s.new_bests, s.new_bests_strict) == (2, 3)  # D gains only 0.05
    s = graph_stats(table(GRAPH), direction="max", root=everyone(table(GRAPH)))
    assert (s.new_bests, s.best_value, s.best_sha) == (1, 1.00, sha("R"))


def test_equal_scores_between_accounts():
    s = graph_stats(table(GRAPH))
    # 0.95: dave first at 4, frank at 10, gina at 20 -> gaps 6, 16, 10. 0.98: only bob (A is failed).
    assert s.equal_score_pairs == 3
    assert tuple(s.equal_score_gaps) == (6, 10, 16)
    assert s.equal_score_median_gap == 10.0
    assert (s.equal_score_share_1h, s.equal_score_share_6h) == (1.0, 1.0)


def test_equal_score_shares_within_one_and_six_hours():
    rows = [node("setup", "org", tags=("setup",))]
    for i, gap in enumerate([0.5, 1.0, 2.0, 5.0, 7.0]):  # hours between two accounts posting value i
        rows += [
            node(f"x{i}", f"a{i}", "setup", t=10, metric=float(i)),
            node(f"y{i}", f"b{i}", "setup", t=10 + int(gap * HOUR), metric=float(i)),
        ]
    rows += [
        node("same", "a0", "setup", t=20, metric=0.0),  # the same account again: no new pair
        node("wip", "c", "setup", t=30, metric=1.0, tags=("wip",)),  # not a scored result
        node("refuted", "d", "setup", t=40, metric=2.0),
        verify("v", "e", "refuted", "failed", t=50),  # failed-verified: not a scored result
    ]
    s = graph_stats(table(rows), root=everyone(table(rows)))
    assert s.equal_score_pairs == 5
    assert tuple(s.equal_score_gaps) == tuple(int(h * HOUR) for h in (0.5, 1.0, 2.0, 5.0, 7.0))
    assert s.equal_score_share_1h == pytest.approx(2 / 5)  # 30 min and exactly one hour
    assert s.equal_score_share_6h == pytest.approx(4 / 5)


def test_components_count():
    rows = [
        node("R", "alice", tags=("setup",)),
        node("A", "bob", "R", t=1),
        node("B", "carol", "A", t=2),
        node("X", "dave", t=3),  # a second root
        node("Y", "erin", "X", t=4),
        node("L", "frank", "gone", t=5),  # its parent is not a contribution: alone
        node("M", "gina", "B", "Y", t=6),  # joins R's and X's components
        node("N", "hana", t=7),
    ]
    s = graph_stats(table(rows))
    assert (s.components, s.largest_component_share) == (3, 6 / 8)  # {R A B X Y M}, {L}, {N}
    s = graph_stats(table(rows[:-2]))
    assert (s.components, s.largest_component_share) == (3, 3 / 6)  # {R A B}, {X Y}, {L}


# Strict improvements vs noise-aware ones (min, tolerance 0.01), values in time order:
#   1.00 first | 0.995 strict only | 0.90 both | 0.899 strict only | 0.80 both | 0.85 none | 0.60 both
STEPS = [1.00, 0.995, 0.90, 0.899, 0.80, 0.85, 0.60]


def steps_table(values):
    rows = [node("setup", "org", tags=("setup",))]
    return table(rows + [node(f"r{i}", f"a{i}", "setup", t=i + 1, metric=v) for i, v in enumerate(values)])


def test_strict_and_noise_aware_improvements():
    s = graph_stats(steps_table(STEPS), tolerance=0.01)
    assert (s.scored_results, s.new_bests_strict, s.new_bests) == (7, 6, 4)
    # strict: decreases 0.005, 0.095, 0.001, 0.099, 0.2 of a total 0.40
    strict = dict(s.improvement_share_strict)
    assert list(strict) == [1, 2, 4]
    assert [strict[k] for k in (1, 2, 4)] == pytest.approx([0.005 / 0.4, 0.1 / 0.4, 0.2 / 0.4])
    # noise-aware: 0.10, 0.10, 0.20 of a total 0.40
    noise_aware = dict(s.improvement_share_noise_aware)
    assert list(noise_aware) == [1, 2]
    assert [noise_aware[k] for k in (1, 2)] == pytest.approx([0.25, 0.5])
    # by scored results: the best of the first 5 is 0.80
    assert dict(s.improvement_share)[5] == pytest.approx(0.5)
    data = json.loads(json.dumps(s.to_dict()))
    assert data["improvement_share_strict"]["4"] == pytest.approx(0.5) and data["new_bests_strict"] == 6


def test_gain_within_tolerance_moves_only_the_strict_best():
    s = graph_stats(steps_table([1.0, 0.5, 0.499]), tolerance=0.01)
    assert (s.best_value, s.best_sha, s.strict_best_value) == (0.5, sha("r1"), 0.499)
    assert (s.new_bests, s.new_bests_strict) == (2, 3)
    assert dict(s.improvement_share_noise_aware) == {1: 1.0}
    assert dict(s.improvement_share_strict) == pytest.approx({1: 0.5 / 0.501, 2: 1.0})


def test_improvement_share_by_scored_results():
    s = graph_stats(table(GRAPH), root=everyone(table(GRAPH)))
    # min, first 1.00, best 0.70: total 0.30. Best of the first 1 / 5 scored results: 1.00 / 0.95.
    shares = dict(s.improvement_share)
    assert set(shares) == {1, 5}
    assert shares[1] == 0.0
    assert shares[5] == pytest.approx(0.05 / 0.30)


# The best result C (0.70) and its ancestry: R <- A <- B (bob twice) ; R <- X (insight) ; R <- D ; C on B, X, D.
# A confirmed by frank; B confirmed by erin and failed by gina (contested: still scored, reproduced);
# bob's confirmation of his own B is ignored; D failed by ian (not scored); C itself confirmed by jo.
REPRO = [
    node("R", "alice", t=0, tags=("setup",), metric=1.0),
    node("A", "bob", "R", t=1, metric=0.9),
    node("B", "bob", "A", t=2, metric=0.8),
    node("X", "erin", "R", t=3, tags=("insight",)),
    node("D", "hana", "R", t=4, metric=0.75),
    node("C", "dave", "B", "X", "D", t=5, metric=0.7),
    verify("VA", "frank", "A", "confirmed", t=6),
    verify("VB1", "erin", "B", "confirmed", t=7),
    verify("VB2", "gina", "B", "failed", t=8),
    verify("VB3", "bob", "B", "confirmed", t=9),
    verify("VD", "ian", "D", "failed", t=10),
    verify("VC", "jo", "C", "confirmed", t=11),
]


def test_reproduced_ancestors_of_the_best():
    s = graph_stats(table(REPRO), root=everyone(table(REPRO)))
    assert (s.best_sha, s.best_value) == (sha("C"), 0.7)
    assert (s.best_ancestry_size, s.best_ancestry_accounts) == (6, 5)  # R A B X D C; alice bob erin hana dave
    assert (s.best_ancestry_edges, s.best_ancestry_cross_account_edges) == (7, 6)  # B-A is bob on bob
    assert (s.best_scored_ancestors, s.best_reproduced_scored_ancestors) == (3, 2)  # R A B; A and B


def test_stats_and_analyze_agree_on_results_and_best():
    cases = [
        (table(GRAPH), 0.0),
        (table(GRAPH), 0.05),
        (table(REPRO), 0.0),
        (steps_table(STEPS), 0.01),
        (random_table(500, seed=9), 0.0),
        (random_table(500, seed=9), 0.02),
    ]
    for contributions, tolerance in cases:
        for direction in ("min", "max"):
            stats = graph_stats(contributions, direction=direction, tolerance=tolerance)
            summary = analyze(contributions, config=AnalyzeConfig(direction=direction, tolerance=tolerance)).summary
            assert stats.scored_results == summary.results
            assert (stats.best_sha, stats.best_value) == (summary.best.sha, summary.best.metric)


def test_to_dict_is_json_and_empty_graph():
    data = json.loads(json.dumps(graph_stats(table(GRAPH)).to_dict()))
    assert data["tag_counts"]["result"] == 8 and data["improvement_share"]["1"] == 0.0
    gaps = data["equal_score_gap_percentiles"]  # gaps 6, 10, 16: nearest rank at each percentile
    assert len(gaps) == 101 and (gaps[0], gaps[33], gaps[34], gaps[50], gaps[67], gaps[100]) == (6, 6, 10, 10, 16, 16)
    assert "equal_score_gaps" not in data
    empty = graph_stats(table([]))
    assert (empty.nodes, empty.components, empty.largest_component_share, empty.best_value) == (0, 0, 0.0, None)
    assert empty.improvement_share == () and empty.equal_score_median_gap is None
    assert empty.best_sha is None and empty.best_scored_ancestors is None and empty.equal_score_share_1h is None
    assert json.loads(json.dumps(empty.to_dict()))["equal_score_gap_percentiles"] == []


def test_gap_percentiles_match_numpy_nearest_rank():
    gaps = np.sort(np.random.default_rng(3).integers(0, 10_000, 977))
    expected = np.percentile(gaps, np.arange(101), method="inverted_cdf")
    assert gap_percentiles(gaps) == [int(g) for g in expected]


def test_component_sizes_match_a_plain_union_find():
    rng = np.random.default_rng(11)
    for n, m in ((1, 0), (50, 0), (200, 120), (2_000, 1_900), (3_000, 6_000)):
        child, parent = rng.integers(0, n, m), rng.integers(0, n, m)
        graph = SimpleNamespace(n=n, child=child, parent=parent)
        assert sorted(component_sizes(graph).tolist()) == sorted(_union_find_sizes(n, zip(child, parent)))


def _union_find_sizes(n, edges):
    root = list(range(n))

    def find(x):
        while root[x] != x:
            x = root[x]
        return x

    for a, b in edges:
        root[find(a)] = find(b)
    return list(Counter(find(x) for x in range(n)).values())


def test_no_improvement_gives_null_shares():
    rows = [node("R", "alice", tags=("setup",), metric=1.0), node("A", "bob", "R", t=1, metric=1.0)]
    s = graph_stats(table(rows))
    assert s.improvement_share == ((1, None),)
    assert s.improvement_share_strict == () and s.improvement_share_noise_aware == ()


def test_large_random_graph_runs():
    s = graph_stats(random_table(20_000, seed=4))
    assert s.nodes == 20_000 and s.largest_component_share == 1.0 and s.components == 1
    assert s.scored_results > 0 and s.new_bests >= 1 and s.new_bests_strict >= s.new_bests
    assert len(s.improvement_share) == 7
    assert 0 <= s.best_reproduced_scored_ancestors <= s.best_scored_ancestors < s.best_ancestry_size
