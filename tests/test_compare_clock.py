"""A community runs on its own clock: every publication its own second in the run's order, so a rerun of a
seed takes the same steps (issue 51: the flat log's "newest result" was decided by commit hashes among
same-second commits, and a rerun of a stored community reproduced 0 of 4 flat-log runs)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval.compare.clock import START, STEP_SECONDS, CommunityClock  # noqa: E402


def test_the_clock_is_the_processes_and_gits_until_the_context_ends(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1234 +0000")
    monkeypatch.delenv("GIT_AUTHOR_DATE", raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@x"

    def git_commit_date() -> int:
        tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # the empty tree
        run = lambda *a: subprocess.run(  # noqa: E731
            ["git", "-C", str(tmp_path), *a], check=True, capture_output=True, text=True, env={**env, **os.environ}
        ).stdout.strip()
        sha = run("commit-tree", tree, "-m", "x")
        return int(run("show", "-s", "--format=%at %ct", sha).split()[1])

    with CommunityClock() as clock:
        assert time.time() == START and git_commit_date() == START
        assert clock.advance() == START + STEP_SECONDS == time.time()
        assert os.environ["GIT_AUTHOR_DATE"] == f"@{START + STEP_SECONDS} +0000"
        assert git_commit_date() == START + STEP_SECONDS
    assert abs(time.time() - time.mktime(time.localtime())) < 5  # the system's clock again
    assert os.environ["GIT_COMMITTER_DATE"] == "@1234 +0000" and "GIT_AUTHOR_DATE" not in os.environ


@pytest.mark.slow
def test_a_rerun_of_a_flat_log_community_takes_the_same_steps(tmp_path, monkeypatch):
    """Two flat-log communities of one seed, each on its own founding (as `confirm --recheck` reruns one),
    publish the same ledger; and in each every contribution has its own second, results in ledger order."""
    import git_agora as agora
    from eval.compare.community import found_template, run_community
    from eval.compare.tasks import TASKS
    from git_agora.demo.run import environment

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PATH", environment()["PATH"])
    runs = []
    for k in range(2):
        template = found_template(TASKS["noisy"], tmp_path / f"template-{k}", {})
        runs.append(run_community("noisy", "flat_log", 12, 3, 4, template, tmp_path / f"run-{k}", keep=True))
    first, second = (steps(run["ledger"]) for run in runs)
    assert len(first) >= 6 and first == second
    assert runs[0]["reported_true"] == runs[1]["reported_true"]
    assert {r["slot"] for r in runs[0]["ledger"]} == {"best", "newest"}  # both of the flat log's rules ran

    observer = agora.open_project(tmp_path / "run-0" / "observer", account="observer")
    entries = agora.log(observer, limit=1000)
    stamps = [e.timestamp for e in entries]
    assert len(set(stamps)) == len(stamps) >= len(first)  # claims, results, verdicts: each its own second
    when = {e.sha: e.timestamp for e in entries}
    assert [when[r["sha"]] for r in runs[0]["ledger"]] == sorted(when[r["sha"]] for r in runs[0]["ledger"])


def steps(ledger: list[dict]) -> list[tuple]:
    """A ledger without its commit names: each result's slot, parent (its place in the ledger), choices and
    measure."""
    place = {row["sha"]: i for i, row in enumerate(ledger)}
    return [(r["slot"], place.get(r["parent"], "baseline"), r["choices"], r["measured"]) for r in ledger]
