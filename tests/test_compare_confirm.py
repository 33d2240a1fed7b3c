"""The confirmatory question's pure parts (`QUESTION-11.md`, `eval/compare/confirm.py`, `stats.py`): the
corrected one-sided bound on hand-computed numbers, the seed rule (a function of the freezing commit
only), the pairing over complete seeds, and the refusal to run an unfrozen or changed question."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval.compare import confirm, stats  # noqa: E402


@pytest.mark.parametrize(
    ("p", "df", "table"),
    [(0.05, 4, 2.132), (0.025, 4, 2.776), (0.005, 4, 4.604), (0.025, 30, 2.042), (0.05, 1, 6.314), (0.005, 10, 3.169)],
)
def test_the_one_sided_critical_value_is_the_t_tables(p, df, table):
    assert stats.t_upper_quantile(p, df) == pytest.approx(table, abs=6e-4)


def test_the_t_distribution_is_symmetric_and_its_median_is_zero():
    assert stats.t_cdf(0.0, 7) == pytest.approx(0.5)
    assert stats.t_cdf(-1.3, 5) == pytest.approx(1 - stats.t_cdf(1.3, 5))
    assert stats.t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/pi


def test_the_bound_on_hand_computed_numbers_and_the_correction_makes_it_harder():
    # d = 0, .02, .01, .03, .04: mean .02, sd sqrt(.001 / 4) = .0158114, sd / sqrt(5) = .0070711
    excess = [0.0, 0.02, 0.01, 0.03, 0.04]
    alone = stats.non_inferiority(excess, margin=0.05, level=0.05)
    assert (alone.n, alone.mean, alone.sd) == (5, pytest.approx(0.02), pytest.approx(0.0158114, abs=1e-7))
    assert alone.upper == pytest.approx(0.02 + 2.1318 * 0.0070711, abs=1e-5)  # 0.035075
    assert alone.non_inferior
    # the same data, one of ten tests: t(0.995, 4) = 4.604, so .02 + 4.604 x .0070711 = .05256 > .05
    level = stats.corrected_level(0.05, comparisons=5, questions=2)
    assert level == pytest.approx(0.005)
    corrected = stats.non_inferiority(excess, margin=0.05, level=level)
    assert corrected.upper == pytest.approx(0.05256, abs=1e-4)
    assert not corrected.non_inferior
    assert stats.non_inferiority(excess, margin=0.0352, level=0.05).non_inferior
    assert not stats.non_inferiority(excess, margin=0.0350, level=0.05).non_inferior


def test_each_questions_level_counts_every_test_and_every_question_asked_with_it():
    assert confirm.COMPARISONS == 12 and confirm.QUESTIONS == (11, 12)
    assert confirm.level_of(11) == pytest.approx(0.05 / 132)
    assert stats.t_upper_quantile(confirm.level_of(11), 39) == pytest.approx(3.654, abs=1e-3)
    assert confirm.level_of(12) == pytest.approx(0.05 / 144)
    assert stats.t_upper_quantile(confirm.level_of(12), 39) > stats.t_upper_quantile(confirm.level_of(11), 39)
    assert confirm.question_file(12).name == "QUESTION-12.md"


def test_bad_inputs_are_refused():
    for call in (
        lambda: stats.non_inferiority([0.1], 0.01, 0.05),
        lambda: stats.non_inferiority([0.1, 0.2], 0.0, 0.05),
        lambda: stats.corrected_level(0.05, 0, 11),
        lambda: stats.t_upper_quantile(0.5, 3),
        lambda: confirm.seeds_from_commit("HEAD", 3),
    ):
        with pytest.raises(ValueError):
            call()


def test_the_seed_rule_is_a_function_of_the_commit_name_only():
    sha = "0" * 40
    # sha256("000...0/0") starts cbe92dc2dd6e3390 = 14693325574234846096; mod 9,000,000 = 4,846,096
    assert confirm.seeds_from_commit(sha, 5) == [5846096, 9995374, 1368666, 6388733, 4283457]
    assert confirm.seeds_from_commit(sha, 5) == confirm.seeds_from_commit(sha, 5)
    assert confirm.seeds_from_commit(sha, 40)[:5] == confirm.seeds_from_commit(sha, 5)  # a longer list extends
    seeds = confirm.seeds_from_commit("ab" * 20, 40)
    assert len(set(seeds)) == 40 and all(1_000_000 <= s < 10_000_000 for s in seeds)  # never an earlier seed
    assert seeds != confirm.seeds_from_commit("ac" * 20, 40)


def record(task: str, arm: str, seed: int, value: float) -> dict:
    return {"task": task, "arm": arm, "seed": seed, "reported_true": value}


def test_the_table_pairs_only_seeds_where_every_arm_finished():
    runs = []
    for seed, agora in ((1, 1.00), (2, 1.02), (3, 1.01)):
        runs += [record("noisy", "agora", seed, agora), record("noisy", "flat_log", seed, 1.03)]
        runs += [record("noisy", "isolated", seed, agora - 0.01), record("noisy", "planner", seed, agora)]
    runs += [record("noisy", "agora", 4, 2.0), record("noisy", "isolated", 4, 1.0)]  # seed 4: unfinished
    assert confirm.complete_seeds(runs, "noisy") == [1, 2, 3]
    rows = {row.arm: row for row in confirm.confirm_rows(runs, level=0.05)}
    assert set(rows) == {"isolated", "flat_log", "planner"} and rows["isolated"].seeds == 3
    iso = rows["isolated"].test  # Agora minus isolated: 0.01 on every seed, sd 0
    assert (iso.mean, iso.upper, iso.non_inferior) == (pytest.approx(0.01), pytest.approx(0.01), False)
    flat = rows["flat_log"].test  # -0.03, -0.01, -0.02: mean -0.02, sd 0.01, t(0.95, 2) = 2.920
    assert flat.upper == pytest.approx(-0.02 + 2.920 * 0.01 / math.sqrt(3), abs=1e-4)
    assert flat.non_inferior and rows["planner"].test.non_inferior  # equal on every seed: 0 < 0.01
    assert confirm.verdicts(list(rows.values())) == {"noisy": False}
    assert confirm.verdict_text(True, complete=True) == "confirmed"
    assert confirm.verdict_text(True, complete=False).startswith("no decision: a partial run")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_a_question_runs_only_as_frozen(tmp_path):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "t@example.org")
    git(tmp_path, "config", "user.name", "t")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "start")
    question = tmp_path / "Q.md"
    question.write_text("the rule\n")
    with pytest.raises(SystemExit, match="not committed"):
        confirm.freezing_commit(question, tmp_path)
    git(tmp_path, "add", "Q.md")
    git(tmp_path, "commit", "-q", "-m", "freeze")
    frozen = git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "other.txt").write_text("later work\n")
    git(tmp_path, "add", "other.txt")
    git(tmp_path, "commit", "-q", "-m", "later")
    assert confirm.freezing_commit(question, tmp_path) == frozen  # later commits elsewhere keep the seeds
    question.write_text("the rule, edited after seeing something\n")
    with pytest.raises(SystemExit, match="differs from its frozen commit"):
        confirm.freezing_commit(question, tmp_path)
    git(tmp_path, "commit", "-q", "-am", "edit")
    with pytest.raises(SystemExit, match="changed after it was frozen"):
        confirm.freezing_commit(question, tmp_path)


def test_the_noisy_diagnosis_of_a_hand_made_run():
    """A lucky result A (measured 1.05, true 1.07) leads; B, built on it, is truly better by 0.02 but
    measured worse: the reported best is an artefact, and the two verifications that reran A reproduced
    its luck."""
    from eval.compare import noisy_diagnostic

    def row(sha, parent, slot, setting, measured, true, seed="0"):
        choices = f"{setting};SEED={seed}"
        return {"sha": sha, "parent": parent, "slot": slot, "setting": setting, "choices": choices,
                "measured": measured, "true": true, "round": 0}  # fmt: skip

    template = {"baseline_setting": "K0=4", "baseline": 1.2, "baseline_true": 1.2}
    ledger = [
        row("a", "base", "exploit", "K0=5", 1.05, 1.07),
        row("b", "a", "exploit", "K0=6", 1.06, 1.05),
        row("c", "a", "explore_novel", "K0=3", 1.10, 1.09),
        row("d", "c", "exploit", "K0=3", 1.11, 1.09, seed="77"),  # a replicate of C under another SEED
    ]
    record = {"arm": "agora", "seed": 7, "ledger": ledger, "verification_targets": ["a", "a", "b"], "verifications": 3}
    got = noisy_diagnostic.diagnose(record, template)
    assert got["reported_setting"] == "K0=5" and got["artefact"]
    assert got["reported_luck"] == pytest.approx(-0.02)
    assert (got["reported_verifications"], got["built_on_reported"], got["built_on_reported_exploit"]) == (2, 2, 1)
    assert (got["distinct_settings"], got["truly_better_settings"], got["results_not_seed_0"]) == (4, 1, 1)
    assert (got["reported_evaluations"], got["reported_seeds"], got["truly_better_built_on_reported"]) == (1, 1, 1)


def test_the_wilson_interval_and_the_binomial_tail_on_hand_computed_numbers():
    from eval.compare.noisy_diagnostic import binomial_tail, wilson

    assert wilson(0, 9) == (pytest.approx(0.0, abs=1e-12), pytest.approx(0.2991, abs=1e-4))
    assert wilson(3, 9) == (pytest.approx(0.1206, abs=1e-4), pytest.approx(0.6458, abs=1e-4))
    assert binomial_tail(20, 0.25, 0, 0) == pytest.approx(0.75**20)  # 0.003171
    assert binomial_tail(4, 0.5, 0, 4) == pytest.approx(1.0)
    assert binomial_tail(4, 0.5, 3, 4) == pytest.approx(5 / 16)


def test_shared_settings_counts_settings_seen_in_several_runs_and_those_measured_differently():
    from eval.compare.noisy_diagnostic import shared_settings

    def run(arm, seed, *rows):
        ledger = [{"setting": s, "choices": f"{s};SEED={k}", "measured": m} for s, k, m in rows]
        return {"arm": arm, "seed": seed, "ledger": ledger}

    records = [
        run("agora", 1, ("A", 0, 1.05), ("B", 0, 1.10)),
        run("isolated", 1, ("A", 0, 1.05), ("C", 0, 1.20), ("B", 9, 1.12)),  # B under SEED 9: not counted
        run("agora", 2, ("C", 0, 1.21)),  # C measured differently: a second draw somewhere
    ]
    assert shared_settings(records) == (2, 1)


def test_a_resumed_run_names_every_commit_whose_code_ran_it():
    records = [{"code": "a" * 40}] * 2 + [{"code": "b" * 40}]
    assert confirm.code_at(records) == f"{'a' * 40} (2 runs), {'b' * 40} (1 run)"
    assert confirm.code_at(records[:2]) == "a" * 40 and confirm.code_at([]) == "?"


def test_the_report_after_a_run_names_the_question_asked_and_its_level(tmp_path, monkeypatch):
    """The run's own report (not only `--report`) is the question's: its file, its count of questions
    and its level. The twelfth run's first report divided by 640 questions, the loop's counter of finished
    communities, which had taken the question's name (the tables were then drawn again with `--report`)."""
    from concurrent.futures import ThreadPoolExecutor

    freeze = "a" * 40
    seeds = confirm.seeds_from_commit(freeze, confirm.SEEDS_PER_TASK)
    planned = [(t, a, s) for s in seeds for t in confirm.TASKS for a in confirm.ARMS]
    out = tmp_path / "out"
    out.mkdir()
    stored = [{"task": t, "arm": a, "seed": s} for t, a, s in planned[:-3]]
    (out / "runs.jsonl").write_text("".join(f"{json.dumps(r)}\n" for r in stored))

    def community(task, arm, seed, *rest):
        return {"task": task, "arm": arm, "seed": seed, "reported_true": 1.0, "errors": [], "wall_s": 0.0}

    heard = {}
    monkeypatch.setattr(confirm, "ROOT", tmp_path)  # the run's work folder: none of the repository's
    monkeypatch.setattr(confirm, "freezing_commit", lambda question: freeze)
    monkeypatch.setattr(confirm, "check_code_committed", lambda: "b" * 40)
    monkeypatch.setattr(confirm, "prepare", lambda work: None)
    monkeypatch.setattr(confirm, "_environment", lambda work: None)
    monkeypatch.setattr(confirm, "found_template", lambda *a: {})
    monkeypatch.setattr(confirm, "run_community", community)
    monkeypatch.setattr(confirm, "ProcessPoolExecutor", lambda jobs, mp_context=None: ThreadPoolExecutor(jobs))
    monkeypatch.setattr(confirm, "report", lambda out, records, note, question, finished: heard.update(locals()))
    assert confirm.main(["--question", "12", "--out", str(out), "--resume", "--jobs", "2"]) is None
    assert heard["question"] == 12 and heard["finished"] and len(heard["records"]) == len(planned)
    assert "QUESTION-12.md" in heard["note"] and "(12 comparisons x 12 questions) = 0.000347" in heard["note"]
