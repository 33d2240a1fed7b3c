"""analyze(): one JSON-able result; empty projects, no metric, config from agora.toml."""

from __future__ import annotations

import json

import pytest
from frontier_tables import everyone, node, random_table, sha, table, verify

from git_agora.config import ProjectConfig
from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.views import VIEW_NAMES
from tables import direction_vector, vectors_table


def dumps(result) -> str:
    return json.dumps(result.to_dict(), allow_nan=False)


def small():
    return table(
        [
            node("setup", "org", tags=("setup",)),
            node("a", "ann", "setup", t=1, metric=2.0),
            node("b", "bob", "a", t=2, metric=1.5),
            verify("v", "cid", "b", "confirmed", t=3),
            node("h", "ann", "b", t=4, tags=("hypothesis",)),
            node("bad", "eve", "b", t=5, metric=0.1, valid=False),
        ]
    )


def test_result_has_every_part_and_is_json():
    contributions = small()
    config = AnalyzeConfig(metric="bpb", tolerance=0.01, limit=5, root=everyone(contributions))
    result = analyze(contributions, config=config)
    data = json.loads(dumps(result))
    assert list(data) == ["summary", "slots", "views", "diversity", "references", "claims"]
    summary = data["summary"]
    assert list(summary)[0] == "warning" and summary["warning"] is None
    assert (summary["contributions"], summary["valid"], summary["rejected"], summary["results"]) == (6, 5, 1, 2)
    assert summary["best"]["sha"] == sha("b") and summary["best"]["status"] == "confirmed"
    assert list(data["views"]) == list(VIEW_NAMES)
    assert [s["name"] for s in data["slots"]["slots"]] == ["exploit", "explore_known", "explore_novel"]
    assert all(s["reason"] for slot in data["slots"]["slots"] for s in slot["suggestions"])
    assert data["diversity"]["available"] is False and data["diversity"]["histogram"]["counts"]


def test_view_selection_and_limit():
    result = analyze(small(), config=AnalyzeConfig(views=("leaders", "rejected"), limit=1))
    assert list(result.views) == ["leaders", "rejected"] and len(result.views["leaders"].rows) == 1


@pytest.mark.parametrize("rows", [[node("setup", "org", tags=("setup",))], []])
def test_empty_project(rows):
    contributions = table(rows)
    emb = vectors_table({"setup": direction_vector(0)}) if rows else None
    result = analyze(contributions, embeddings=emb)
    data = json.loads(dumps(result))
    assert data["summary"]["best"] is None and data["summary"]["notes"]
    assert all(
        view["rows"] == []
        for name, view in data["views"].items()
        if name not in ("recent", "leaves", "tags", "contributors")
    )
    if rows:  # the only thing to do is build on the setup
        novel = result.slots["explore_novel"].suggestions
        assert [s.sha for s in novel] == [sha("setup")]


def test_config_from_project_toml():
    project = ProjectConfig.parse(
        '[metric]\nname = "bpb"\ndirection = "max"\ntolerance = 0.5\n[ucb]\nc0 = 7\nper_slot = 1\n'
    )
    config = AnalyzeConfig.from_project(project, limit=3)
    assert (config.metric, config.direction, config.tolerance, config.limit) == ("bpb", "max", 0.5, 3)
    assert config.ucb.c0 == 7.0 and config.ucb.per_slot == 1
    result = analyze(small(), config=config)
    assert result.summary.best.sha == sha("a") and result.slots.params.c0 == 7.0


def test_random_history_with_embeddings():
    contributions = random_table(300, seed=5)
    names = [f"n{i}" for i in range(300)]
    emb = vectors_table({n: direction_vector(i % 7, i) for i, n in enumerate(names)})
    result = analyze(contributions, embeddings=emb, config=AnalyzeConfig(tolerance=0.005))
    assert result.diversity.available and result.diversity.count >= 7
    dumps(result)
