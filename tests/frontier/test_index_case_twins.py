"""The case-twin rule of `index.build.finalize`, on hand-built rows (this folder's tables)."""

from __future__ import annotations

from frontier_tables import node, sha, table

from git_agora.index.build import CASE_TWIN, case_twin_groups, finalize


def test_an_account_listed_twice_is_no_twin_of_itself():
    assert case_twin_groups(["ada", "ada", "bob"]) == []  # an update lists known and new accounts together
    assert case_twin_groups(["ada", "Ada", "ADA", "bob"]) == [["ADA", "Ada", "ada"]]


def test_the_later_twin_is_invalid_whatever_the_row_order():
    rows = [node("S", "alice", t=0, tags=("setup",)), node("A", "Alice", "S", t=5), node("B", "alice", "S", t=9)]
    for ordered in (rows, rows[::-1]):
        out = finalize(table(ordered), now=100)
        reasons = dict(zip(out["sha"].to_pylist(), out["reasons"].to_pylist()))
        assert reasons[sha("A")] == [f"{CASE_TWIN} alice"] and reasons[sha("S")] == reasons[sha("B")] == []


def test_a_twin_dated_before_the_founder_never_takes_the_project():
    rows = [node("S", "founder", t=100, tags=("setup",)), node("F", "Founder", "S", t=1)]  # backdated
    for root in (sha("S"), None):
        out = finalize(table(rows), root=root, now=200)
        reasons = dict(zip(out["sha"].to_pylist(), out["reasons"].to_pylist()))
        assert reasons == {sha("S"): [], sha("F"): [f"{CASE_TWIN} founder"]}
