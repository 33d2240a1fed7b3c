"""The matched-comparison harness (eval/compare): its pure statistics on hand-made inputs, and a tiny
run of all four arms that must produce a sane table, CSV and plot."""

from __future__ import annotations

import csv
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from git_agora.demo.choices import KNOBS, propose

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval.compare import landscape, report, stats  # noqa: E402
from eval.compare.landscape import NOISY_WEIGHTS  # noqa: E402
from eval.compare.tasks import TASKS  # noqa: E402

BASELINE = 3.048076  # the demo's order-2 baseline, bpc


def test_t_interval_of_three_values():
    mean, low, high = stats.t_interval([1.0, 2.0, 3.0])
    half = 4.303 * 1.0 / math.sqrt(3)  # t_{0.975, 2} * sd / sqrt(n)
    assert mean == 2.0
    assert low == pytest.approx(2.0 - half) and high == pytest.approx(2.0 + half)


def test_t_interval_edge_cases():
    assert stats.t_interval([2.5]) == (2.5, 2.5, 2.5)
    assert stats.t_interval([4.0, 4.0, 4.0]) == (4.0, 4.0, 4.0)
    assert all(math.isnan(v) for v in stats.t_interval([]))
    assert stats.t_interval([1.0, float("nan"), 3.0])[0] == 2.0  # a missing value is left out
    assert stats.t_quantile(4) == 2.776 and stats.t_quantile(100) == 1.96
    with pytest.raises(ValueError):
        stats.t_quantile(0)


def test_effective_count_is_exp_entropy_of_cluster_sizes():
    assert stats.effective_count([7]) == pytest.approx(1.0)
    assert stats.effective_count([2, 2, 2]) == pytest.approx(3.0)
    assert stats.effective_count([3, 1]) == pytest.approx(math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25))))
    assert stats.effective_count([3, 0, 1]) == stats.effective_count([3, 1])
    assert stats.effective_count([]) == 0.0


def test_duplicates_count_pairs_across_accounts_only():
    accounts = ["ada", "ben", "ada", "cyd"]
    scores = [2.5, 2.5000004, 2.5, 2.7]
    # ada-ben (within 1e-6), ben-ada; ada-ada is one account; cyd differs
    assert stats.equal_score_pairs(accounts, scores, 1e-6) == 2
    assert stats.equal_score_pairs(accounts, scores, 0.0) == 0  # the only exactly equal pair is ada's own
    choices = ["a", "a", "a", "b"]
    assert stats.identical_choice_pairs(accounts, choices) == 2
    assert stats.identical_choice_pairs(["ada", "ada"], ["a", "a"]) == 0


def test_repeats_first_new_best_and_running_best():
    assert stats.repeats(["x", "y", "x", "base", "y"], ["base"]) == 3
    assert stats.repeats([]) == 0
    assert stats.first_new_best(3.0, [3.0, 3.0000001, 2.9, 2.0]) == 3
    assert stats.first_new_best(3.0, [3.1, 2.9999995], 1e-6) is None
    assert stats.best_so_far(3.0, [3.2, 2.8, 2.9, 2.1]) == [3.0, 2.8, 2.8, 2.1]
    assert stats.unchanged([3.0, 3.0, 2.5], [3.0000005, 2.9, 2.5]) == 2


def test_unchanged_share_reads_parent_scores_from_the_ledger_or_the_baseline():
    ledger = [
        {"sha": "a", "parent": "base", "measured": BASELINE},  # scored as the baseline: unchanged
        {"sha": "b", "parent": "a", "measured": 2.5},
        {"sha": "c", "parent": "b", "measured": 2.5},  # unchanged
        {"sha": None, "parent": "b", "measured": None},  # a crash is not a result
    ]
    assert report.unchanged_share({"baseline": BASELINE, "ledger": ledger}) == pytest.approx(2 / 3)


def test_the_summary_pairs_each_arm_with_agora_on_the_same_seeds():
    def record(arm, seed, true, reached=None, artefact=False):
        return {
            "task": "noisy", "arm": arm, "seed": seed, "workers": 2, "budget": 1, "rounds": 1, "baseline": BASELINE,
            "baseline_true": 1.3, "best": true, "reported_true": true, "reached": reached, "artefact": artefact,
            "equal_score_pairs": 0, "identical_choice_pairs": 1, "repeats": 1, "result_evaluations": 2,
            "evaluations": 2, "effective_clusters": 2.0, "verified_share": 0.5, "verifications": 1, "replicates": 0,
            "wall_s": 3.0, "errors": [],
            "ledger": [{"round": 0, "measured": true, "true": true, "sha": "x", "parent": "base"}],
        }  # fmt: skip

    records = [
        record("agora", 0, 1.0, reached=5),
        record("agora", 1, 1.2),
        record("flat_log", 0, 1.5, artefact=True),
        record("flat_log", 1, 2.1),
    ]
    rows = {r["arm"]: r for r in report.summarize(records)}
    assert list(rows) == ["flat_log", "agora"]
    assert rows["flat_log"]["reported_true"] == pytest.approx(1.8)
    assert rows["flat_log"]["minus_agora"] == pytest.approx(0.7)  # (0.5 + 0.9) / 2
    assert rows["flat_log"]["artefact_share"] == 0.5 and rows["flat_log"]["reached_runs"] == 0
    assert rows["agora"]["reached"] == 5 and rows["agora"]["reached_runs"] == 1
    assert rows["agora"]["repeat_share"] == 0.5
    assert report.best_by_round(records[0], 2) == [1.0, 1.0]
    table = report.markdown(report.summarize(records))
    assert "| Flat log | 1.8000 [" in table and "(reference)" in table and "never (0 of 2 runs)" in table


