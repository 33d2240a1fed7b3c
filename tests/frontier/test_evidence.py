"""Evidence on hand-built graphs; every expected number is worked out in the comments."""

from __future__ import annotations

import pyarrow as pa
import pytest
from frontier_tables import descendants_by_walk, everyone, node, random_table, sha, table, verify

from git_agora.frontier.evidence import EVIDENCE, count_descendants, evidence
from git_agora.frontier.graph import build_graph


def by_name(result: pa.Table) -> dict[str, dict]:
    rows = result.to_pylist()
    names = {sha(name): name for name in "R A B C D E W X Y V1 V2 V3 V4 V5 Q P1 P2 P3 P4 S".split()}
    return {names.get(row["sha"], row["sha"]): row for row in rows}


def evidence_of(rows, **kw) -> pa.Table:
    """evidence() of the rows, every verifier with standing."""
    contributions = table(rows)
    return evidence(contributions, root=everyone(contributions), **kw)


# R (alice, setup)
# +-- A (bob)   <- C (carol, insight), E (dave, endorsed), W (erin, wip)
# |                V1 carol confirmed t7, V2 carol failed t8 (replaces V1), V5 bob self-verification
# +-- B (alice) <- V3 dave partial, V4 erin confirmed
# D (carol) has parents B and W;  X (bob, invalid) builds on D;  Y (frank, invalid) fails R.
GRAPH = [
    node("R", "alice", t=0, tags=("setup",)),
    node("A", "bob", "R", t=1),
    node("B", "alice", "R", t=2),
    node("C", "carol", "A", t=3, tags=("insight",)),
    node("E", "dave", "A", t=4, tags=("endorsed",)),
    node("W", "erin", "A", t=5, tags=("wip",)),
    node("D", "carol", "B", "W", t=6),
    verify("V1", "carol", "A", "confirmed", t=7),
    verify("V2", "carol", "A", "failed", t=8),
    verify("V3", "dave", "B", "partial", t=9),
    verify("V4", "erin", "B", "confirmed", t=10),
    verify("V5", "bob", "A", "confirmed", t=11),  # self-verification slipped through: ignored
    node("X", "bob", "D", t=12, valid=False),
    verify("Y", "frank", "R", "failed", t=13, valid=False),
]


@pytest.fixture(scope="module")
def result() -> dict[str, dict]:
    return by_name(evidence_of(GRAPH))


def test_schema_and_rows_are_the_valid_contributions():
    out = evidence_of(GRAPH)
    assert out.schema == EVIDENCE
    assert out["sha"].to_pylist() == [sha(r.name) for r in GRAPH if r.valid]


def test_self_citation_adds_nothing(result):
    # R: A from bob +5; B is alice's own follow-up: 0.
    assert result["R"]["score"] == 5.0
    assert (result["R"]["children"], result["R"]["cross_children"]) == (2, 1)


def test_replaced_verdict_endorsement_wip_and_self_verification(result):
    # A: C insight +5, E endorsed 0, W wip 0, V1 replaced by V2 -> 0, V2 failed -20, V5 (bob on bob) 0.
    assert result["A"]["score"] == 5.0 + 0 + 0 + 0 - 20 + 0
    assert (result["A"]["children"], result["A"]["cross_children"]) == (6, 5)
    assert result["A"]["status"] == "failed"
    assert (result["A"]["confirmations"], result["A"]["failures"]) == (0, 1)


def test_partial_and_confirmed_from_two_verifiers_is_contested(result):
    # B: D from carol +5, V3 partial +10, V4 confirmed +20.
    assert result["B"]["score"] == 35.0
    assert result["B"]["status"] == "contested"
    assert (result["B"]["confirmations"], result["B"]["failures"]) == (1, 0)


def test_wip_passes_score_from_its_own_children(result):
    assert result["W"]["score"] == 5.0  # D (carol) on W (erin)
    assert result["E"]["score"] == 0.0


def test_invalid_rows_are_excluded(result):
    assert "X" not in result and "Y" not in result
    assert result["D"]["children"] == 0 and result["D"]["score"] == 0.0
    assert result["R"]["status"] == "unverified"  # Y's failed verdict is invalid
    assert result["R"]["failures"] == 0


