"""`[ucb] verify = "leaders"` (format 3): the `unverified` view suggests only the best and its ties (the
results within the tolerance of it) for verification; "all", the default, lists every unverified result.
The key needs `format = 3`, so an older git-agora says it needs a newer one instead of misreading it."""

from __future__ import annotations

import pytest
from frontier_tables import node, sha, table, verify

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.ucb import UcbParams

LEADERS = UcbParams.from_mapping({"format": 3, "verify": "leaders"})


def noisy_project(extra=()):
    """`best` leads at 1.000; `tie` is within the tolerance (0.01) of it, `near` just outside, `far` well
    outside; `idea` is an insight (never scored)."""
    rows = [
        node("setup", "org", tags=("setup",)),
        node("base", "a", "setup", t=1, metric=1.20),
        node("far", "b", "base", t=2, metric=1.10),
        node("near", "c", "base", t=3, metric=1.011),
        node("best", "a", "base", t=4, metric=1.000),
        node("tie", "b", "best", t=5, metric=1.006),
        node("idea", "c", "best", t=6, tags=("insight",)),
        *extra,
    ]
    return table(rows)


def unverified(params, rows=(), tolerance=0.01):
    result = analyze(noisy_project(rows), config=AnalyzeConfig(tolerance=tolerance, ucb=params))
    view = result.views["unverified"]
    return [row["sha"] for row in view.rows], view


def test_all_lists_every_unverified_result_best_first():
    shas, view = unverified(UcbParams())
    assert shas == [sha(n) for n in ("best", "tie", "near", "far", "base")]
    assert view.note is None


def test_leaders_lists_the_best_and_its_ties_only():
    shas, view = unverified(LEADERS)
    assert shas == [sha("best"), sha("tie")]
    assert view.total == 2 and "within the tolerance (0.01)" in view.note


def test_leaders_without_a_tolerance_is_the_best_alone_and_follows_a_new_best():
    assert unverified(LEADERS, tolerance=0.0)[0] == [sha("best")]
    newer = node("newer", "c", "tie", t=7, metric=0.98)
    assert unverified(LEADERS, [newer])[0] == [sha("newer")]  # 1.000 is no longer within 0.01 of the best


def test_a_verified_leader_leaves_the_list_and_nothing_else_takes_its_place():
    """The founder (whose verdict counts from the start) confirms the best: its tie is left, and a worse
    unverified result is still not suggested."""
    checked = verify("check", "org", "best", "confirmed", t=7)
    assert unverified(LEADERS, [checked])[0] == [sha("tie")]
    assert sha("near") in unverified(UcbParams(), [checked])[0]


def test_leaders_in_a_project_without_results_lists_nothing():
    result = analyze(table([node("setup", "org", tags=("setup",))]), config=AnalyzeConfig(ucb=LEADERS))
    assert result.views["unverified"].rows == ()


def test_the_key_needs_format_3_and_a_known_value():
    with pytest.raises(ValueError, match="verify need format = 3"):
        UcbParams.from_mapping({"verify": "leaders"})
    with pytest.raises(ValueError, match="verify need format = 3"):
        UcbParams.from_mapping({"format": 2, "verify": "leaders"})
    with pytest.raises(ValueError, match="verify must be one of all, leaders"):
        UcbParams.from_mapping({"format": 3, "verify": "best"})
    with pytest.raises(ValueError, match="needs a newer git-agora"):
        UcbParams.from_mapping({"format": 4})
    assert UcbParams.from_mapping(LEADERS.to_dict()) == LEADERS


def test_a_format_2_project_writes_no_format_3_key():
    """An older git-agora (format 2) would refuse `verify` as unknown: a format-2 setup never holds it."""
    written = UcbParams.from_mapping({"format": 2, "explore_slots": "novel"}).to_dict()
    assert "verify" not in written and written["format"] == 2
    assert "format" not in UcbParams().to_dict() and "explore_slots" not in UcbParams().to_dict()


def test_a_fake_best_draws_the_reruns_until_a_counting_failure_hands_the_list_back():
    """mallory claims 0.5 (nobody can reproduce it): it is the one result suggested, a verdict without
    standing (mallory's sock puppet confirming it) does not hide it, and once a counting verifier fails it
    the honest best is the leader again and is suggested."""
    fake = node("fake", "mallory", "base", t=7, metric=0.5)
    puppet = verify("puppet", "sock", "fake", "confirmed", t=8)
    assert unverified(LEADERS, [fake, puppet])[0] == [sha("fake")]
    failed = verify("rerun", "org", "fake", "failed", t=9)
    assert unverified(LEADERS, [fake, puppet, failed])[0] == [sha("best"), sha("tie")]
