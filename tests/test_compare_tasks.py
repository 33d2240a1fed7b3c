"""The comparison's synthetic tasks: their landscapes hold the properties each task exists for, the
evaluator a project runs prints what the harness computes, and proposals stay on the knobs' levels."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval.compare import landscape  # noqa: E402
from eval.compare.tasks import SCORE, TASKS, knob_text  # noqa: E402


def optimum_values(task: str) -> dict[str, int]:
    if task == "noisy":
        return {**dict(zip(landscape.noisy_names(), landscape.NOISY_OPTIMUM)), "SEED": 0}
    if task == "deceptive":
        return {**{f"D{i}": o for i, o in enumerate(landscape.DECEPTIVE_OPTIMUM)}, "SWITCH_A": 1, "SWITCH_B": 1}
    return dict(zip(landscape.wide_names(), landscape.WIDE_OPTIMUM))


@pytest.mark.parametrize("task", ["noisy", "deceptive", "wide"])
def test_the_optimum_is_where_the_landscape_says(task):
    best = optimum_values(task)
    assert landscape.true_loss(task, best) == pytest.approx(landscape.optimum(task))
    rng = random.Random(task)
    for _ in range(200):  # no other setting is better
        other = {k: (rng.randrange(2) if k.startswith("SWITCH") else rng.randrange(TASKS[task].levels)) for k in best}
        other["SEED"] = 0
        assert landscape.true_loss(task, other) >= landscape.optimum(task) - 1e-12


def test_the_deceptive_switches_each_look_worse_alone():
    base = {**optimum_values("deceptive"), "SWITCH_A": 0, "SWITCH_B": 0}
    alone = [landscape.true_loss("deceptive", {**base, s: 1}) for s in ("SWITCH_A", "SWITCH_B")]
    both = landscape.true_loss("deceptive", {**base, "SWITCH_A": 1, "SWITCH_B": 1})
    start = landscape.true_loss("deceptive", base)
    assert all(a > start for a in alone) and both < start


def test_noisy_luck_is_reproducible_by_seed_and_about_the_tolerance():
    values = {**optimum_values("noisy"), "SEED": 7}
    assert landscape.measured("noisy", values) == landscape.measured("noisy", values)  # a verification agrees
    draws = [landscape.measured("noisy", {**values, "SEED": s}) - 1.0 for s in range(400)]  # replicates differ
    mean = sum(draws) / len(draws)
    sd = (sum((d - mean) ** 2 for d in draws) / (len(draws) - 1)) ** 0.5
    assert abs(mean) < 0.003 and 0.008 < sd < 0.012
    assert landscape.measured("wide", optimum_values("wide")) == 1.0  # the other tasks are deterministic


@pytest.mark.parametrize("task", ["noisy", "deceptive", "wide"])
def test_the_projects_evaluator_prints_the_measured_loss(task, tmp_path):
    (tmp_path / "knobs.py").write_text(knob_text(TASKS[task]))
    (tmp_path / "score.py").write_text(SCORE.format(task=task))
    (tmp_path / "landscape.py").write_text((ROOT / "eval/compare/landscape.py").read_text())
    out = subprocess.run([sys.executable, "score.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {"loss": landscape.measured(task, TASKS[task].baseline_values)}


@pytest.mark.parametrize("task", ["noisy", "deceptive", "wide"])
def test_proposals_change_one_knob_within_its_levels(task):
    spec = TASKS[task]
    rng = random.Random(0)
    for value in (0, spec.levels - 1):
        values = {k: (value % 2 if k.startswith("SWITCH") else value) for k in spec.knobs}
        for _ in range(100):
            change = spec.propose(values, rng)
            top = 1 if change.knob.startswith("SWITCH") else spec.levels - 1
            assert change.knob in spec.knobs and change.new != change.old and 0 <= change.new <= top
    assert spec.propose(spec.baseline_values, rng, spec.knobs[3]).knob == spec.knobs[3]


def test_a_replicate_step_publishes_the_same_levels_under_another_seed(tmp_path, monkeypatch):
    """Through the protocol: the worker's replicate changes only SEED, is tagged `replicate`, and a
    project that counts replicates reads the original's standing as the mean of both draws once the
    founder has confirmed the replicate (another account's draw)."""
    import git_agora as agora
    from eval.compare.arms import AgoraWorker
    from eval.compare.tasks import found
    from git_agora.demo.choices import read_choices
    from git_agora.demo.run import DemoPlan, environment, make_clone
    from git_agora.demo.worker import Step

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PATH", environment()["PATH"])
    settings = {"format": 2, "replicate_within": 3.0, "replicates": 1}
    founder = found(TASKS["noisy"], tmp_path, settings)
    (baseline,) = [e for e in agora.log(agora.open_project(founder), limit=5) if "loss" in e.metrics]
    clone = make_clone(DemoPlan(tmp_path, 1, 1, 0), "worker-ada", "ada")
    worker = AgoraWorker(clone, "ada", random.Random(0), TASKS["noisy"])
    agora.fetch(worker.project())
    parent = {"sha": baseline.sha, "metric": baseline.metrics["loss"]}
    outcome = worker.act(0, Step("exploit", parent, action="replicate"), may_verify=False)

    assert outcome.change.knob == "SEED" and outcome.change.new != 0
    show = subprocess.run(
        ["git", "diff", baseline.sha, outcome.sha, "--", "."], cwd=clone, capture_output=True, text=True
    )
    changed = [line for line in show.stdout.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ["-SEED = 0", f"+SEED = {outcome.change.new}"]
    levels = read_choices((clone / "knobs.py").read_text())
    assert outcome.measured == landscape.measured("noisy", levels) != baseline.metrics["loss"]
    entry = next(e for e in agora.log(worker.project(), limit=5) if e.sha == outcome.sha)
    assert "replicate" in entry.tags and entry.parents[0] == baseline.sha

    def suggested():
        slots = agora.analyze(worker.project()).slots
        return {s.sha: s for slot in slots.slots for s in slot.suggestions}

    before = suggested()
    assert outcome.sha not in before  # never a parent: build on the original
    assert before[baseline.sha].replicates == 0  # another account's draw: weighs nothing until confirmed
    founder_project = agora.open_project(founder, account="founder")
    agora.fetch(founder_project)
    assert agora.verify(founder_project, outcome.sha).judgement.verdict == "confirmed"
    agora.fetch(worker.project())
    after = suggested()
    mean = (baseline.metrics["loss"] + outcome.measured) / 2
    assert after[baseline.sha].metric == pytest.approx(mean) and after[baseline.sha].replicates == 1


def test_the_tuning_rule_keeps_a_setting_only_when_it_wins_without_losing_anywhere(tmp_path):
    """`eval.compare.tuning` (QUESTION-2.md): paired differences per task, scored in reaches; a setting
    worse beyond noise on one task never qualifies, however much it gains elsewhere."""
    from eval.compare import tuning

    def runs(folder, values):
        folder.mkdir()
        lines = ["task,arm,seed,reported_true"]
        lines += [f"{task},agora,{seed},{v}" for task, vs in values.items() for seed, v in enumerate(vs)]
        (folder / "runs.csv").write_text("\n".join(lines) + "\n")
        return folder

    reference = runs(tmp_path / "ref", {"deceptive": [1.0, 1.0, 1.0], "wide": [1.10, 1.12, 1.11]})
    better = runs(tmp_path / "better", {"deceptive": [0.8, 0.9, 1.0], "wide": [1.10, 1.12, 1.11]})
    reckless = runs(tmp_path / "reckless", {"deceptive": [0.6, 0.6, 0.6], "wide": [1.20, 1.21, 1.22]})
    ref = tuning.read_runs(reference)
    candidates = [tuning.compare(ref, "better", tuning.read_runs(better))]
    candidates.append(tuning.compare(ref, "reckless", tuning.read_runs(reckless)))
    good, bad = candidates
    assert good.per_task["deceptive"][1] == pytest.approx(-0.1) and good.score == pytest.approx(-0.1 / 0.05 / 2)
    assert good.qualifies and not bad.qualifies and bad.score < good.score  # wide got worse beyond noise
    assert tuning.choose(candidates) is good
    assert tuning.choose([tuning.compare(ref, "same", ref)]) is None  # no gain: the reference stays


def test_a_tasks_ucb_table_is_toml_the_setup_reads():
    import tomllib

    from eval.compare.tasks import ucb_table

    settings = {"format": 2, "explore_quality": "lineage", "explore_scored": True, "exploit_rank": "quality", "c0": 5.0}
    assert tomllib.loads(ucb_table(settings))["ucb"] == settings
    assert ucb_table({}) == ""


def test_workers_take_untried_knobs_in_the_briefs_order_and_claim_them_first(tmp_path, monkeypatch):
    """QUESTION-3's worker, through the protocol: the first worker takes the task's first knob from the
    baseline and claims it; the second, choosing after that claim reached the remote, takes the next
    knob; once the first has published its result (which releases its claim), a third still skips the
    knob that result changed, and a worker building on that result continues the list after its knob
    (QUESTION-5). An isolated worker, which sees only its own record, starts at the first."""
    import git_agora as agora
    from eval.compare.arms import FlatLogWorker, IsolatedWorker, read_record
    from eval.compare.tasks import found
    from git_agora.demo.run import DemoPlan, environment, make_clone

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PATH", environment()["PATH"])
    task = TASKS["wide"]
    founder = found(task, tmp_path)
    (baseline,) = [e for e in agora.log(agora.open_project(founder), limit=5) if "loss" in e.metrics]
    plan = DemoPlan(tmp_path, 3, 1, 0)

    def worker(kind, account):
        return kind(make_clone(plan, f"worker-{account}", account), account, random.Random(account), task)

    loner = worker(IsolatedWorker, "dee")  # joins with the others, then never fetches again
    ada, bob, cy = (worker(FlatLogWorker, a) for a in ("ada", "bob", "cy"))
    first = ada.commit_to(ada.choose())
    second = bob.commit_to(bob.choose())
    assert first.parent["sha"] == second.parent["sha"] == baseline.sha
    assert (first.knob, second.knob) == ("W00", "W01")
    outcome = ada.act(0, first, may_verify=False)
    assert outcome.change.knob == "W00" and outcome.sha
    entry = next(e for e in agora.log(ada.project(), limit=5) if e.sha == outcome.sha)
    assert entry.parents[0] == baseline.sha and entry.title.startswith("W00 ")

    agora.fetch(cy.project())
    assert [c.account for c in agora.claims(cy.project()) if c.target == baseline.sha] == ["bob"]  # ada's is released
    assert read_record(cy.project(), baseline.sha) == ({"W00", "W01"}, "Baseline")  # no knob: the list from the top
    assert read_record(cy.project(), outcome.sha) == (set(), "W00")
    third = cy.commit_to(cy.choose())
    if third.parent["sha"] == baseline.sha:
        assert third.knob == "W02"
    else:  # the flat log's newest result: ada's, which changed W00: the list goes on after it
        assert (third.parent["sha"], third.knob) == (outcome.sha, "W01")

    assert loner.commit_to(loner.choose()).knob == "W00"  # it never sees the others' claims or results


def test_the_order_diagnostic_shuffles_the_planners_knobs_per_seed_from_the_list_as_written(monkeypatch):
    from eval.compare import community, order_diagnostic

    assert community.TASKS is TASKS  # one dict: a job's change stays for the process's next job
    monkeypatch.setitem(TASKS, "wide", TASKS["wide"])  # put back after the test
    written = TASKS["wide"].knobs
    order_diagnostic.knobs_in_order("wide", "shuffled", 3)
    first = community.TASKS["wide"].knobs
    order_diagnostic.knobs_in_order("wide", "shuffled", 3)  # a second job in the same process: the same order
    assert community.TASKS["wide"].knobs == first != written
    assert sorted(first) == sorted(written)
    order_diagnostic.knobs_in_order("wide", "shuffled", 4)
    assert community.TASKS["wide"].knobs != first
    order_diagnostic.knobs_in_order("wide", "list", 4)
    assert community.TASKS["wide"].knobs == written


def test_a_claim_that_cannot_be_published_does_not_stop_the_work(monkeypatch, tmp_path):
    import git_agora as agora
    from eval.compare import arms
    from git_agora.demo.worker import Step

    def refuse(*args, **kwargs):
        raise agora.AgoraError("the remote is away")

    monkeypatch.setattr(arms.TaskWorker, "project", lambda self: None)
    monkeypatch.setattr(arms, "read_record", lambda project, parent: ({"W00"}, ""))
    monkeypatch.setattr(agora, "claim", refuse)
    worker = arms.TaskWorker(tmp_path, "ada", random.Random(0), TASKS["wide"])
    assert worker.commit_to(Step("exploit", {"sha": "a" * 40})).knob == "W01"


def test_the_worker_reads_the_list_after_the_knob_its_parent_changed():
    from eval.compare.arms import first_word, knobs_after

    knobs = ("A", "B", "C", "D")
    assert knobs_after(knobs, "B") == ("C", "D", "A", "B")
    assert knobs_after(knobs, "D") == knobs  # the last knob: the list from the top
    assert knobs_after(knobs, "") == knobs == knobs_after(knobs, "SEED")  # no knob of the list: as written
    assert first_word("METHOD: 'a' -> 'b'") == "METHOD" and first_word("") == ""


def test_a_worker_continues_after_its_parents_knob_and_skips_what_was_tried(monkeypatch, tmp_path):
    import git_agora as agora
    from eval.compare import arms
    from git_agora.demo.worker import Step

    monkeypatch.setattr(arms.TaskWorker, "project", lambda self: None)
    monkeypatch.setattr(agora, "claim", lambda *args, **kwargs: None)
    worker = arms.TaskWorker(tmp_path, "ada", random.Random(0), TASKS["wide"])
    monkeypatch.setattr(arms, "read_record", lambda project, parent: ({"W06"}, "W05"))
    assert worker.commit_to(Step("exploit", {"sha": "a" * 40})).knob == "W07"
    last = TASKS["wide"].knobs[-1]
    monkeypatch.setattr(arms, "read_record", lambda project, parent: ({TASKS["wide"].knobs[0]}, last))
    assert worker.commit_to(Step("exploit", {"sha": "a" * 40})).knob == TASKS["wide"].knobs[1]
    assert worker.commit_to(Step("planned", {"sha": "a" * 40}, knob="W03")).knob == "W03"  # the planner's stays
