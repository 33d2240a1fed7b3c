"""Ranked standing (issue 46, `[verdicts] format = 2`, ``Root.ranks``): the trust root outranks the accounts
its confirmations minted, only the root mints standing, and a contested result does not lead. Without
ranks (format 1) the same tables keep the older rules."""

from __future__ import annotations

import numpy as np
import pytest
from frontier_tables import node, sha, table, verify
from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.config import ConfigError, ProjectConfig
from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.evidence import NEWCOMER, OUTRANKED, current_verdicts, evidence
from git_agora.frontier.frame import build_frame
from git_agora.frontier.graph import build_graph
from git_agora.frontier.root import Root
from git_agora.frontier.verdict_rows import standing_of, unsettled_failures, verdict_rows
from git_agora.frontier.views import best

RANKED, FLAT = Root(ranks=True), Root()

# the founder's setup S; E's result A, which the founder confirms (E is minted); F's honest result B,
# which E confirms; a fake X (bob) the founder failed; H, bob's honest result, the founder confirmed
BASE = [
    node("S", "founder", t=0, tags=("setup",)),
    node("A", "E", "S", t=1, metric=2.0),
    node("B", "F", "S", t=2, metric=1.5),
    node("X", "bob", "S", t=3, metric=0.1),
    node("H", "carol", "S", t=4, metric=1.0),
    verify("V1", "founder", "A", "confirmed", t=5),
    verify("V2", "E", "B", "confirmed", t=6),
    verify("V3", "founder", "X", "failed", t=7),
    verify("V4", "founder", "H", "confirmed", t=8),
]


def by_name(rows, root: Root) -> dict[str, dict]:
    names = {sha(r.name): r.name for r in rows}
    return {names[row["sha"]]: row for row in evidence(table(rows), root=root).to_pylist()}


def standing(rows, root: Root) -> dict[str, bool]:
    graph = build_graph(table(rows), root)
    verdicts = current_verdicts(graph)
    return {a: standing_of(graph, verdicts, a).counts for a in ("founder", "E", "F", "bob", "carol")}


def why(rows, root: Root) -> dict[str, str | None]:
    graph = build_graph(table(rows), root)
    verdicts = current_verdicts(graph)
    names = {sha(r.name): r.name for r in rows}
    rows_by_target = verdict_rows(graph, verdicts, np.arange(graph.n))
    return {names[r.sha]: r.why for listed in rows_by_target.values() for r in listed}


def test_only_the_root_mints_standing_a_derived_confirmation_mints_nothing():
    assert standing(BASE, RANKED) == {"founder": True, "E": True, "F": False, "bob": False, "carol": True}
    assert standing(BASE, FLAT)["F"] is True  # the older rule: a chain out of one real confirmation


def test_a_derived_confirmation_of_what_the_root_failed_is_outranked():
    rows = [*BASE, verify("V5", "E", "X", "confirmed", t=9)]
    ranked, flat = by_name(rows, RANKED), by_name(rows, FLAT)
    assert (ranked["X"]["status"], ranked["X"]["confirmations"], ranked["X"]["failures"]) == ("failed", 0, 1)
    assert ranked["X"]["score"] == -20  # the outranked confirmation weighs nothing
    assert flat["X"]["status"] == "contested"
    assert why(rows, RANKED)["V5"] == OUTRANKED


def test_a_derived_failure_does_not_contest_what_the_root_confirmed():
    rows = [*BASE, verify("V5", "E", "H", "failed", t=9)]
    ranked = by_name(rows, RANKED)
    assert (ranked["H"]["status"], ranked["H"]["confirmations"], ranked["H"]["failures"]) == ("confirmed", 1, 0)
    assert by_name(rows, FLAT)["H"]["status"] == "contested"
    frame = build_frame(table(rows), root=RANKED)
    top = best(frame)
    assert top is not None and top.sha == sha("H") and top.status == "confirmed"  # X is failed: not scored


def test_a_derived_verdict_that_agrees_with_the_root_counts():
    rows = [*BASE, verify("V5", "E", "H", "confirmed", t=9)]
    ranked = by_name(rows, RANKED)
    assert (ranked["H"]["status"], ranked["H"]["confirmations"], ranked["H"]["score"]) == ("confirmed", 2, 40)
    assert why(rows, RANKED)["V5"] is None


def test_derived_accounts_contest_each_other_and_the_root_settles_it():
    rows = [
        *BASE,
        node("C", "dave", "S", t=9, metric=3.0),
        verify("V5", "founder", "C", "confirmed", t=10),  # dave is minted
        node("K", "kim", "S", t=11, metric=0.5),  # a new best nobody in the root has rerun
        verify("V6", "E", "K", "confirmed", t=12),
        verify("V7", "dave", "K", "failed", t=13),
    ]
    ranked = by_name(rows, RANKED)
    assert (ranked["K"]["status"], ranked["K"]["confirmations"], ranked["K"]["failures"]) == ("contested", 1, 1)
    frame = build_frame(table(rows), root=RANKED)
    at = {r.name: i for i, r in enumerate(rows)}
    assert frame.scored[at["K"]]  # it stays scored: ranked among the leaders, marked
    top = best(frame)
    assert top is not None and top.sha == sha("H")  # a contested result is not the best
    flat = best(build_frame(table(rows), root=FLAT))
    assert flat is not None and flat.sha == sha("K")  # the older rule: it leads, marked contested
    result = analyze(table(rows), config=AnalyzeConfig(tolerance=0.0, root=RANKED))
    assert result.summary.best is not None and result.summary.best.sha == sha("H")
    [exploit] = [s for s in result.slots["exploit"].suggestions if s.sha == sha("K")]
    assert exploit.action == "verify" and f"git agora verify {sha('K')[:12]}" in exploit.reason
    others = [s.sha for name in ("explore_known", "explore_novel") for s in result.slots[name].suggestions]
    assert sha("K") not in others

    settled = by_name([*rows, verify("V8", "founder", "K", "failed", t=14)], RANKED)
    assert (settled["K"]["status"], settled["K"]["confirmations"]) == ("failed", 0)


