"""Views: noise-aware leaders in both directions, graph views, validity, selection, search."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from frontier_tables import everyone, node, sha, table, verify

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.frame import build_frame, quality, rank_counts
from git_agora.frontier.search import search
from git_agora.frontier.views import (
    REGISTRY,
    VIEW_NAMES,
    ViewParams,
    best,
    best_of_each,
    compute_views,
    noise_aware_ranks,
    ranked_by_metric,
)
from tables import MODEL, direction_vector, vectors_table


def project():
    return [
        node("setup", "org", tags=("setup",)),
        node("a", "ann", "setup", t=1, metric=1.000),
        node("b", "bob", "a", t=2, metric=0.9995),  # within tolerance of a: not a new best
        node("c", "cid", "a", t=3, metric=0.990),  # a real gain
        node("d", "dan", "c", t=4, metric=1.100),
        node("h", "ann", "c", t=5, tags=("hypothesis",)),
        node("w", "bob", "c", t=6, tags=("wip",)),
        node("x", "eve", "c", t=7, metric=0.100, valid=False),  # invalid: counts nowhere but rejected
        verify("v1", "bob", "c", "confirmed", t=8),
        verify("v2", "dan", "c", "failed", t=9),
        verify("v3", "eve", "d", "failed", t=10),
    ]


def frame(rows=None, direction="min", tolerance=1e-3):
    contributions = table(project() if rows is None else rows)
    return build_frame(contributions, direction=direction, tolerance=tolerance, root=everyone(contributions))


def names(view):
    return [r["title"] for r in view.rows]


def test_leaders_min_noise_aware():
    views = compute_views(frame(), limit=10)
    leaders = views["leaders"]
    assert names(leaders) == ["c", "b", "a"]  # d failed verification, x invalid
    assert [r["rank"] for r in leaders.rows] == [1, 2, 2]  # a and b are within the tolerance
    assert [r["new_best"] for r in leaders.rows] == [True, False, True]
    assert best(frame()).title == "c"


def test_leaders_max_ranks_the_other_way():
    f = frame(direction="max")
    leaders = compute_views(f)["leaders"]
    assert names(leaders) == ["a", "b", "c"]
    assert [r["rank"] for r in leaders.rows] == [1, 1, 3]
    # in time order: a is the first best; b (-0.0005) and c are no gains
    assert [r["new_best"] for r in leaders.rows] == [True, False, False]
    assert best(f).title == "a" and best(f).ties == 1


def test_gain_below_tolerance_is_not_a_new_best():
    rows = [
        node("s", "o", tags=("setup",)),
        node("a", "x", "s", t=1, metric=1.0),
        node("b", "y", "a", t=2, metric=0.9992),
    ]
    assert best(frame(rows, tolerance=1e-3)).title == "a"
    assert best(frame(rows, tolerance=1e-4)).title == "b"


def test_noise_aware_ranks_anchor_on_group_best():
    losses = np.array([0.0, 0.5, 1.0, 1.6, 5.0])
    assert noise_aware_ranks(losses, 1.0, 10).tolist() == [1, 1, 1, 4, 5]
    assert noise_aware_ranks(losses, 0.0, 2).tolist() == [1, 2]


def test_quality_percentile_direction_aware():
    metric = np.array([3.0, 1.0, 2.0, np.nan])
    scored = ~np.isnan(metric)
    assert quality(metric, scored, "min")[:3].tolist() == [0.0, 1.0, 0.5]
    assert quality(metric, scored, "max")[:3].tolist() == [1.0, 0.0, 0.5]
    assert np.isnan(quality(metric, scored, "min")[3])


def test_graph_views():
    views = compute_views(frame())
    assert set(names(views["leaves"])) == {"b", "d", "h", "w"}
    assert names(views["open_hypotheses"]) == ["h"]
    assert names(views["unverified"]) == ["b", "a"]  # best first
    assert names(views["contested"]) == ["c"]
    assert views["contested"].rows[0]["confirmations"] == 1
    built = {r["title"]: r for r in views["built_on"].rows}
    assert built["c"]["score"] == 10.0  # d +5, h +5, w 0, v1 +20, v2 -20
    assert names(views["built_on"])[:2] == ["a", "c"]  # a: b +5, c +5; equal score, more descendants
    assert names(views["recent"])[0] == "v3"
    per_account = ("tags", "contributors", "calibration", "rejected")
    assert "x" not in sum((names(v) for n, v in views.items() if n not in per_account), [])


def test_rejected_tags_contributors():
    views = compute_views(frame())
    assert [r["sha"] for r in views["rejected"].rows] == [sha("x")]
    assert views["rejected"].rows[0]["reasons"] == ["test"]
    tags = {r["tag"]: r["count"] for r in views["tags"].rows}
    assert tags["result"] == 4 and tags["verification"] == 3
    people = {r["account"]: r for r in views["contributors"].rows}
    assert "eve" in people and people["eve"]["contributions"] == 1  # only the valid verification
    assert people["cid"]["verifications_received"] == 2 and people["cid"]["best_metric"] == 0.990
    assert people["bob"]["verifications_given"] == 1 and people["bob"]["results"] == 1


def test_selection_limit_and_json():
    views = compute_views(frame(), limit=1, names=["leaders", "recent"])
    assert list(views) == ["leaders", "recent"]
    assert all(len(v.rows) <= 1 for v in views.values()) and views["recent"].total == 10
    json.dumps({k: v.to_dict() for k, v in compute_views(frame()).items()}, allow_nan=False)
    with pytest.raises(ValueError):
        compute_views(frame(), names=["nope"])


def test_empty_project_views():
    for rows in ([node("setup", "org", tags=("setup",))], []):
        views = compute_views(frame(rows))
        assert list(views) == list(VIEW_NAMES)
        assert views["leaders"].rows == () and views["leaders"].note
        json.dumps({k: v.to_dict() for k, v in views.items()}, allow_nan=False)


def test_search_by_vector_and_keywords():
    rows = [
        node("setup", "org", tags=("setup",)),
        node("warmup schedule", "ann", "setup", t=1),
        node("bigger batch", "bob", "setup", t=2),
        node("warmup again", "cid", "setup", t=3, valid=False),
    ]
    contributions = table(rows)
    emb = vectors_table(
        {
            "warmup schedule": direction_vector(1),
            "bigger batch": direction_vector(2),
            "warmup again": direction_vector(1, 1),
        }
    )
    hits = search(np.array(direction_vector(1, 2)), contributions, emb, k=2)
    assert hits.method == "embedding" and hits.model == MODEL
    assert [h.title for h in hits.hits][0] == "warmup schedule" and hits.hits[0].score > 0.9
    assert all(h.title != "warmup again" for h in hits.hits)  # invalid rows are not found
    words = search("Warmup", contributions, None, k=5)
    assert words.method == "keyword" and [h.title for h in words.hits] == ["warmup schedule"]


def test_registry_is_the_one_list_of_views():
    assert VIEW_NAMES == (
        "leaders",
        "built_on",
        "leaves",
        "promising",
        "unverified",
        "contested",
        "verdicts",
        "earlier_epoch",
        "open_hypotheses",
        "recent",
        "tags",
        "contributors",
        "calibration",
        "rejected",
    )
    views = compute_views(frame())
    assert {name: view.title for name, view in views.items()} == {name: spec.title for name, spec in REGISTRY.items()}


def test_cli_view_choices_follow_the_registry():
    from git_agora.cli.analyze import command

    view_option = next(p for p in command.params if p.name == "views")
    assert tuple(view_option.type.choices) == VIEW_NAMES


def test_the_columns_of_every_view_are_fields_of_its_rows():
    from git_agora.frontier.checked import mark_rows
    from git_agora.frontier.columns import OVERVIEW_COLUMNS, TABLE_COLUMNS

    views = compute_views(frame(), params=ViewParams(promising_q=0.0, few_follow_ons=99))
    contributions = table(project())  # every row judged by a policy outside the current epoch:
    earlier = build_frame(contributions, root=replace(everyone(contributions), epoch=frozenset({"p" * 40})))
    views["earlier_epoch"] = compute_views(earlier, names=["earlier_epoch"])["earlier_epoch"]
    assert tuple(TABLE_COLUMNS) == VIEW_NAMES and set(OVERVIEW_COLUMNS) <= set(VIEW_NAMES)
    for name, view in views.items():
        assert view.rows, name
        marked = mark_rows(view, set())  # `checked` is analyze's mark on rows with a metric (frontier.checked)
        assert set(TABLE_COLUMNS[name]) | set(OVERVIEW_COLUMNS.get(name, ())) <= set(marked.rows[0]), name


def test_follow_ons_mean_the_same_in_views_and_ucb():
    # h1 has only a wip child (not follow-on work) -> still open; h2's wip child has a result on it ->
    # h2 has one follow-on (through the wip). r1 is confirmed by someone else: the verification is
    # follow-on work, so r1 is no leaf; r2's only child is a failed verification: still a leaf.
    rows = [
        node("setup", "org", tags=("setup",)),
        node("h1", "ann", "setup", t=1, tags=("hypothesis",)),
        node("w1", "bob", "h1", t=2, tags=("wip",)),
        node("h2", "ann", "setup", t=3, tags=("hypothesis",)),
        node("w2", "bob", "h2", t=4, tags=("wip",)),
        node("r", "cid", "w2", t=5, metric=1.0),
        node("r1", "dan", "setup", t=6, metric=0.9),
        verify("v1", "eve", "r1", "confirmed", t=7),
        node("r2", "dan", "setup", t=8, metric=0.8),
        verify("v2", "eve", "r2", "failed", t=9),
    ]
    f = frame(rows)
    n = dict(zip(f.table["title"].to_pylist(), f.follow_ons.tolist()))
    assert (n["h1"], n["h2"], n["w2"], n["r1"], n["r2"], n["setup"]) == (0, 1, 1, 1, 0, 6)  # setup: h1 h2 r r1 v1 r2
    views = compute_views(f)
    assert names(views["open_hypotheses"]) == ["h1"]
    assert set(names(views["leaves"])) == {"h1", "w1", "r", "r2"}  # h1: its only child is wip
    contributions = table(rows)
    result = analyze(contributions, config=AnalyzeConfig(root=everyone(contributions)))
    suggested = {s.title: s.follow_ons for slot in result.slots.slots for s in slot.suggestions}
    assert suggested and all(count == n[title] for title, count in suggested.items())


def test_keyword_search_is_the_same_in_chunks(monkeypatch):
    import git_agora.frontier.search as search_module

    words = ("warmup", "batch", "schedule", "low", "rank", "Warm")
    rows = [node("setup", "org", tags=("setup",))]
    rng = np.random.default_rng(2)
    for i in range(40):
        title = " ".join(rng.choice(words, size=rng.integers(1, 4)))
        rows.append(node(f"{title} {i}", f"a{i % 7}", "setup", t=int(rng.integers(1, 20))))
    contributions = table(rows)
    whole = search("warmup rank BATCH", contributions, None, k=15)
    monkeypatch.setattr(search_module, "KEYWORD_CHUNK", 3)
    chunked = search("warmup rank BATCH", contributions, None, k=15)
    assert len(whole.hits) == 15 and chunked == whole


def test_keyword_search_over_a_table_read_without_descriptions_searches_titles():
    """A caller that read no descriptions (they are only needed when keywords are the answer) gets the
    title matches, or none, never a missing-column error: it then reads them and searches again."""
    rows = [node("setup", "org", tags=("setup",)), node("warmup schedule", "ann", "setup", t=1)]
    contributions = table(rows).drop_columns(["description"])
    words = search("Warmup", contributions, None, k=5)
    assert words.method == "keyword" and [h.title for h in words.hits] == ["warmup schedule"]
    assert search("Warmup", contributions.slice(0, 0), None, k=5).hits == ()


@pytest.mark.parametrize("seed", range(8))
def test_each_accounts_best_is_the_first_of_its_results_in_the_full_ranking(seed):
    """`best_of_each` ranks only each account's results at its best value; the answer equals the first of
    the account's results in the ranking of every scored result (ties on value, time and priority, results
    with no finite value, both directions)."""
    rng = np.random.default_rng(seed)
    values = [0.5, 0.5, 0.25, 1.0, float("inf"), float("-inf"), float("nan")]
    rows = [node("setup", "org", tags=("setup",))]
    for i in range(80):
        account = f"acc{rng.integers(0, 9)}"
        metric = values[rng.integers(0, len(values))] if seed % 2 else float(rng.choice([0.5, 0.25, 0.75]))
        rows.append(node(f"r{i}", account, "setup", t=int(rng.integers(0, 6)), metric=metric))
    rows.append(node("only-nan", "nan-only", "setup", t=1, metric=float("nan")))
    for direction in ("min", "max"):
        f = frame(rows, direction=direction)
        accounts = np.asarray(f.table["account"].to_pylist())
        names_ = sorted(set(accounts.tolist()))
        code = np.searchsorted(names_, accounts)
        scored = np.flatnonzero(f.scored)
        everything = ranked_by_metric(f, scored)
        expected = np.full(len(names_), -1)
        for a in range(len(names_)):
            mine = everything[code[everything] == a]
            expected[a] = mine[0] if len(mine) else -1
        assert best_of_each(f, scored, code, len(names_)).tolist() == expected.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_rank_counts_are_the_sorted_searches(seed):
    """`rank_counts` (one argsort) gives what two searches in the sorted values give: ties, -0.0 beside
    0.0, infinities, one value; and with a nan, the searches themselves."""
    rng = np.random.default_rng(seed)
    values = rng.choice([-1.5, -0.0, 0.0, 0.25, 0.25, 2.0, np.inf, -np.inf], size=int(rng.integers(1, 300)))
    values = np.where(rng.random(len(values)) < 0.5, values, np.round(rng.normal(size=len(values)), 1))
    if seed == 5:
        values[::4] = np.nan
    ordered = np.sort(values)
    worse = np.searchsorted(ordered, values, "left")
    equal = np.searchsorted(ordered, values, "right") - worse
    got = rank_counts(values)
    assert got[0].tolist() == worse.tolist() and got[1].tolist() == equal.tolist()
