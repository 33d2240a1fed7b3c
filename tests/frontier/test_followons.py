"""Follow-on counts carried between analyses: the update equals the batch count on every history."""

from __future__ import annotations

import numpy as np
from frontier_tables import everyone, node, random_table, table, verify
from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.frontier.evidence import count_descendants, current_verdicts, evidence, follow_on_work
from git_agora.frontier.followons import FollowOns, follow_on_counts, updated
from git_agora.frontier.frame import build_frame
from git_agora.frontier.graph import build_graph

ACCOUNTS = ("ann", "bob", "cyd")


@st.composite
def histories(draw):
    """Rows in arrival order: results, insights, wip and endorsements on one or more earlier rows, and
    verifications (also self-verifications, and repeated verdicts of one verifier on one target that
    replace each other, in or out of timestamp order)."""
    size = draw(st.integers(1, 28))
    rows = [node("n0", "ann", t=0, tags=("setup",))]
    for i in range(1, size):
        who = draw(st.sampled_from(ACCOUNTS))
        t = draw(st.integers(0, 40))
        if draw(st.integers(0, 3)) == 0:
            target = draw(st.integers(0, i - 1))
            verdict = draw(st.sampled_from(["confirmed", "partial", "failed"]))
            rows.append(verify(f"n{i}", who, f"n{target}", verdict, t=t))
            continue
        parents = draw(st.lists(st.integers(0, i - 1), min_size=1, max_size=3, unique=True))
        kind = draw(st.sampled_from(["result", "result", "insight", "wip", "endorsed"]))
        rows.append(node(f"n{i}", who, *(f"n{p}" for p in parents), t=t, tags=(kind,)))
    return rows


def state(rows) -> tuple:
    contributions = table(rows)
    graph = build_graph(contributions, everyone(contributions))
    return graph, follow_on_work(graph, current_verdicts(graph))


def assert_update_is_exact(before, after) -> None:
    graph, qualifying = state(before)
    previous = follow_on_counts(graph, qualifying)
    graph, qualifying = state(after)
    got = follow_on_counts(graph, qualifying, previous)
    assert got.counts.tolist() == count_descendants(graph, qualifying).tolist()
    assert got.sha.to_pylist() == graph.table["sha"].to_pylist()
    assert got.qualifying.tolist() == qualifying.tolist()


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_growing_history_updates_exactly(rows, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    graph, qualifying = state(rows[: cuts[0]] if cuts else rows)
    carried = follow_on_counts(graph, qualifying)
    for cut in [*cuts[1:], len(rows)]:  # several fetches in a row, each updating the last state
        graph, qualifying = state(rows[:cut])
        carried = follow_on_counts(graph, qualifying, carried)
        assert carried.counts.tolist() == count_descendants(graph, qualifying).tolist()


@settings(max_examples=80, deadline=None)
@given(histories(), st.data())
def test_unusual_changes_fall_back_to_the_same_numbers(rows, data):
    cut = data.draw(st.integers(1, len(rows)))
    after = list(rows)
    change = data.draw(st.sampled_from(["invalid", "late parent", "reordered"]))
    if change == "invalid":  # an earlier contribution is no longer valid
        i = data.draw(st.integers(0, cut - 1))
        r = after[i]
        after[i] = node(r.name, r.account, *r.parents, t=r.timestamp, tags=r.tags, valid=False)
        if r.verdict is not None:
            after[i] = verify(r.name, r.account, r.target, r.verdict, t=r.timestamp, valid=False)
    elif change == "late parent":  # an earlier contribution turns out to build on one that arrives now
        i = data.draw(st.integers(0, cut - 1))
        r = after[i]
        after[i] = node(r.name, r.account, *r.parents, "late", t=r.timestamp, tags=r.tags)
        after.append(node("late", "bob", t=0))
    else:  # the table lists the same rows in another order
        after = data.draw(st.permutations(after))
    assert_update_is_exact(rows[:cut], after)


def test_replaced_verdict_moves_counts_on_the_ancestors_only():
    # R <- A <- V1 (bob confirms A, t=5).  Then V2 (bob fails A, t=6) replaces V1, and C builds on V1.
    rows = [node("R", "ann"), node("A", "cyd", "R", t=1), verify("V1", "bob", "A", "confirmed", t=5)]
    graph, qualifying = state(rows)
    before = follow_on_counts(graph, qualifying)
    assert before.counts.tolist() == [2, 1, 0]  # R: A, V1; A: V1
    rows += [verify("V2", "bob", "A", "failed", t=6), node("C", "cyd", "V1", t=7)]
    graph, qualifying = state(rows)
    counts = updated(graph, qualifying, before)
    assert counts is not None  # an update, not a recount
    # V1 replaced: it no longer counts; V2 failed: never counts; C counts on V1, A and R.
    assert counts.tolist() == [2, 1, 1, 0, 0]
    assert counts.tolist() == count_descendants(graph, qualifying).tolist()


def test_late_parent_and_invalid_node_are_not_updates():
    rows = [node("R", "ann"), node("A", "bob", "R", t=1)]
    graph, qualifying = state(rows)
    before = follow_on_counts(graph, qualifying)
    graph, qualifying = state([node("R", "ann"), node("A", "bob", "R", "L", t=1), node("L", "cyd")])
    assert updated(graph, qualifying, before) is None
    graph, qualifying = state([node("R", "ann"), node("A", "bob", "R", t=1, valid=False)])
    assert updated(graph, qualifying, before) is None


def test_counter_hook_gives_the_same_evidence_and_frame():
    contributions = random_table(600, seed=5, merge_share=0.3)
    states: list[FollowOns] = []

    def counter(graph, qualifying):
        states.append(follow_on_counts(graph, qualifying, states[-1] if states else None))
        return states[-1].counts

    assert evidence(contributions, counter=counter).equals(evidence(contributions))
    frame = build_frame(contributions, counter=counter)
    assert np.array_equal(frame.follow_ons, build_frame(contributions).follow_ons)
    assert len(states) == 2
