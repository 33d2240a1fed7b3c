"""Whose verdicts count: the trust root, established accounts, opinions, contested status (issue 26)."""

from __future__ import annotations

import numpy as np
from frontier_tables import node, sha, table, verify
from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.evidence import NEWCOMER, OPINION, REPLACED, current_verdicts, evidence
from git_agora.frontier.frame import build_frame
from git_agora.frontier.graph import build_graph
from git_agora.frontier.root import Root


def evidence_by_name(rows, root: Root | None = None) -> dict[str, dict]:
    names = {sha(r.name): r.name for r in rows}
    return {names[row["sha"]]: row for row in evidence(table(rows), root=root).to_pylist()}


# founder's setup S; bob's result A and carol's result B built on it
BASE = [
    node("S", "founder", t=0, tags=("setup",)),
    node("A", "bob", "S", t=1, metric=1.0),
    node("B", "carol", "S", t=2, metric=2.0),
]


def test_a_fresh_accounts_failed_verdict_weighs_nothing():
    rows = [*BASE, verify("V", "mallory", "A", "failed", t=3)]
    out = evidence_by_name(rows)
    assert out["A"]["status"] == "unverified" and out["A"]["score"] == 0 and out["A"]["failures"] == 0
    assert out["S"]["descendants"] == 2  # A and B; the weightless verdict is not follow-on work


def test_the_setup_accounts_run_backed_verdict_counts_and_its_opinion_does_not():
    counted = evidence_by_name([*BASE, verify("V", "founder", "A", "failed", t=3)])
    assert counted["A"]["status"] == "failed" and counted["A"]["score"] == -20
    opinion = evidence_by_name([*BASE, verify("V", "founder", "A", "failed", t=3, run=False)])
    assert opinion["A"]["status"] == "unverified" and opinion["A"]["score"] == 0


def test_three_fresh_accounts_cannot_resurrect_a_failed_result():
    rows = [*BASE, verify("V", "founder", "A", "failed", t=3)]
    rows += [verify(f"Y{i}", f"sybil{i}", "A", "confirmed", t=4 + i) for i in range(3)]
    out = evidence_by_name(rows)
    assert out["A"]["status"] == "failed" and out["A"]["confirmations"] == 0 and out["A"]["score"] == -20


def test_an_account_is_established_by_a_confirmation_from_one_with_standing_and_passes_it_on():
    rows = [
        *BASE,
        node("C", "dave", "S", t=3, metric=3.0),
        verify("V1", "founder", "A", "confirmed", t=4),  # bob is established
        verify("V2", "bob", "B", "confirmed", t=5),  # counts: carol is established through bob
        verify("V3", "carol", "C", "failed", t=6),  # counts
    ]
    out = evidence_by_name(rows)
    assert [out[n]["status"] for n in "ABC"] == ["confirmed", "confirmed", "failed"]
    standing = current_verdicts(build_graph(table(rows))).standing
    assert int(standing.sum()) == 3  # founder, bob, carol; dave has nothing confirmed


def test_sybils_confirming_each_other_never_gain_standing():
    rows = [
        *BASE,
        node("X", "sybil1", "S", t=3, metric=0.1),
        node("Y", "sybil2", "S", t=4, metric=0.2),
        verify("V1", "sybil1", "Y", "confirmed", t=5),
        verify("V2", "sybil2", "X", "confirmed", t=6),
        verify("V3", "sybil2", "A", "failed", t=7),
    ]
    out = evidence_by_name(rows)
    assert out["X"]["status"] == out["Y"]["status"] == out["A"]["status"] == "unverified"
    assert out["X"]["score"] == out["Y"]["score"] == 0


def test_the_trust_root_names_members_and_ci_accounts():
    rows = [*BASE, verify("V", "ci-bot", "A", "confirmed", t=3)]
    assert evidence_by_name(rows)["A"]["status"] == "unverified"
    assert evidence_by_name(rows, Root(frozenset({"ci-bot"})))["A"]["status"] == "confirmed"


