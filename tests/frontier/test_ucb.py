"""UCB: the exploration constant, the diversity term, and what the slots may suggest."""

from __future__ import annotations

import numpy as np
import pytest
from frontier_tables import everyone, node, random_table, sha, table, verify

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.embeddings import rows_table
from git_agora.frontier.frame import build_frame, inherit_quality
from git_agora.frontier.ucb import UcbParams, exploration_constant, ucb_scores
from tables import direction_vector, vectors_table


def results(values, direction="min", tolerance=1e-3):
    rows = [node("setup", "org", tags=("setup",))]
    rows += [node(f"r{i}", f"a{i}", "setup", t=i + 1, metric=v) for i, v in enumerate(values)]
    return build_frame(table(rows), direction=direction, tolerance=tolerance)


@pytest.mark.parametrize("direction", ["min", "max"])
def test_bunched_metrics_raise_c(direction):
    sign = 1 if direction == "min" else -1
    bunched = [sign * v for v in (1.0, 1.0005, 1.001, 1.002, 1.5)]
    spread = [sign * v for v in (1.0, 1.1, 1.2, 1.3, 1.5)]
    params = UcbParams()
    c_bunched, b_bunched = exploration_constant(results(bunched, direction), params)
    c_spread, b_spread = exploration_constant(results(spread, direction), params)
    assert b_bunched == 0.75 and b_spread == 0.0  # 3 of the 4 others within 3 tolerances of the best
    assert c_bunched == params.c0 * (1 + params.k * 0.75) > c_spread == params.c0


def test_bunching_without_tolerance_uses_the_iqr():
    c_bunched, _ = exploration_constant(results([1.0, 1.0001, 1.0002, 2.0, 3.0, 4.0], tolerance=0.0), UcbParams())
    c_spread, _ = exploration_constant(results([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], tolerance=0.0), UcbParams())
    assert c_bunched > c_spread
    assert exploration_constant(results([1.0]), UcbParams())[1] == 0.0


def test_duplicates_lower_the_diversity_term():
    u = ucb_scores(np.array([0.5, 0.5]), np.array([0, 0]), np.array([0, 3]), 10, 20.0, 0.1)
    assert u[0] - u[1] == pytest.approx(10.0 - 10.0 / 2.0)
    # through the slots: two equal results, one of them with three near-duplicates
    rows = [node("setup", "org", tags=("setup",))]
    vectors = {"setup": direction_vector(15)}
    rows += [node("uniq", "a", "setup", t=1, metric=1.0), node("dup", "b", "setup", t=1, metric=1.0)]
    vectors |= {"uniq": direction_vector(1), "dup": direction_vector(2)}
    for i in range(3):
        rows.append(node(f"copy{i}", "c", "setup", t=2 + i, tags=("insight",)))
        vectors[f"copy{i}"] = direction_vector(2, i + 1)
    result = analyze(table(rows), embeddings=vectors_table(vectors), config=AnalyzeConfig(tolerance=1e-3))
    exploit = {s.sha: s for s in result.slots["exploit"].suggestions}
    assert exploit[sha("dup")].duplicates == 3 and exploit[sha("uniq")].duplicates == 0
    assert exploit[sha("uniq")].ucb > exploit[sha("dup")].ucb
    assert result.slots["exploit"].suggestions[0].sha == sha("uniq")


def forbidden_project():
    """The most attractive nodes are ones that must never be suggested as parents."""
    rows = [
        node("setup", "org", tags=("setup",)),
        node("ok", "a", "setup", t=1, metric=1.0),
        node("bad", "b", "setup", t=2, metric=0.1, valid=False),
        node("wip", "c", "ok", t=3, tags=("wip",), metric=0.2),
        node("endorse", "d", "ok", t=4, tags=("endorsed",)),
        node("refuted", "e", "setup", t=5, metric=0.3),
        verify("v", "a", "refuted", "failed", t=6),
        verify("v2", "b", "ok", "confirmed", t=7),
        node("hyp", "f", "ok", t=8, tags=("hypothesis",)),
        node("mid", "g", "setup", t=9, metric=1.5),
    ]
    return table(rows)