def test_descendants_count_qualifying_work_once(result):
    # Qualifying: A B C D V3 V4. Not: E (endorsed), W (wip), V1 (replaced), V2 (failed), V5 (ignored).
    # D is reached from R twice (via B and via A-W) but counts once.
    expected = {"R": 6, "A": 2, "B": 3, "C": 0, "D": 0, "E": 0, "W": 1, "V1": 0, "V2": 0}
    assert {name: result[name]["descendants"] for name in expected} == expected


def test_custom_tag_weights():
    weights = {"insight": 7.0, "result": 5.0, "setup": 5.0}
    out = by_name(evidence_of(GRAPH, weights=weights))
    assert out["A"]["score"] == 7.0 - 20.0


def test_newest_verdict_by_time_then_log_seq_then_sha():
    base = [node("R", "alice", t=0, tags=("setup",)), node("A", "bob", "R", t=1)]
    # Same timestamp: the larger log_seq wins, whatever the row order.
    rows = base + [
        verify("P1", "carol", "A", "confirmed", t=5, log_seq=9),
        verify("P2", "carol", "A", "failed", t=5, log_seq=3),
    ]
    out = by_name(evidence_of(rows))
    assert out["A"]["status"] == "confirmed" and out["A"]["score"] == 20.0
    assert out["P2"]["descendants"] == 0 and out["R"]["descendants"] == 2  # A and P1; P2 is replaced
    # Later timestamp wins over a larger log_seq.
    rows = base + [
        verify("P1", "carol", "A", "confirmed", t=5, log_seq=9),
        verify("P2", "carol", "A", "failed", t=6, log_seq=3),
    ]
    assert by_name(evidence_of(rows))["A"]["score"] == -20.0
    # Full tie: the larger sha wins (sha("P2") > sha("P1")).
    rows = base + [
        verify("P2", "carol", "A", "partial", t=5, log_seq=1),
        verify("P1", "carol", "A", "failed", t=5, log_seq=1),
    ]
    out = by_name(evidence_of(rows))
    assert out["A"]["status"] == "partial" and out["A"]["score"] == 10.0


def test_verdicts_of_different_verifiers_all_count():
    rows = [
        node("R", "alice", t=0, tags=("setup",)),
        node("A", "bob", "R", t=1),
        verify("P1", "carol", "A", "confirmed", t=2),
        verify("P2", "dave", "A", "confirmed", t=3),
        verify("P3", "erin", "A", "failed", t=4),
        verify("P4", "erin", "A", "confirmed", t=5),  # erin changes her mind
    ]
    out = by_name(evidence_of(rows))
    assert out["A"]["score"] == 20 + 20 + 0 + 20
    assert (out["A"]["status"], out["A"]["confirmations"], out["A"]["failures"]) == ("confirmed", 3, 0)
    assert out["A"]["descendants"] == 3  # P1 P2 P4


def test_dangling_parent_and_empty_table():
    rows = [node("R", "alice", tags=("setup",)), node("A", "bob", "R", "missing")]
    out = by_name(evidence_of(rows))
    assert out["A"]["children"] == 0 and out["R"]["score"] == 5.0
    assert evidence_of([]).num_rows == 0


def test_descendants_with_clock_skew_use_graph_order():
    # The child's clock is behind its parent's: the topological order must come from the edges.
    rows = [
        node("R", "alice", t=100, tags=("setup",)),
        node("A", "bob", "R", t=50),
        node("B", "carol", "A", t=10),
    ]
    out = by_name(evidence_of(rows))
    assert (out["R"]["descendants"], out["A"]["descendants"]) == (2, 1)


def test_descendants_match_brute_force_on_a_random_graph():
    graph = build_graph(random_table(400, seed=3, merge_share=0.3))
    qualifying = (graph.account % 3) != 0
    assert count_descendants(graph, qualifying).tolist() == descendants_by_walk(graph, qualifying)


def test_large_random_graph_runs():
    contributions = random_table(20_000, seed=1)
    out = evidence(contributions)
    assert out.num_rows == 20_000
    root = out.slice(0, 1).to_pylist()[0]
    assert 0 < root["descendants"] < 20_000
    assert set(out["status"].to_pylist()) <= {"unverified", "confirmed", "partial", "failed", "contested"}
