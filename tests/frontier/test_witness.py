"""Witness records: the CI's record of which log tips it saw, and when, decides priority (issue 28)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from frontier_tables import node, random_table, sha, table
from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.contribution import witness_tips
from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.frame import build_frame
from git_agora.frontier.graph import build_graph
from git_agora.frontier.root import Root, Witnessed
from git_agora.frontier.ucb import counted
from git_agora.frontier.views import new_bests


def ci(contributions) -> Root:
    """The root of a project whose `[ci] accounts` is ["ci"]: each of its witness records (rows tagged
    witness by `ci`) reached exactly the rows it lists (`ops.witness` resolves the log tips a real one
    lists with Git; the frontier adds what those build on)."""
    shas, times = [], []
    for row in contributions.to_pylist():
        listed = witness_tips(json.loads(row["metadata"])) if "witness" in row["tags"] else None
        if listed and row["account"] == "ci":
            shas += listed.values()
            times += [row["timestamp"]] * len(listed)
    seen = Witnessed(pa.array(shas, pa.string()), np.array(times, dtype=np.int64), max(times)) if shas else None
    return Root(frozenset({"ci"}), witnesses=frozenset({"ci"}), witnessed=seen)


def witness(name: str, t: int, **tips: str):
    """A witness record of the account `ci` listing these tips (account=row name), dated t."""
    return node(
        name, "ci", "S", t=t, tags=("witness",), meta={"witness": {"tips": {a: sha(r) for a, r in tips.items()}}}
    )


def at(rows) -> dict[str, int]:
    return {r.name: i for i, r in enumerate(rows)}


def backdated_copy_rows():
    return [
        node("S", "founder", t=0, tags=("setup",)),
        node("P", "bob", "S", t=100, metric=1.0),
        node("O", "carol", "P", t=200, metric=0.8),  # the original
        witness("W1", 300, bob="P", carol="O"),
        node("B", "mallory", "P", t=150, metric=0.8),  # a copy of O's tree, dated before it, seen later
        witness("W2", 400, mallory="B"),
    ]


def test_the_witnessed_original_keeps_the_best_against_a_backdated_copy():
    rows = backdated_copy_rows()
    contributions, i = table(rows), at(rows)
    unwitnessed = build_frame(contributions, tolerance=0.01)  # no CI named: claimed time decides
    assert new_bests(unwitnessed)[i["B"]] and not new_bests(unwitnessed)[i["O"]]
    frame = build_frame(contributions, tolerance=0.01, root=ci(contributions))
    assert frame.witness_time[i["O"]] == 300 and frame.witness_time[i["P"]] == 300
    assert frame.witness_time[i["B"]] == 400
    assert new_bests(frame)[i["O"]] and not new_bests(frame)[i["B"]]
    best = analyze(contributions, config=AnalyzeConfig(tolerance=0.01, root=ci(contributions))).summary.best
    assert best.sha == sha("O") and best.priority == "witnessed" and best.witness_time == 300
    assert best.effective_time == 200 and best.tied_at_time == ()


def test_an_unwitnessed_contribution_comes_after_every_witness_record():
    rows = [*backdated_copy_rows()[:4], node("B", "mallory", "P", t=150, metric=0.8)]  # not seen yet
    frame = build_frame(table(rows), tolerance=0.01, root=ci(table(rows)))
    i = at(rows)
    assert frame.witness_time[i["B"]] == -1 and frame.priority[i["B"]] > frame.priority[i["O"]]
    assert new_bests(frame)[i["O"]] and not new_bests(frame)[i["B"]]
    best = analyze(table(rows), config=AnalyzeConfig(tolerance=0.01, root=ci(table(rows)))).summary.best
    assert best.sha == sha("O")


def test_a_record_witnesses_what_it_reached_and_what_that_builds_on():
    rows = [
        node("S", "founder", t=0, tags=("setup",)),
        node("A1", "alice", "S", t=10, metric=1.0),
        node("X", "xavier", "S", t=11, metric=1.1),  # another account's, built on
        node("A2", "alice", "A1", "X", t=20, metric=0.9),
        node("A3", "alice", "A2", t=30, metric=0.8),
        witness("W1", 25, alice="A2"),
        witness("W2", 35, alice="A3"),
        witness("W0", 50, alice="A1"),  # a later record of an older tip changes nothing
    ]
    contributions = table(rows)
    frame = build_frame(contributions, root=ci(contributions))
    i = at(rows)
    times = {name: int(frame.witness_time[i[name]]) for name in ("S", "A1", "X", "A2", "A3")}
    assert times == {"S": 25, "A1": 25, "X": 25, "A2": 25, "A3": 35}


def test_contributions_first_witnessed_by_one_record_tie_and_the_tie_is_shown():
    rows = [
        node("S", "founder", t=0, tags=("setup",)),
        node("A", "bob", "S", t=10, metric=0.5),
        node("B", "carol", "S", t=90, metric=0.5),
        witness("W", 100, bob="A", carol="B"),
    ]
    result = analyze(table(rows), config=AnalyzeConfig(tolerance=0.01, root=ci(table(rows))))
    best = result.summary.best
    assert best.priority == "witnessed" and len(best.tied_at_time) == 1
    assert any("first witnessed by the same witness record" in n for n in result.summary.notes)


def test_a_witness_record_weighs_nothing_and_is_no_work():
    rows = [*backdated_copy_rows()]
    frame = build_frame(table(rows), tolerance=0.01, root=ci(table(rows)))
    i = at(rows)
    without = build_frame(table([r for r in rows if r.account != "ci"]), tolerance=0.01)
    assert frame.score[i["S"]] == without.score[i["S"]] and frame.follow_ons[i["S"]] == without.follow_ons[i["S"]]
    assert counted(frame) == len(rows) - 2
    assert not frame.buildable[i["W1"]] and not frame.scored[i["W1"]]
    result = analyze(table(rows), config=AnalyzeConfig(tolerance=0.01, root=ci(table(rows))))
    assert sha("W1") not in {r["sha"] for r in result.views["recent"].rows}
    assert sha("W1") not in {r["sha"] for r in result.views["leaves"].rows}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 5))
def test_priority_puts_parents_first_and_witness_times_never_rise_down_the_graph(seed, records):
    contributions = random_table(120, seed=seed)
    rng = np.random.default_rng(seed)
    accounts = sorted(set(contributions["account"].to_pylist()))
    shas, owners = contributions["sha"].to_pylist(), contributions["account"].to_pylist()
    extra = []
    for k in range(records):
        tips = {a: shas[int(rng.choice([j for j, o in enumerate(owners) if o == a]))] for a in accounts[: k + 1]}
        extra.append((f"w{k}", int(rng.integers(0, 2_000)), tips))
    rows = contributions.to_pylist()
    setup = next(r["sha"] for r in rows if "setup" in r["tags"])
    for name, t, tips in extra:
        rows.append(
            {
                **rows[-1],
                "sha": sha(name),
                "account": "ci",
                "timestamp": t,
                "log_seq": None,
                "tags": ["witness"],
                "metrics": [],
                "primary_metric": None,
                "parents": [setup],
                "metadata": json.dumps({"witness": {"tips": tips}}),
                "target": None,
                "verdict": None,
            }
        )
    everything = type(contributions).from_pylist(rows, schema=contributions.schema)
    graph = build_graph(everything, ci(everything))
    priority = graph.table["priority"].to_numpy()
    witnessed = graph.table["witness_time"].to_numpy(zero_copy_only=False)
    assert (priority[graph.parent] < priority[graph.child]).all()
    both = ~np.isnan(witnessed[graph.parent]) & ~np.isnan(witnessed[graph.child])
    assert (witnessed[graph.parent][both] <= witnessed[graph.child][both]).all()
    assert not (np.isnan(witnessed[graph.parent]) & ~np.isnan(witnessed[graph.child])).any()
    seen = ~np.isnan(witnessed)
    if seen.any() and (~seen).any():
        assert priority[~seen].min() > priority[seen].max()  # no record saw them: after all it saw