ALLOWED = {sha(n) for n in ("setup", "ok", "hyp", "mid")}


@pytest.mark.parametrize("direction", ["min", "max"])
def test_slots_never_suggest_forbidden_parents(direction):
    contributions = forbidden_project()
    names = ["setup", "ok", "bad", "wip", "endorse", "refuted", "v", "v2", "hyp", "mid"]
    for emb in (None, vectors_table({n: direction_vector(i) for i, n in enumerate(names)})):
        config = AnalyzeConfig(direction=direction, root=everyone(contributions))
        result = analyze(contributions, embeddings=emb, config=config)
        suggested = [s.sha for slot in result.slots.slots for s in slot.suggestions]
        assert suggested and set(suggested) <= ALLOWED
        assert len(suggested) == len(set(suggested))  # a node is in at most one slot
    best = result.slots["exploit"].suggestions[0]
    assert best.sha == sha("ok" if direction == "min" else "mid") and best.quality == 1.0


def test_slots_on_a_random_history_respect_the_rules():
    contributions = random_table(400, seed=3)
    rng = np.random.default_rng(0)
    shas = contributions["sha"].to_pylist()
    emb = rows_table(shas, "random", rng.normal(size=(len(shas), 8)).astype(np.float32))
    result = analyze(contributions, embeddings=emb, config=AnalyzeConfig(tolerance=0.01))
    frame = result.frame
    allowed = set(np.asarray(frame.table["sha"].to_pylist())[frame.buildable])
    suggested = [s for slot in result.slots.slots for s in slot.suggestions]
    assert len(suggested) == 9 and all(s.sha in allowed for s in suggested)
    assert all(s.follow_ons == 0 for s in result.slots["explore_novel"].suggestions)
    assert all(s.cluster_size <= 3 for s in result.slots["explore_known"].suggestions)


def test_quality_is_inherited_along_first_parents():
    q = np.array([np.nan, 0.8, np.nan, np.nan, 0.2, np.nan])
    first = np.array([-1, 0, 1, 2, 3, 5 - 5])
    assert inherit_quality(q, first).tolist() == [0.0, 0.8, 0.8, 0.8, 0.2, 0.0]


def test_params_from_agora_toml_section():
    params = UcbParams.from_mapping({"c0": 5, "d": 0.5, "per_slot": 2})
    assert params.c0 == 5.0 and params.d == 0.5 and params.per_slot == 2 and params.k == UcbParams().k
    with pytest.raises(ValueError, match="unknown"):
        UcbParams.from_mapping({"c": 1})
    result = analyze(forbidden_project(), config=AnalyzeConfig(ucb=params))
    assert all(len(slot.suggestions) <= 2 for slot in result.slots.slots)


def test_no_metric_means_q_zero_and_a_note():
    rows = [node("setup", "org", tags=("setup",)), node("i", "a", "setup", t=1, tags=("insight",))]
    result = analyze(table(rows))
    assert result.slots["exploit"].suggestions == () and "no metric" in result.slots["exploit"].note
    suggested = [s for slot in result.slots.slots for s in slot.suggestions]
    assert suggested and all(s.quality == 0.0 and s.quality_source == "none" for s in suggested)
    assert any("no valid contribution reports" in n for n in result.summary.notes)


def test_suggested_ucb_is_the_formula():
    contributions = random_table(200, seed=7)
    result = analyze(contributions, config=AnalyzeConfig(tolerance=0.01))
    frame, slots = result.frame, result.slots
    lookup = {s: i for i, s in enumerate(frame.table["sha"].to_pylist())}
    assert slots.n_total == frame.n - int(frame.weightless.sum()) > 0  # N leaves out weightless verdicts
    for s in (s for slot in slots.slots for s in slot.suggestions):
        node = lookup[s.sha]
        rho = np.array([-1 if s.duplicates is None else s.duplicates])
        expected = ucb_scores(
            frame.q_inherited[[node]], np.array([s.follow_ons]), rho, slots.n_total, slots.exploration_c, slots.params.d
        )
        assert s.ucb == pytest.approx(float(expected[0]))
