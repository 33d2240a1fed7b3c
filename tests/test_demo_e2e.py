"""`git agora demo` runs to the end and leaves a project that passes the index check."""

import random
import re

import pytest

from agora_testing import agora, git
from git_agora.demo import worker as demo_worker
from git_agora.demo.choices import Change, propose, read_choices, write_choice


def test_choices_are_read_and_changed_one_knob_at_a_time():
    import random

    text = 'ORDER = 2  # context\nMETHOD = "additive"  # m\nINTERPOLATE = False\n'
    values = read_choices(text)
    assert values == {"ORDER": 2, "METHOD": "additive", "INTERPOLATE": False}
    change = propose({**values, "DISCOUNT": 0.5, "ADDITIVE_ALPHA": 1.0, "LOWERCASE": False}, random.Random(1))
    assert change.old != change.new
    assert read_choices(write_choice(text, "ORDER", 5))["ORDER"] == 5
    assert "# context" in write_choice(text, "ORDER", 5)


def test_the_demo_never_writes_an_insight_for_an_unchanged_score(tmp_path, monkeypatch):
    posted = []
    monkeypatch.setattr(demo_worker.agora, "post", lambda project, text, tags: posted.append((tags, text)))
    worker = demo_worker.Worker(tmp_path, "ada", random.Random(0))
    monkeypatch.setattr(worker, "project", lambda: None)
    monkeypatch.setattr(worker.rng, "random", lambda: 0.0)  # the insight branch whenever it is allowed
    change = Change("DISCOUNT", 0.5, 0.7)
    worker.share_thought(change, 3.0481, 3.0481)
    worker.share_thought(change, 3.0481, 3.0481 + 5e-7)  # within the tolerance: unchanged
    worker.share_thought(change, 3.0481, 2.9)
    assert [tags for tags, _ in posted] == [["hypothesis"], ["hypothesis"], ["insight"]]
    assert "helped (3.0481 -> 2.9000)" in posted[2][1]


def results_of(founder):
    """Scored results per worker account (the baseline is the founder's)."""
    stats = agora(founder, "analyze", "--json", "--view", "contributors").json()["views"]["contributors"]["rows"]
    return {row["account"]: row["results"] for row in stats if row["account"] != "founder"}


@pytest.mark.slow
def test_demo_small_run(tmp_path):
    directory = tmp_path / "demo"
    result = agora(
        tmp_path, "demo", "--workers", "2", "--rounds", "2", "--dir", str(directory), "--seed", "3", timeout=600
    )
    assert "index ok" in result.stdout
    assert "Where to work next" in result.stdout
    assert "lineage of" in result.stdout
    assert "Prediction calibration" in result.stdout  # the workers push with --predict
    founder = directory / "founder"
    calibration = agora(founder, "analyze", "--json", "--view", "calibration").json()["views"]["calibration"]
    predicted = {row["account"]: row["predicted"] for row in calibration["rows"]}
    assert predicted["founder"] == 0 and all(predicted[a] == row for a, row in results_of(founder).items())
    rows = agora(founder, "log", "--limit", "1000", "--json").json()
    accounts = {r["account"] for r in rows}
    assert {"founder", "ada", "ben"} <= accounts
    by_sha = {r["sha"]: r for r in rows}
    verifications = [r for r in rows if r["verdict"]]
    for v in verifications:
        assert by_sha[v["target"]]["account"] != v["account"]
    assert agora(founder, "log", "--rejected", "--json").json() == []
    agora(founder, "index", "--check")
    command = next(line for line in result.stdout.splitlines() if line.startswith("See the map:"))
    args = command.split("git agora ", 1)[1].split("   ")[0].split()
    assert args[-1] == "--open" and args[:3] == ["-C", str(founder), "site"]
    agora(tmp_path, *args[:-1])  # the printed command, less opening a browser
    assert (directory / "site" / "index.html").is_file()

    refused = agora(tmp_path, "demo", "--dir", str(tmp_path), check=False)
    assert refused.returncode == 1 and "not empty and not an earlier demo" in refused.stderr


@pytest.mark.slow
def test_demo_at_default_size_publishes_only_real_changes_that_verify(tmp_path):
    directory = tmp_path / "demo"
    result = agora(tmp_path, "demo", "--dir", str(directory), timeout=600)
    assert "every scored result holds" in result.stdout
    founder, worker = directory / "founder", directory / "worker-ada"
    rows = agora(founder, "log", "--tag", "result", "--limit", "1000", "--json").json()
    for row in rows:
        parent_tree = git(founder, "rev-parse", f"{row['parents'][0]}^{{tree}}")
        reruns = agora(founder, "show", row["sha"], "--json").json()["metadata"].get("rerun") is True
        assert reruns or git(founder, "rev-parse", f"{row['sha']}^{{tree}}") != parent_tree, row["title"]
    analysis = agora(founder, "analyze", "--json").json()
    stats = agora(founder, "stats", "--json").json()
    for insight in agora(founder, "log", "--tag", "insight", "--limit", "1000", "--json").json():
        before, after = re.search(r"\(([\d.]+) -> ([\d.]+)\)", insight["title"]).groups()
        assert before != after, insight["title"]
    assert stats["scored_results"] == analysis["summary"]["results"] == len(rows)
    assert stats["best_sha"] == analysis["summary"]["best"]["sha"]
    agora(worker, "fetch")
    for row in rows:
        verifier = founder if row["account"] != "founder" else worker
        verdict = agora(verifier, "verify", row["sha"], "--no-publish", "--json").json()
        assert verdict["verdict"] == "confirmed", (row["title"], verdict["reason"])
