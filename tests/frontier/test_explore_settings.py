"""The explore settings (`[ucb] format = 2`): `explore_quality = "lineage"` ranks an untouched step away
from a leader above work far from every leader, though it scored worse alone; `explore_scored` keeps
insights and hypotheses out of the explore slots; `explore_slots = "novel"` applies both to explore novel
only. All are off by default and refused without the format."""

from __future__ import annotations

import pytest
from frontier_tables import node, sha, table, verify

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.frame import build_frame
from git_agora.frontier.ucb import UcbParams, lineage_quality

LINEAGE = {"format": 2, "explore_quality": "lineage"}


def stepping_stone_project():
    """`best` leads; `stone` stepped off it and scored worse (one of two changes that pay together);
    `far` is an old mediocre line that scored better than the stone; an insight hangs off `best`."""
    rows = [
        node("setup", "org", tags=("setup",)),
        node("base", "a", "setup", t=1, metric=1.20),
        node("best", "a", "base", t=2, metric=1.00),
        node("second", "b", "base", t=3, metric=1.02),
        node("third", "c", "base", t=4, metric=1.05),
        node("far", "b", "base", t=5, metric=1.10),
        node("stone", "c", "best", t=6, metric=1.12),
        node("idea", "b", "best", t=7, tags=("insight",)),
    ]
    return table(rows)


def slots(params):
    result = analyze(stepping_stone_project(), config=AnalyzeConfig(tolerance=0.01, ucb=params))
    return {slot.name: [s.sha for s in slot.suggestions] for slot in result.slots.slots}, result


def explore(suggested):
    return suggested["explore_known"] + suggested["explore_novel"]


def test_lineage_ranks_a_step_off_the_leader_above_far_work():
    default, _ = slots(UcbParams())
    lineage, result = slots(UcbParams.from_mapping(LINEAGE))
    assert explore(default).index(sha("far")) < explore(default).index(sha("stone"))  # the paper: own Q
    assert explore(lineage).index(sha("stone")) < explore(lineage).index(sha("far"))
    assert default["exploit"] == lineage["exploit"]  # the exploit slot is unchanged
    stone = next(s for slot in result.slots.slots for s in slot.suggestions if s.sha == sha("stone"))
    assert stone.quality_source == "parent" and "its parent's" in stone.reason
    assert stone.metric == pytest.approx(1.12)  # its own value is shown as measured


def test_lineage_quality_is_the_better_of_own_and_parent():
    frame = build_frame(stepping_stone_project(), tolerance=0.01)
    q, lineage = frame.q, lineage_quality(frame)
    index = {row["sha"]: i for i, row in enumerate(frame.rows(range(frame.n)))}
    best, stone, far = index[sha("best")], index[sha("stone")], index[sha("far")]
    assert lineage[stone] == q[best] > q[stone]  # a step off the leader: the leader's quality
    assert lineage[far] == q[far]  # its parent (base) scored worse than it: its own
    assert lineage[best] == q[best] and (lineage >= frame.q_inherited).all()


def test_explore_scored_leaves_insights_out():
    default, _ = slots(UcbParams())
    scored, _ = slots(UcbParams.from_mapping({"format": 2, "explore_scored": True}))
    assert sha("idea") in explore(default)
    assert sha("idea") not in explore(scored) and sha("idea") not in scored["exploit"]


def test_explore_slots_novel_keeps_explore_known_as_the_paper_has_it():
    default, _ = slots(UcbParams())
    novel, result = slots(UcbParams.from_mapping({**LINEAGE, "explore_scored": True, "explore_slots": "novel"}))
    assert novel["exploit"] == default["exploit"] and novel["explore_known"] == default["explore_known"]
    assert sha("idea") in novel["explore_known"]  # an insight on the leader: explore known as before
    assert novel["explore_novel"][0] == sha("stone")  # explore novel: results only, judged by their line
    assert sha("idea") not in novel["explore_novel"]
    stone = result.slots["explore_novel"].suggestions[0]
    assert stone.quality_source == "parent"
    assert default["explore_novel"].index(sha("far")) < default["explore_novel"].index(sha("stone"))


