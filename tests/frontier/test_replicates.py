"""Replicates in the slots (`[ucb] format = 2`, `replicate_within`): a leader's standing is the mean of
its draws, a lead within noise asks for a replicate, replicates are never parents, and the setting is
off by default and refused without its format."""

from __future__ import annotations

import pytest
from frontier_tables import node, sha, table, verify

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.ucb import UcbParams

REPLICATING = UcbParams.from_mapping({"format": 2, "replicate_within": 2.0, "replicates": 1, "exploit_q": 0.4})


def noisy_project(extra=()):
    """Two leaders within the 0.01 tolerance of each other (lucky 0.995 and honest 1.0), one far behind;
    `lucky` was then replicated once and drew 1.02."""
    rows = [node("setup", "org", tags=("setup",))]
    rows += [
        node("lucky", "a", "setup", t=1, metric=0.995),
        node("honest", "b", "setup", t=2, metric=1.0),
        node("far", "c", "setup", t=3, metric=1.3),
        *extra,
    ]
    return table(rows)


def exploit(contributions, params):
    result = analyze(contributions, config=AnalyzeConfig(tolerance=0.01, ucb=params))
    return {s.sha: s for s in result.slots["exploit"].suggestions}, result


def test_off_by_default_replicates_are_ordinary_results():
    suggestions, _ = exploit(noisy_project(), UcbParams())
    assert all(s.action == "build" and s.replicates is None for s in suggestions.values())
    assert "format" not in UcbParams().to_dict() and "replicate_within" not in UcbParams().to_dict()


def test_leaders_within_noise_are_asked_for_a_replicate():
    suggestions, _ = exploit(noisy_project(), REPLICATING)
    assert suggestions[sha("lucky")].action == "replicate" and suggestions[sha("honest")].action == "replicate"
    assert "replicate it under another seed" in suggestions[sha("lucky")].reason
    assert suggestions[sha("lucky")].replicates == 0


def test_a_replicate_joins_its_original_and_is_no_parent():
    replicate = node("lucky-again", "a", "lucky", t=4, metric=1.02, tags=("result", "replicate"))
    suggestions, result = exploit(noisy_project([replicate]), REPLICATING)
    everything = {s.sha for slot in result.slots.slots for s in slot.suggestions}
    assert sha("lucky-again") not in everything  # build on the original, never on its replicate
    lucky, honest = suggestions[sha("lucky")], suggestions[sha("honest")]
    assert lucky.metric == pytest.approx((0.995 + 1.02) / 2) and lucky.replicates == 1
    assert honest.quality > lucky.quality  # the honest 1.0 now leads the lucky draw's mean 1.0075
    assert lucky.action == "build"  # replicated enough (replicates = 1)
    assert honest.action == "replicate"  # still within noise of the best, never replicated


def test_a_lone_leader_is_not_replicated():
    rows = [node("setup", "org", tags=("setup",)), node("only", "a", "setup", t=1, metric=1.0)]
    rows.append(node("far", "b", "setup", t=2, metric=1.5))
    suggestions, _ = exploit(table(rows), REPLICATING)
    assert suggestions[sha("only")].action == "build"


def test_the_format_guards_the_new_keys():
    with pytest.raises(ValueError, match="need format = 2"):
        UcbParams.from_mapping({"replicate_within": 1.0})
    with pytest.raises(ValueError, match="needs a newer git-agora"):
        UcbParams.from_mapping({"format": 4})
    with pytest.raises(ValueError, match="positive integer"):
        UcbParams.from_mapping({"format": "2"})
    assert REPLICATING.to_dict()["format"] == 2 and REPLICATING.to_dict()["replicate_within"] == 2.0
    assert UcbParams.from_mapping(REPLICATING.to_dict()) == REPLICATING


def test_a_replicate_of_a_replicate_is_another_draw_of_the_first_original():
    again = node("lucky-again", "a", "lucky", t=4, metric=1.02, tags=("result", "replicate"))
    third = node("lucky-third", "a", "lucky-again", t=5, metric=1.0, tags=("result", "replicate"))
    suggestions, result = exploit(noisy_project([again, third]), REPLICATING)
    lucky = suggestions[sha("lucky")]
    assert lucky.replicates == 2 and lucky.metric == pytest.approx((0.995 + 1.02 + 1.0) / 3)
    everything = {s.sha for slot in result.slots.slots for s in slot.suggestions}
    assert not everything & {sha("lucky-again"), sha("lucky-third")}


def test_another_accounts_replicate_counts_only_once_confirmed():
    """Nobody moves a rival's standing with an unchecked draw: mallory's replicate of honest (1.3, never
    measured) is no parent and weighs nothing until someone with standing confirms it."""
    fake = node("fake", "mallory", "honest", t=4, metric=1.3, tags=("result", "replicate"))
    suggestions, result = exploit(noisy_project([fake]), REPLICATING)
    assert suggestions[sha("honest")].metric == pytest.approx(1.0) and suggestions[sha("honest")].replicates == 0
    assert sha("fake") not in {s.sha for slot in result.slots.slots for s in slot.suggestions}
    confirmed = verify("check", "org", "fake", "confirmed", t=5)
    suggestions, _ = exploit(noisy_project([fake, confirmed]), REPLICATING)
    assert suggestions[sha("honest")].replicates == 1 and suggestions[sha("honest")].metric == pytest.approx(1.15)


def test_the_summary_best_is_the_best_mean_when_replicates_count():
    replicate = node("lucky-again", "a", "lucky", t=4, metric=1.05, tags=("result", "replicate"))
    _, plain = exploit(noisy_project([replicate]), UcbParams())
    _, counting = exploit(noisy_project([replicate]), REPLICATING)
    assert plain.summary.best.sha == sha("lucky")  # off: the lucky single draw 0.995 leads
    best = counting.summary.best
    assert best.sha == sha("honest") and best.metric == pytest.approx(1.0)  # lucky's mean is 1.0225
    assert any("by its mean over draws" in note for note in counting.summary.notes)


def test_exploit_by_quality_ranks_leaders_by_the_mean_of_their_draws():
    """`exploit_rank = "quality"` is noise-aware where replicates count: the lucky draw, replicated to a
    worse mean, falls behind the honest leader; without replicates counting it leads on its one draw."""
    replicate = node("lucky-again", "a", "lucky", t=4, metric=1.02, tags=("result", "replicate"))
    quality = {"format": 2, "exploit_rank": "quality", "exploit_q": 0.4}
    by_mean, _ = exploit(noisy_project([replicate]), UcbParams.from_mapping({**quality, "replicate_within": 2.0}))
    by_draw, _ = exploit(noisy_project([replicate]), UcbParams.from_mapping(quality))
    assert list(by_mean)[:2] == [sha("honest"), sha("lucky")]
    assert list(by_draw)[0] == sha("lucky")