def test_the_reported_best_merges_replicates_of_one_setting():
    # b's one lucky draw (0.9) is beaten by a's mean over three draws only when they merge
    settings = ["base", "a", "b", "a", "a"]
    measured = [1.3, 1.0, 0.95, 0.9, 0.92]
    assert stats.reported_best(settings, measured) == 1  # a: mean 0.94 < b: 0.95; a's first result
    assert stats.reported_best(["x", "y"], [1.0, 1.0]) == 0  # ties: the earlier
    assert stats.reported_best([], []) is None
    assert stats.first_reaching([1.2, 1.05, 1.0], [1, 3, 7], 1.01) == 7
    assert stats.first_reaching([1.2], [1], 1.0) is None


def test_a_planned_knob_is_changed_unless_it_cannot_be():
    values = {"ORDER": 2, "METHOD": "additive", "DISCOUNT": 0.5, "ADDITIVE_ALPHA": 1.0}
    values |= {"INTERPOLATE": False, "LOWERCASE": False}
    for knob in KNOBS:
        change = propose(values, random.Random(knob), knob)
        assert change.knob == knob and change.new != change.old
    stuck = propose({**values, "ADDITIVE_ALPHA": 0.0}, random.Random(0), "ADDITIVE_ALPHA")
    assert stuck.knob != "ADDITIVE_ALPHA" and stuck.new != stuck.old  # 0 x anything is 0: another knob


@pytest.mark.slow
def test_a_tiny_comparison_writes_a_sane_table_csv_and_plot_per_task(tmp_path):
    out = tmp_path / "out"
    args = ["--out", str(out), "--seeds", "2", "--workers", "2", "--budget", "2", "--jobs", "2"]
    args += ["--tasks", "demo", "noisy"]
    proc = subprocess.run(
        [sys.executable, "-m", "eval.compare", *args], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (out / "work").exists()  # the runs' clones are gone unless --keep

    rows = {(r["task"], r["arm"]): r for r in csv.DictReader(open(out / "results.csv"))}
    arms = ["isolated", "flat_log", "planner", "agora"]
    assert list(rows) == [(task, arm) for task in ("demo", "noisy") for arm in arms]
    for key, row in rows.items():
        assert row["runs"] == "2" and row["seeds"] == "0 1" and row["errors"] == "0", (key, row)
        baseline = BASELINE if key[0] == "demo" else 1.0 + sum(w / 4 for w in NOISY_WEIGHTS[:7])  # K7's optimum is 0
        assert 0 < float(row["reported_true"]) <= baseline + 1e-6, key
        assert float(row["evaluations"]) == 4  # 2 workers x 2 evaluations, verifications included
        assert 1 <= float(row["effective_clusters"]) <= 4
        assert 0 <= float(row["verified_share"]) <= 1 and 0 <= float(row["repeat_share"]) <= 1
        assert 0 <= float(row["unchanged_share"]) <= 1
    assert float(rows["demo", "isolated"]["verifications"]) == 0
    assert rows["demo", "agora"]["minus_agora"] == ""

    runs = json.loads((out / "runs.json").read_text())["runs"]
    assert len(runs) == 16 and len(list(csv.DictReader(open(out / "runs.csv")))) == 16
    assert all(run["confirmed_results"] >= 1 for run in runs)  # the founder's reruns establish the workers
    for run in runs:
        ledger = run["ledger"]
        assert sum(1 + r["verified"] for r in ledger) == 4  # the budget counts verifications
        assert [r["spent"] for r in ledger] == sorted(r["spent"] for r in ledger)
        if run["arm"] == "planner":  # the global best, and a round-robin over the task's own knobs
            knobs = list(TASKS[run["task"]].knobs)
            assert [r["change"].split()[0] for r in ledger] == knobs[: len(ledger)]
        if run["arm"] == "isolated":  # builds on the baseline or on its own work only
            own = {r["sha"]: r["account"] for r in ledger}
            assert all(own.get(r["parent"], r["account"]) == r["account"] for r in ledger)
        if run["arm"] == "flat_log":
            assert {r["slot"] for r in ledger} <= {"best", "newest"}
        if run["task"] == "noisy":  # the harness judges on the true loss, which no worker sees
            values = [dict(kv.split("=") for kv in r["choices"].split(";")) for r in ledger]
            trues = [landscape.true_loss("noisy", {k: int(v) for k, v in vs.items()}) for vs in values]
            assert [r["true"] for r in ledger] == pytest.approx(trues)
            assert any(abs(r["true"] - r["measured"]) > 1e-6 for r in ledger)

    table = (out / "results.md").read_text()
    assert table.count("### ") == 2 and table.count("| Agora |") == 2
    assert "Command: `python -m eval.compare" in table
    for task in ("demo", "noisy"):
        png = (out / f"compare-{task}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000

    again = tmp_path / "again"
    redo = [sys.executable, "-m", "eval.compare", "--out", str(again), "--from-runs", str(out / "runs.json")]
    assert subprocess.run(redo, cwd=ROOT, capture_output=True, timeout=300).returncode == 0
    assert (again / "results.md").read_text() == table