def test_the_format_and_values_are_checked():
    with pytest.raises(ValueError, match="need format = 2"):
        UcbParams.from_mapping({"explore_quality": "lineage"})
    with pytest.raises(ValueError, match="explore_quality must be one of own, lineage"):
        UcbParams.from_mapping({"format": 2, "explore_quality": "parents"})
    with pytest.raises(ValueError, match="explore_scored must be true or false"):
        UcbParams.from_mapping({"format": 2, "explore_scored": "yes"})
    with pytest.raises(ValueError, match="explore_slots must be one of both, novel"):
        UcbParams.from_mapping({"format": 2, "explore_slots": "known"})
    with pytest.raises(ValueError, match="need format = 2"):
        UcbParams.from_mapping({"explore_slots": "novel"})
    with pytest.raises(ValueError, match=r"unknown key\(s\) explore_slot \(a typo, or a newer git-agora's\)"):
        UcbParams.from_mapping({"format": 2, "explore_slot": "novel"})
    params = UcbParams.from_mapping({**LINEAGE, "explore_scored": True, "explore_slots": "novel"})
    assert UcbParams.from_mapping(params.to_dict()) == params
    assert "explore_quality" not in UcbParams().to_dict()  # format 1 setups are written as before


QUALITY = {"format": 2, "exploit_rank": "quality"}


def worked_leader_project(second: float = 1.01):
    """`best` leads, confirmed, with six follow-ons (each worse); `second` and `third` are untouched
    leaders just behind it (or `second` level with it)."""
    rows = [
        node("setup", "org", tags=("setup",)),
        node("base", "a", "setup", t=1, metric=1.50),
        node("best", "a", "base", t=2, metric=1.00),
        node("second", "b", "base", t=3, metric=second),
        node("third", "c", "base", t=4, metric=1.02),
        *(node(f"try{i}", "bc"[i % 2], "best", t=5 + i, metric=1.10 + i / 100) for i in range(6)),
        verify("check", "org", "best", "confirmed", t=12),
    ]
    return table(rows)


def exploit_of(params):
    result = analyze(worked_leader_project(), config=AnalyzeConfig(tolerance=0.001, ucb=params))
    return result.slots["exploit"].suggestions


def test_exploit_by_quality_puts_the_best_first_though_it_has_follow_ons():
    by_ucb = [s.sha for s in exploit_of(UcbParams())]
    by_quality = exploit_of(UcbParams.from_mapping(QUALITY))
    assert by_ucb.index(sha("second")) < by_ucb.index(sha("best"))  # the paper: untouched leaders first
    assert [s.sha for s in by_quality] == [sha("best"), sha("second")]  # the pool: quality >= exploit_q
    assert by_quality[0].follow_ons >= 6 and by_quality[0].status == "confirmed"
    assert by_quality[0].ucb < by_quality[1].ucb  # U is still computed and shown, just not the order


def test_exploit_by_quality_breaks_ties_by_verification_then_follow_ons():
    from git_agora.frontier.ucb import by_quality

    frame = build_frame(worked_leader_project(second=1.00), tolerance=0.001)  # level, unconfirmed, untouched
    order = [frame.rows([int(i)])[0]["sha"] for i in by_quality(frame, frame.buildable.nonzero()[0])]
    assert order[:2] == [sha("best"), sha("second")]


def test_exploit_rank_needs_the_format_and_a_known_value():
    with pytest.raises(ValueError, match="need format = 2"):
        UcbParams.from_mapping({"exploit_rank": "quality"})
    with pytest.raises(ValueError, match="exploit_rank must be one of ucb, quality"):
        UcbParams.from_mapping({"format": 2, "exploit_rank": "best"})
    params = UcbParams.from_mapping(QUALITY)
    assert UcbParams.from_mapping(params.to_dict()) == params and "exploit_rank" not in UcbParams().to_dict()
