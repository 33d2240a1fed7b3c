"""`[eval] comparable_on`: push --check keeps the declared output fields (strings too), and
`analyze` and `show` warn when results measured on different data are compared."""

from __future__ import annotations

import pytest

from agora_testing import agora, make_clone

SCORE = """import json, os
order = int(open("model.py").read().split("=")[1])
data = os.environ.get("AGORA_TEST_DATA", "aaaaaaaaaaaaaaaaaaaa")
print(json.dumps({"bpb": round(3.0 / order, 6), "data_sha256": data, "data_source": "stand-in", "texts": 8}))
"""
TOML = """[project]
name = "cmp"

[metric]
name = "bpb"
direction = "min"
tolerance = 0.001

[eval]
format = 2
command = "python3 score.py"
files = ["score.py"]
comparable_on = ["data_sha256"]
output = ["bpb", "data_sha256", "data_source", "texts"]
env = ["AGORA_TEST_DATA"]  # the sandbox passes only the variables the setup names
"""


@pytest.fixture
def cmp_project(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "score.py").write_text(SCORE)
    (a / "agora.toml").write_text(TOML)
    (a / "model.py").write_text("order = 2\n")
    agora(a, "init")
    return a


def push_checked(clone, order: int, monkeypatch, data: str | None = None) -> str:
    if data:
        monkeypatch.setenv("AGORA_TEST_DATA", data)
    else:
        monkeypatch.delenv("AGORA_TEST_DATA", raising=False)
    (clone / "model.py").write_text(f"order = {order}\n")
    return agora(clone, "push", "--check", "-m", f"order {order}", "--tag", "result", "--json").json()["sha"]


def test_push_check_records_the_declared_fields_strings_too(cmp_project, monkeypatch):
    sha = push_checked(cmp_project, 3, monkeypatch)
    check = agora(cmp_project, "show", sha, "--json").json()["metadata"]["check"]
    assert check["output"] == {"bpb": 1.0, "data_sha256": "a" * 20, "data_source": "stand-in", "texts": 8}
    assert check["measured"] == {"bpb": 1.0, "texts": 8.0}


def test_analyze_and_show_warn_when_compared_results_differ_in_data(cmp_project, monkeypatch):
    same = push_checked(cmp_project, 3, monkeypatch)
    best = push_checked(cmp_project, 4, monkeypatch)
    quiet = agora(cmp_project, "analyze", "--summary", "--json").json()["summary"]
    assert quiet["incomparable"] == [] and not any("comparable" in n for n in quiet["notes"])
    assert "WARNING" not in agora(cmp_project, "show", same).stdout

    other = push_checked(cmp_project, 5, monkeypatch, data="b" * 20)  # the new best, on other data
    summary = agora(cmp_project, "analyze", "--summary", "--json").json()["summary"]
    assert summary["best"]["sha"] == other
    assert summary["incomparable"][0]["field"] == "data_sha256"
    assert {v["value"]: v["results"] for v in summary["incomparable"][0]["values"]} == {"a" * 20: 2, "b" * 20: 1}
    text = agora(cmp_project, "analyze", "--summary", env={"COLUMNS": "120"}).stdout
    assert "measured under different data_sha256" in text and "not comparable" in text

    shown = agora(cmp_project, "show", best, "--json").json()
    assert shown["compared_with_best"] == other and shown["incomparable"][0]["field"] == "data_sha256"
    warning = [ln for ln in agora(cmp_project, "show", best).stdout.splitlines() if ln.startswith("WARNING")]
    assert warning and f"the best ({other[:12]})" in warning[0] and "data_sha256" in warning[0]
    assert agora(cmp_project, "show", other, "--json").json()["incomparable"] == []  # the best itself
