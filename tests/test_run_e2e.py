"""`git agora run` as a person or an agent framework meets it: what it says before the evaluator ends,
the evaluator's stderr on a terminal, stopping it (SIGTERM from `timeout`, SIGINT), and `--quick`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from importlib.resources import files
from pathlib import Path

import pexpect
import psutil
import pytest

from agora_testing import agora, demo_task_clone, make_clone

TASK = files("git_agora") / "demo" / "task"

# An evaluator that says it started, then waits for SIGUSR1 (or ten minutes): the test finds it among
# git-agora's descendants and signals it, which works in the sandbox too (it sees none of the host's files).
SLOW = """import json, signal, sys, time
go = []
signal.signal(signal.SIGUSR1, lambda *_: go.append(1))
sys.stderr.write("warming up\\n")
sys.stderr.flush()
deadline = time.time() + 600
while time.time() < deadline and not go:
    time.sleep(0.05)
sys.stderr.write("scored\\n")
print(json.dumps({"x": 1.5}))
"""


@pytest.fixture
def slow_project(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "slow.py").write_text(SLOW)
    agora(a, "init", "--metric", "x", "--eval", "python3 slow.py")
    return a


def evaluator_of(pid: int, limit: float = 60.0, alive=lambda: True) -> psutil.Process:
    """The evaluator (`python3 slow.py`) among the descendants of `pid`, once it has started."""
    deadline = time.monotonic() + limit
    while True:
        assert alive(), "git agora run ended before the evaluator started"
        assert time.monotonic() < deadline, "the evaluator never started"
        for child in descendants(pid):
            with contextlib.suppress(psutil.Error):
                if child.cmdline()[-1:] == ["slow.py"]:
                    return child
        time.sleep(0.05)


def descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def assert_all_gone(processes: list[psutil.Process]) -> None:
    deadline = time.monotonic() + 15
    alive = processes
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.05)
    assert not alive, f"left behind: {[(p.pid, p.cmdline()) for p in alive]}"


SANDBOXED = pytest.mark.parametrize("mode", [[], ["--no-sandbox"]], ids=["sandbox", "no-sandbox"])


@SANDBOXED
def test_sigterm_from_timeout_leaves_no_evaluator_behind(slow_project, mode):
    proc = subprocess.Popen(
        ["timeout", "8", "git", "agora", "run", *mode],
        cwd=slow_project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    evaluator = evaluator_of(proc.pid, alive=lambda: proc.poll() is None)
    tree = descendants(proc.pid)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 124, (out, err)
    assert_all_gone(tree)
    assert not evaluator.is_running() or evaluator.status() == psutil.STATUS_ZOMBIE


def _sigint_as_at_a_terminal() -> None:
    """A suite started in the background of a non-interactive shell inherits SIGINT ignored, and so would
    git: its cleanup handler then reaps git-agora, re-raises an ignored signal and fails its own waitpid
    (exit 128). At a terminal, where Ctrl-C comes from, SIGINT is at its default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@SANDBOXED
def test_sigint_leaves_no_evaluator_behind(slow_project, mode):
    proc = subprocess.Popen(
        ["git", "agora", "run", *mode],
        cwd=slow_project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_as_at_a_terminal,
    )
    evaluator_of(proc.pid, alive=lambda: proc.poll() is None)
    tree = descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    # git re-raises the signal after passing it on (-2); git-agora itself exits 130
    assert proc.returncode in (130, -signal.SIGINT) and "git agora: aborted" in err, (out, err)
    assert_all_gone(tree)


def test_a_terminal_sees_the_command_before_the_evaluator_ends_and_its_stderr_live(slow_project):
    env = {**os.environ, "COLUMNS": "100"}
    child = pexpect.spawn("git", ["agora", "run"], cwd=str(slow_project), env=env, encoding="utf-8", timeout=60)
    try:
        child.expect(r"command: `python3 slow\.py` \(in the sandbox, time limit 3600 s\)")
        child.expect("warming up")  # the evaluator's stderr, while it still runs
        evaluator = evaluator_of(child.pid)
        assert child.isalive()
        evaluator.send_signal(signal.SIGUSR1)
        child.expect(r"x = 1\.5")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_json_output_never_carries_the_evaluators_stderr(slow_project):
    proc = subprocess.Popen(
        ["git", "agora", "run", "--json"], cwd=slow_project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    evaluator = evaluator_of(proc.pid, alive=lambda: proc.poll() is None)
    logs = slow_project / ".git" / "agora" / "runs"
    while not any("warming up" in log.read_text() for log in logs.glob("*/command.err")):  # its handler is set
        assert proc.poll() is None
        time.sleep(0.05)
    evaluator.send_signal(signal.SIGUSR1)
    stdout, stderr = proc.communicate(timeout=60)
    out = json.loads(stdout)
    assert out["metrics"] == {"x": 1.5} and out["comparable"] is True and out["sandbox"] is True
    assert "warming up" not in stdout + stderr  # not a terminal: kept out of the way
    assert "warming up" in (Path(out["run_folder"]) / "command.err").read_text()  # kept here, for the person


@pytest.fixture
def task_clone(tmp_path, remote):
    a = demo_task_clone(tmp_path, remote)
    return a


def test_quick_runs_the_setups_smaller_evaluation_labelled_not_comparable(task_clone):
    quick = agora(task_clone, "run", "--quick", "--json").json()
    full = agora(task_clone, "run", "--json").json()
    assert quick["quick"] is True and quick["comparable"] is False
    assert full["quick"] is False and full["comparable"] is True
    assert quick["metrics"]["test_chars"] == 2000 and full["metrics"]["test_chars"] == 12000
    text = agora(task_clone, "run", "--quick")
    assert "not comparable" in text.stdout and "bpc = " in text.stdout
    assert "not comparable" not in agora(task_clone, "run").stdout


def test_push_check_never_uses_the_quick_evaluation(task_clone):
    (task_clone / "choices.py").write_text((task_clone / "choices.py").read_text().replace("ORDER = 2", "ORDER = 3"))
    refused = agora(task_clone, "push", "--check", "--quick", "-m", "x", "--tag", "result", check=False)
    assert refused.returncode == 2 and "--quick" in refused.stderr  # push has no quick mode
    published = agora(task_clone, "push", "--check", "-m", "order 3", "--tag", "result", "--json").json()
    check = agora(task_clone, "show", published["sha"], "--json").json()["metadata"]["check"]
    assert check["output"]["test_chars"] == 12000 and "--quick" not in str(check["evaluator"]["commands"])


def test_quick_without_a_declared_quick_evaluation_is_one_line(slow_project):
    r = agora(slow_project, "run", "--quick", check=False)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "git agora: error: the project declares no quick evaluation ([eval] quick in agora.toml)\n"
    assert not (slow_project / ".git" / "agora" / "runs").exists()  # nothing ran


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("process groups and psutil checks are Linux-specific here")
