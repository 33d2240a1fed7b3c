"""Whole-set index rules on hand-built rows: the case-twin rule of `build.finalize`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from git_agora.index.build import CASE_TWIN, case_twin_groups, finalize

if "frontier_tables" not in sys.modules:  # the frontier's hand-built tables (tests/frontier/conftest.py)
    spec = importlib.util.spec_from_file_location("frontier_tables", Path(__file__).parent / "frontier" / "conftest.py")
    assert spec and spec.loader
    sys.modules["frontier_tables"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules["frontier_tables"])
from frontier_tables import node, sha, table  # noqa: E402


def test_an_account_listed_twice_is_no_twin_of_itself():
    assert case_twin_groups(["ada", "ada", "bob"]) == []  # an update lists known and new accounts together
    assert case_twin_groups(["ada", "Ada", "ADA", "bob"]) == [["ADA", "Ada", "ada"]]


def test_the_later_twin_is_invalid_whatever_the_row_order():
    rows = [node("S", "alice", t=0, tags=("setup",)), node("A", "Alice", "S", t=5), node("B", "alice", "S", t=9)]
    for ordered in (rows, rows[::-1]):
        out = finalize(table(ordered), now=100)
        reasons = dict(zip(out["sha"].to_pylist(), out["reasons"].to_pylist()))
        assert reasons[sha("A")] == [f"{CASE_TWIN} alice"] and reasons[sha("S")] == reasons[sha("B")] == []
