"""`push --predict` / `post --predict` and analyze's calibration view, through the real command."""

from agora_testing import agora, git


def log_tip(clone, account):
    return git(clone, "for-each-ref", "--format=%(objectname)", f"refs/agora/log/{account}").strip()


def push(clone, value, band, account):
    (clone / "model.py").write_text(f"value = {value}\n")
    args = ["push", "-m", f"{account} measured {value}", "--tag", "result", "--metric", f"bpc={value}"]
    return agora(clone, *args, "--predict", band, "--account", account, "--json").json()["sha"]


def test_predictions_are_recorded_and_calibrated_per_account(project):
    # bpc, lower is better, tolerance 0.01. alice: two inside, one beyond (better); bob: short five times
    first = push(project, 2.5, "2.4..2.6", "alice")
    push(project, 2.45, "2.4..2.6", "alice")
    push(project, 2.0, "2.2..2.4", "alice")
    for i in range(5):
        push(project, 3.0 + i / 10, "2.0..2.5", "bob")
    agora(project, "post", "-m", "order 6 should help", "--tag", "hypothesis", "--predict", "1.9..2.1")

    shown = agora(project, "show", first, "--json").json()
    assert shown["metadata"] == {"prediction": [2.4, 2.6]}
    assert 'Agora-Meta: {"prediction":[2.4,2.6]}' in git(project, "cat-file", "commit", first)

    data = agora(project, "analyze", "--json", "--view", "calibration", "--model", "hashing").json()
    rows = {row["account"]: row for row in data["views"]["calibration"]["rows"]}
    assert set(rows) == {"alice", "bob"}  # the setup's account has no scored result; a hypothesis is not one
    alice, bob = rows["alice"], rows["bob"]
    assert (alice["results"], alice["predicted"], alice["inside"], alice["short"], alice["beat"]) == (3, 3, 2, 0, 1)
    assert (bob["results"], bob["predicted"], bob["inside"], bob["short"], bob["beat"]) == (5, 5, 0, 5, 0)
    assert abs(alice["inside_share"] - 2 / 3) < 1e-9 and bob["inside_share"] == 0
    assert abs(alice["mean_error"] - (0.0 - 0.05 - 0.3) / 3) < 1e-9  # measured - band midpoint
    assert abs(bob["mean_error"] - 0.95) < 1e-9  # 3.0..3.4 (mean 3.2) against a midpoint of 2.25
    assert bob["over_optimistic"] and not alice["over_optimistic"]
    summary = data["summary"]
    assert summary["over_optimistic"] == ["bob"] and summary["calibration"]["predicted"] == 8
    assert any(note.startswith("bob: predictions are systematically over-optimistic") for note in summary["notes"])

    text = agora(project, "analyze", "--model", "hashing", env={"COLUMNS": "100"}).stdout
    words = " ".join(text.split())
    assert "note: bob: predictions are systematically over-optimistic: 5 of 5 predicted results fell short" in words
    table = text.split("Prediction calibration (2)", 1)[1].splitlines()
    assert table[1].split() == ["account", "results", "predicted", "inside_share", "mean_error", "short", "beat"] + [
        "over_optimistic"
    ]
    assert table[2].split() == ["bob", "5", "5", "0%", "+0.95", "5", "0", "yes"]  # most predictions first
    assert table[3].split() == ["alice", "3", "3", "67%", "-0.1167", "0", "1", "no"]


def test_a_bad_band_is_refused_in_one_line_and_nothing_is_published(project):
    (project / "model.py").write_text("value = 2\n")
    before = log_tip(project, "alice")
    for args, says in [
        (("push", "--tag", "result", "--predict", "3.0..2.6"), "the low end exceeds the high end"),
        (("push", "--tag", "result", "--predict", "2.6-3.0"), "is not a band LOW..HIGH"),
        (("push", "--tag", "result", "--predict", "1..inf"), "is not a band LOW..HIGH"),
        (("post", "--tag", "insight", "--predict", "high..low"), "is not a band LOW..HIGH"),
        (("post", "--tag", "insight", "--meta", "prediction=[3, 1]"), "--meta prediction=[3, 1] is not a band"),
        (("post", "--tag", "insight", "--predict", "1..2", "--meta", "prediction=[1, 3]"), "two different"),
    ]:
        result = agora(project, *args, "-m", "x", check=False)
        assert result.returncode == 1, args
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("git agora: error: "), result.stderr
        assert says in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""
    assert log_tip(project, "alice") == before
