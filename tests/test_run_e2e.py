"""`git agora run` as a person or an agent framework meets it: what it says before the evaluator ends,
the evaluator's stderr on a terminal, stopping it (SIGTERM from `timeout`, SIGINT), and `--quick`."""

from __future__ import annotations

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

# An evaluator that says where it runs, then waits: for the GO file (the pty test), else for ten minutes.
SLOW = """import json, os, sys, time
open(os.environ["AGORA_TEST_PIDFILE"], "w").write(str(os.getpid()))
sys.stderr.write("warming up\\n")
sys.stderr.flush()
go = os.environ.get("AGORA_TEST_GO")
deadline = time.time() + 600
while time.time() < deadline and not (go and os.path.exists(go)):
    time.sleep(0.05)
sys.stderr.write("scored\\n")
print(json.dumps({"x": 1.5}))
"""


@pytest.fixture
def slow_project(tmp_path, remote, monkeypatch):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "slow.py").write_text(SLOW)
    agora(a, "init", "--metric", "x", "--eval", "python3 slow.py")
    pidfile = tmp_path / "evaluator.pid"
    monkeypatch.setenv("AGORA_TEST_PIDFILE", str(pidfile))
    return a, pidfile


def wait_for(path: Path, proc: subprocess.Popen, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not (path.exists() and path.read_text()):
        assert proc.poll() is None, f"git agora run ended before the evaluator started: {proc.communicate()}"
        assert time.monotonic() < deadline, "the evaluator never started"
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


def test_sigterm_from_timeout_leaves_no_evaluator_behind(slow_project):
    clone, pidfile = slow_project
    proc = subprocess.Popen(
        ["timeout", "8", "git", "agora", "run"], cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for(pidfile, proc)
    tree = descendants(proc.pid)
    evaluator = int(pidfile.read_text())
    assert evaluator in {p.pid for p in tree}
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 124, (out, err)
    assert_all_gone(tree)
    assert not psutil.pid_exists(evaluator) or psutil.Process(evaluator).status() == psutil.STATUS_ZOMBIE


def test_sigint_leaves_no_evaluator_behind(slow_project):
    clone, pidfile = slow_project
    proc = subprocess.Popen(
        ["git", "agora", "run"], cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for(pidfile, proc)
    tree = descendants(proc.pid)
    assert int(pidfile.read_text()) in {p.pid for p in tree}
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    # git re-raises the signal after passing it on (-2); git-agora itself exits 130
    assert proc.returncode in (130, -signal.SIGINT) and "git agora: aborted" in err, (out, err)
    assert_all_gone(tree)


def test_a_terminal_sees_the_command_before_the_evaluator_ends_and_its_stderr_live(slow_project, tmp_path):
    clone, _ = slow_project
    go = tmp_path / "go"
    env = {**os.environ, "AGORA_TEST_GO": str(go), "COLUMNS": "100"}
    child = pexpect.spawn("git", ["agora", "run"], cwd=str(clone), env=env, encoding="utf-8", timeout=60)
    try:
        child.expect(r"evaluating \S+ with `python3 slow\.py` \(timeout 3600 s\)")
        child.expect("warming up")  # the evaluator's stderr, while it still runs
        assert child.isalive() and not go.exists()
        go.write_text("")
        child.expect(r"x = 1\.5")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_json_output_never_carries_the_evaluators_stderr(slow_project, tmp_path, monkeypatch):
    clone, _ = slow_project
    (tmp_path / "go").write_text("")
    monkeypatch.setenv("AGORA_TEST_GO", str(tmp_path / "go"))
    out = agora(clone, "run", "--json")
    assert out.json()["metrics"] == {"x": 1.5} and out.json()["comparable"] is True
    assert "warming up" not in out.stdout + out.stderr  # not a terminal: kept out of the way


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
    clone, pidfile = slow_project
    r = agora(clone, "run", "--quick", check=False)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "git agora: error: the project declares no quick evaluation ([eval] quick in agora.toml)\n"
    assert not pidfile.exists()  # nothing ran


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("process groups and psutil checks are Linux-specific here")
