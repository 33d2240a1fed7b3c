"""The smaller stumbles of a newcomer (issue 47), each through the real CLI on the demo's task: push
--check says what it measured; a post with no remote says how to send it and exits 0, as the docs say;
an evaluation says where it exported and what its time limit is; counts read as English; lineage and
stats say one thing of the best's ancestry; two `push --check` of one tree at once publish one result;
the demo's worker publishes its run record without evaluating twice; a slow step shows progress."""

from __future__ import annotations

import os
import random
import re
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from agora_testing import agora, demo_task_clone, git, make_clone
from git_agora.demo.run import DemoPlan, found_project
from git_agora.feedback import Feedback, when_slow


@pytest.fixture(scope="module")
def founded(tmp_path_factory):
    base = tmp_path_factory.mktemp("stumbles")
    plan = DemoPlan.create(base / "project", workers=0, rounds=0, seed=0)
    return base, found_project(plan), plan.directory / "remote.git"


def _change(clone: Path, method: str) -> None:
    choices = clone / "choices.py"
    choices.write_text(re.sub(r"^METHOD = .*$", f'METHOD = "{method}"', choices.read_text(), count=1, flags=re.M))


def test_push_check_prints_the_measured_value_beside_the_claim(founded):
    base, _, remote = founded
    agora(base, "clone", str(remote), "measurer", "--account", "measurer")
    clone = base / "measurer"
    _change(clone, "witten_bell")
    out = agora(clone, "push", "--check", "-m", "Witten-Bell", "--tag", "result").stdout
    assert re.search(r"^measured bpc = 2\.72938 \(no claim: the measured value is published\)$", out, re.M), out


def test_push_check_with_a_close_claim_shows_both(founded):
    base, _, remote = founded
    agora(base, "clone", str(remote), "claimer", "--account", "claimer")
    clone = base / "claimer"
    baseline = agora(clone, "log", "--tag", "result", "--account", "founder", "--json").json()[-1]["sha"]
    agora(clone, "checkout", baseline)
    _change(clone, "witten_bell")
    value = agora(clone, "run", "--json").json()["metrics"]["bpc"]
    out = agora(clone, "push", "--check", "-m", "Witten-Bell", "--tag", "result", "--metric", f"bpc={value!r}").stdout
    assert re.search(r"^measured bpc = 2\.72938 \(you claimed 2\.72938\)$", out, re.M), out
    assert agora(clone, "push", "--json", "--check", "-m", "x", "--tag", "result", check=False).returncode == 1


def test_a_post_with_no_remote_exits_0_and_says_how_to_send_it(tmp_path):
    clone = tmp_path / "solo"
    clone.mkdir()
    git(clone, "init", "-q")
    agora(clone, "init", "--metric", "loss", "--direction", "min", account="solo")
    done = agora(clone, "post", "--tag", "insight", "-m", "a thought", account="solo")
    assert done.returncode == 0
    assert (
        "no remote configured: kept locally (2 contribution(s) to send once a remote is added: "
        "`git remote add origin URL && git agora sync`)"
    ) in done.stderr


def test_an_evaluation_says_its_export_folder_and_what_its_time_limit_is(founded):
    _, founder, _ = founded
    ran = agora(founder, "run")
    assert re.search(
        r"note: export: tree [0-9a-f]{12} in /\S+ \(removed when the evaluation ends\); the steps' output is kept "
        r"in \S+/\.git/agora/runs/\S+",
        ran.stderr,
    ), ran.stderr
    assert "note: build: `python3 train.py --out /agora/artifact` (in the sandbox, time limit 60 s)" in ran.stderr
    score = re.search(r"note: score: `python3 score\.py /agora/artifact` \(in the sandbox, ([^)]*)\)", ran.stderr)
    assert score and re.fullmatch(r"time limit 60 s(, \d+ s of it left: the steps before used \d+ s)?", score[1])


def test_counts_read_as_english_and_lineage_and_stats_agree(founded):
    base, _, remote = founded
    agora(base, "clone", str(remote), "thinker", "--account", "thinker")
    thinker = base / "thinker"
    agora(thinker, "post", "--tag", "hypothesis", "-m", "order 3 should help")
    summary = agora(thinker, "analyze", "--summary").stdout
    assert re.search(r"\b1 hypothesis\b", summary) and "1 hypotheses" not in summary
    stats = agora(thinker, "stats").stdout
    assert re.search(r"^verifications \d+ \(on \d+ results?\), \d+ failed$", stats, re.M), stats
    best = agora(thinker, "analyze", "--json").json()["summary"]["best"]["sha"]
    lineage = agora(thinker, "lineage", best).stdout
    said = re.search(r"reproduced    (\d+ of its \d+ scored ancestors? independently reproduced)", lineage)
    assert said and said[1] in stats, (lineage, stats)


def test_two_push_checks_of_one_tree_at_once_publish_one_result(tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    clone = demo_task_clone(tmp_path, remote)
    _change(clone, "witten_bell")
    env = {**os.environ, "AGORA_ACCOUNT": "alice"}
    command = ["git", "agora", "push", "--check", "-m", "Witten-Bell", "--tag", "result"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    pushes = [subprocess.Popen(command, cwd=clone, env=env, **pipes) for _ in range(2)]
    outcomes = [(p.wait(timeout=300), *p.communicate()) for p in pushes]
    assert sorted(code for code, _, _ in outcomes) == [0, 1], outcomes
    refused = next(err for code, _, err in outcomes if code == 1)
    assert "this tree is already published by alice on " in refused and "nothing published" in refused
    results = agora(clone, "log", "--tag", "result", "--json").json()
    assert len(results) == 1, results


def test_the_demo_worker_publishes_its_run_record_without_evaluating_twice(founded):
    from git_agora.demo.worker import Step, Worker

    base, founder, remote = founded
    clone = make_clone(base, "worker", str(remote), "worker")
    agora(clone, "fetch")
    worker = Worker(clone, "worker", random.Random(0))
    baseline = agora(founder, "log", "--tag", "result", "--account", "founder", "--json").json()[-1]
    runs = clone / ".git" / "agora" / "runs"
    before = len(list(runs.iterdir())) if runs.exists() else 0
    outcome = worker.act(0, Step("exploit", {"sha": baseline["sha"], "metric": 3.048076}), may_verify=False)
    assert outcome.sha is not None
    assert len(list(runs.iterdir())) - before == 1  # one evaluation: the run the record comes from
    shown = agora(clone, "show", outcome.sha, "--json").json()
    check = shown["metadata"]["check"]
    assert check["measured"]["bpc"] == shown["metrics"]["bpc"] and check["sandbox"] is True
    assert shown["evidence"]["checked"] is True
    assert "unchecked" not in agora(clone, "show", outcome.sha).stdout


class _Recorder:
    def __init__(self) -> None:
        self.shown: list[str] = []
        self.started = threading.Event()

    @contextmanager
    def progress(self, what: str, total: int | None):
        self.shown.append(what)
        self.started.set()
        yield lambda done: None


def test_a_slow_step_shows_progress_and_a_quick_one_does_not():
    recorder = _Recorder()
    feedback = Feedback(on_progress=recorder.progress)
    with when_slow(feedback, "exporting", after_s=60):
        pass
    assert recorder.shown == []
    with when_slow(feedback, "exporting", after_s=0.01):
        assert recorder.started.wait(30)  # the body outlasts the delay: the progress appears while it runs
    assert recorder.shown == ["exporting"]
    silent = Feedback()  # a library caller or --json: no progress, whatever the time
    with when_slow(silent, "exporting", after_s=0.0):
        pass