def test_one_failure_against_a_confirmed_result_contests_it_and_it_stays_scored():
    rows = [
        *BASE,
        node("D", "dave", "S", t=3, metric=4.0),
        verify("V1", "founder", "B", "confirmed", t=4),  # carol established
        verify("V2", "founder", "A", "confirmed", t=5),
        verify("V3", "carol", "A", "failed", t=6),
        verify("V4", "founder", "D", "confirmed", t=7),
        verify("V5", "founder", "D", "partial", t=8),  # replaces V4: dave is not established
    ]
    out = evidence_by_name(rows)
    assert (out["A"]["status"], out["A"]["confirmations"], out["A"]["failures"]) == ("contested", 1, 1)
    assert (out["D"]["status"], out["D"]["partials"], out["D"]["confirmations"]) == ("partial", 1, 0)
    frame = build_frame(table(rows))
    at = {name: i for i, name in enumerate(r.name for r in rows)}
    assert frame.scored[at["A"]] and frame.buildable[at["A"]]
    result = analyze(table(rows), config=AnalyzeConfig(tolerance=0.0))
    exploit = result.slots.slots[0].suggestions
    assert exploit[0].sha == sha("A") and "settle it with a rerun" in exploit[0].reason


def test_why_a_verdict_weighs_nothing():
    rows = [
        *BASE,
        verify("V1", "founder", "A", "confirmed", t=3),
        verify("V2", "founder", "A", "failed", t=4, run=False),  # replaces V1, an opinion
        verify("V3", "mallory", "B", "failed", t=5),
    ]
    verdicts = current_verdicts(build_graph(table(rows)))
    names = {sha(r.name): r.name for r in rows}
    shas = table(rows)["sha"].to_pylist()
    why = {names[shas[n]]: w for n, w in zip(verdicts.node.tolist(), verdicts.weightless())}
    assert why == {"V1": REPLACED, "V2": OPINION, "V3": NEWCOMER}


# --------------------------------------------------------------------------- property

HONEST = ("founder", "h1", "h2")
SYBILS = ("s1", "s2", "s3")


@st.composite
def communities(draw):
    """A random DAG of results by honest and Sybil accounts, honest run-backed verdicts (founder's first,
    so some honest accounts are established), and the Sybil verdicts kept apart."""
    n = draw(st.integers(2, 14))
    rows = [node("n0", "founder", t=0, tags=("setup",))]
    for i in range(1, n):
        parent = draw(st.integers(0, i - 1))
        account = draw(st.sampled_from(HONEST + SYBILS))
        metric = draw(st.one_of(st.none(), st.floats(0.5, 2.0, allow_nan=False).map(lambda v: round(v, 2))))
        rows.append(node(f"n{i}", account, f"n{parent}", t=i, metric=metric))
    honest, sybil = [], []
    for k in range(draw(st.integers(0, 12))):
        target = draw(st.integers(1, n - 1))
        verdict = draw(st.sampled_from(["confirmed", "partial", "failed"]))
        run = draw(st.booleans())
        if draw(st.booleans()):
            who = draw(st.sampled_from(HONEST))
            if who != rows[target].account:
                honest.append(verify(f"h{k}", who, f"n{target}", verdict, t=100 + k, run=run))
        else:
            who = draw(st.sampled_from(SYBILS))
            if who != rows[target].account:
                sybil.append(verify(f"s{k}", who, f"n{target}", verdict, t=100 + k, run=run))
    return rows, honest, sybil


@settings(max_examples=150, deadline=None)
@given(communities())
def test_verdicts_from_accounts_without_standing_never_change_a_status_the_best_or_a_slot(community):
    rows, honest, sybil = community
    without, with_sybils = table([*rows, *honest]), table([*rows, *honest, *sybil])
    standing = current_verdicts(build_graph(with_sybils)).standing
    accounts = {a: i for i, a in enumerate(dict.fromkeys(with_sybils["account"].to_pylist()))}
    if any(standing[accounts[s]] for s in SYBILS if s in accounts):
        return  # an honest verdict confirmed a Sybil's work: it is established, no longer outside
    before, after = (analyze(t, config=AnalyzeConfig(tolerance=0.0)) for t in (without, with_sybils))
    frame_before, frame_after = build_frame(without), build_frame(with_sybils)
    base = len(rows) + len(honest)
    assert np.array_equal(frame_before.status, frame_after.status[:base])
    assert np.array_equal(frame_before.follow_ons, frame_after.follow_ons[:base])
    assert np.array_equal(frame_before.score, frame_after.score[:base])
    assert (before.summary.best.sha if before.summary.best else None) == (
        after.summary.best.sha if after.summary.best else None
    )
    assert [[s.sha for s in slot.suggestions] for slot in before.slots.slots] == [
        [s.sha for s in slot.suggestions] for slot in after.slots.slots
    ]