def test_standing_is_one_round_from_the_current_root_verdicts():
    replaced = [*BASE, verify("V9", "founder", "A", "failed", t=9)]  # replaces V1: E is no longer minted
    assert standing(replaced, RANKED)["E"] is False
    disputed = [*BASE, verify("V9", "carol", "A", "failed", t=9)]  # carol is minted, not root: E stays
    assert standing(disputed, RANKED)["E"] is True
    member = Root(frozenset({"carol"}), ranks=True)  # a root member's failure: the root disagrees on A
    assert standing(disputed, member)["E"] is False
    opinion = [*BASE[:5], verify("V1", "founder", "A", "confirmed", t=5, run=False)]
    assert standing(opinion, RANKED)["E"] is False


def test_a_newcomers_verdict_stays_a_newcomers_on_a_root_verdicted_result():
    rows = [*BASE, verify("V5", "F", "H", "failed", t=9)]
    assert by_name(rows, RANKED)["H"]["status"] == "confirmed"
    assert why(rows, RANKED)["V5"] == NEWCOMER
    stranger = [*BASE, verify("V5", "zed", "H", "failed", t=9)]  # no standing under either rule
    at = [r.name for r in stranger].index("H")
    for root, signal in ((RANKED, 0), (FLAT, 1)):  # with ranks, the root's confirmation leaves nothing to settle
        assert unsettled_failures(current_verdicts(build_graph(table(stranger), root)), len(stranger))[at] == signal
    graph = build_graph(table(rows), RANKED)
    remedy = standing_of(graph, current_verdicts(graph), "F").remedy or ""
    assert "the trust root" in remedy and "an established account's confirmation gives no standing" in remedy


# --------------------------------------------------------------------------- property

MINTED = ("m1", "m2", "m3")  # accounts the founder confirms (derived); any of them may lie


@st.composite
def ranked_communities(draw):
    """Results by the founder's minted accounts and by others; the founder confirms one result of each
    minted account, then verdicts of the founder and of the minted accounts on random results."""
    rows = [node("S", "founder", t=0, tags=("setup",))]
    rows += [node(f"own_{a}", a, "S", t=1 + i, metric=5.0) for i, a in enumerate(MINTED)]
    rows += [verify(f"mint_{a}", "founder", f"own_{a}", "confirmed", t=10 + i) for i, a in enumerate(MINTED)]
    n = draw(st.integers(1, 8))
    for i in range(n):
        who = draw(st.sampled_from(("bob", "carol", *MINTED)))
        rows.append(node(f"r{i}", who, "S", t=20 + i, metric=draw(st.floats(0.5, 2.0).map(lambda v: round(v, 2)))))
    root, derived = [], []
    for k in range(draw(st.integers(0, 10))):
        target = f"r{draw(st.integers(0, n - 1))}"
        owner = next(r.account for r in rows if r.name == target)
        kind = draw(st.sampled_from(["confirmed", "partial", "failed"]))
        who = draw(st.sampled_from(("founder", *MINTED)))
        if who != owner:
            (root if who == "founder" else derived).append(verify(f"v{k}", who, target, kind, t=40 + k))
    return rows, root, derived


@settings(max_examples=150, deadline=None)
@given(ranked_communities())
def test_minted_accounts_never_change_the_status_of_what_the_root_verified(community):
    rows, root, derived = community
    alone = by_name([*rows, *root], RANKED)
    both = by_name([*rows, *root, *derived], RANKED)
    for verdict in root:
        assert both[verdict.target]["status"] == alone[verdict.target]["status"], verdict.target
    frame = build_frame(table([*rows, *root, *derived]), root=RANKED)
    top = best(frame)
    assert top is None or top.status != "contested"
    failed_by_root = {v.target for v in root if alone[v.target]["status"] == "failed"}
    assert top is None or top.title not in failed_by_root  # a row's title is its name (frontier_tables)


def test_the_key_is_read_from_agora_toml_and_a_newer_format_or_unknown_key_is_refused():
    base = '[project]\nname = "p"\n'
    assert ProjectConfig.parse(base).verdicts_format == 1  # a table without the key: the older rules
    assert ProjectConfig.parse(base + "[verdicts]\nformat = 2\n").verdicts_format == 2
    with pytest.raises(ConfigError, match="needs a newer git-agora"):
        ProjectConfig.parse(base + "[verdicts]\nformat = 3\n")
    with pytest.raises(ConfigError, match="unknown key"):
        ProjectConfig.parse(base + "[verdicts]\nformat = 2\nranks = true\n")
    assert "[verdicts]\nformat = 2" in ProjectConfig.parse(base + "[verdicts]\nformat = 2\n").dump()
