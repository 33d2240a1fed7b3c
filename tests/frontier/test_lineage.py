"""Lineage on a small graph whose milestone paths are worked out by hand."""

from __future__ import annotations

import json

import pytest
from frontier_tables import everyone, node, random_table, sha, table, verify

from git_agora.frontier.lineage import Milestone, lineage

# R 1.00 (alice) <- A 0.98 (bob) <- C 1.02 (bob) <- D 0.95 (dave, also on B) <- H (erin) <- T 1.03 (alice)
# R <- B 0.90 (carol);  R <- Z 0.50 (frank, not an ancestor of T)
# VB: bob confirms B (reproduced); VA: alice rates A partial (not a confirmation).
GRAPH = [
    node("R", "alice", t=0, tags=("setup",), metric=1.00),
    node("A", "bob", "R", t=1, metric=0.98),
    node("B", "carol", "R", t=2, metric=0.90),
    node("Z", "frank", "R", t=3, metric=0.50),
    node("C", "bob", "A", t=4, metric=1.02),
    node("D", "dave", "C", "B", t=5, metric=0.95),
    node("H", "erin", "D", t=6, tags=("hypothesis",)),
    node("T", "alice", "H", t=7, metric=1.03),
    verify("VB", "bob", "B", "confirmed", t=8),
    verify("VA", "alice", "A", "partial", t=9),
]
CONTRIBUTIONS = table(GRAPH)
ROOT = everyone(CONTRIBUTIONS)  # every verifier has standing


def names(shas, rows=GRAPH) -> list[str]:
    lookup = {sha(row.name): row.name for row in rows}
    return [lookup[s] for s in shas]


def test_ancestry_accounts_and_edges():
    result = lineage(CONTRIBUTIONS, sha("T"), root=ROOT)
    assert names(result.ancestry) == ["R", "A", "B", "C", "D", "H", "T"]
    assert result.size == 7
    assert result.accounts == ("alice", "bob", "carol", "dave", "erin")
    # A-R, B-R, C-A (bob-bob: same account), D-C, D-B, H-D, T-H
    assert (result.edges, result.cross_account_edges) == (7, 6)
    assert names(result.reproduced) == ["B"]


@pytest.mark.parametrize(
    ("direction", "tolerance", "expected"),
    [
        ("min", 0.0, ["R", "A", "B"]),  # 1.00, 0.98, 0.90; C, D and T are worse than 0.90
        ("min", 0.05, ["R", "B"]),  # A gains only 0.02
        ("max", 0.0, ["R", "C", "T"]),  # 1.00, 1.02, 1.03
        ("max", 0.015, ["R", "C"]),  # T gains only 0.01 over C
    ],
)
def test_milestones(direction, tolerance, expected):
    result = lineage(CONTRIBUTIONS, sha("T"), direction=direction, tolerance=tolerance)
    assert names(m.sha for m in result.milestones) == expected


def test_milestone_values_and_to_dict_is_json():
    result = lineage(CONTRIBUTIONS, sha("D"))
    assert result.milestones[-1] == Milestone(sha("B"), "carol", 2, 0.90)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["size"] == 5 and data["sha"] == sha("D")
    assert data["milestones"][0] == {"sha": sha("R"), "account": "alice", "timestamp": 0, "value": 1.0}


def test_root_and_unknown_or_invalid_sha():
    assert lineage(CONTRIBUTIONS, sha("R")).ancestry == (sha("R"),)
    with pytest.raises(KeyError):
        lineage(CONTRIBUTIONS, "f" * 40)
    bad = table([*GRAPH, node("X", "gina", "T", valid=False)])
    with pytest.raises(KeyError):
        lineage(bad, sha("X"))
    with pytest.raises(ValueError):
        lineage(CONTRIBUTIONS, sha("T"), direction="up")


def test_large_random_graph_runs():
    contributions = random_table(20_000, seed=2)
    last = contributions["sha"][-1].as_py()
    result = lineage(contributions, last)
    assert result.ancestry[0] == contributions["sha"][0].as_py()  # the setup root
    assert result.ancestry[-1] == last
    assert result.milestones and result.milestones[0].sha == result.ancestry[0]


def test_scored_ancestors_and_failed_results():
    # F (0.85) is failed-verified: not scored, so neither a scored ancestor nor a milestone of G.
    rows = [
        *GRAPH,
        node("F", "gina", "B", t=10, metric=0.85),
        verify("VF", "hana", "F", "failed", t=11),
        node("G", "ivan", "F", "T", t=12, metric=0.88),
    ]
    contributions = table(rows)
    result = lineage(contributions, sha("G"), root=everyone(contributions))
    assert names(result.scored_ancestors, rows) == ["R", "A", "B", "C", "D", "T"]  # not H (hypothesis), F or G
    assert names(result.reproduced_scored_ancestors, rows) == ["B"]
    assert names((m.sha for m in result.milestones), rows) == ["R", "A", "B", "G"]
    data = json.loads(json.dumps(result.to_dict()))
    assert len(data["scored_ancestors"]) == 6 and data["reproduced_scored_ancestors"] == [sha("B")]
