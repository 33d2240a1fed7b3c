"""The documentation runs as written. docs/tutorial.md: every command of its `bash` blocks, in order, in
one shell, against a fresh project (the demo's task, founded by `git_agora.demo.run.found_project`, on a
bare remote), both as founded and after a result whose code already has the tutorial's new value. The
README's runnable blocks ('Join a project', 'Found a project') with URL replaced by a local bare remote.
The blocks are read from the markdown when the test runs: an edit of the docs changes the test."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from agora_testing import agora, git
from git_agora.demo.run import DemoPlan, found_project

DOCS = Path(__file__).parents[1]
TUTORIAL = DOCS / "docs" / "tutorial.md"
README = DOCS / "README.md"


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)


def section(text: str, heading: str) -> str:
    """The markdown under `## heading`, up to the next `## ` heading."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def run_script(script: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "100", **env},
    )


def test_bash_blocks_are_found_and_a_failing_block_fails_the_script(tmp_path):
    """The extraction sees every block of the tutorial, and the shell the test runs them in stops at the
    first failing command (so the tutorial test fails when any block fails)."""
    blocks = bash_blocks(TUTORIAL.read_text())
    assert len(blocks) >= 8 and any("push --check --predict" in b for b in blocks)
    failing = run_script("\n".join(["true", "false", "echo after"]), tmp_path, {})
    assert failing.returncode != 0 and "after" not in failing.stdout


def _already_witten_bell(founder: Path) -> None:
    """The best result's code already has `METHOD = 'witten_bell'` (single quotes, as a worker may
    write it): the tutorial's edit must still change something."""
    choices = founder / "choices.py"
    text = choices.read_text()
    choices.write_text(re.sub(r'^METHOD = "additive"', "METHOD = 'witten_bell'", text, count=1, flags=re.M))
    agora(founder, "push", "--check", "-m", "Witten-Bell smoothing", "--tag", "result")


@pytest.mark.parametrize("best", ["founded", "witten_bell"])
def test_every_command_of_the_tutorial_runs(tmp_path, best):
    plan = DemoPlan.create(tmp_path / "project", workers=0, rounds=0, seed=0)
    founder = found_project(plan)
    if best == "witten_bell":
        _already_witten_bell(founder)
    blocks = bash_blocks(TUTORIAL.read_text())
    work = tmp_path / "newcomer"
    work.mkdir()
    proc = run_script("\n".join(blocks), work, {"PROJECT_URL": str(plan.directory / "remote.git")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "cloned " in out and "account      newcomer (remembered" in out
    checked_out = r"^checked out  [0-9a-f]{12} .*\(the best result, bpc = [0-9.]+; (confirmed|unverified)\)$"
    assert re.search(checked_out, out, re.M)
    expected = "METHOD additive -> witten_bell" if best == "founded" else "METHOD witten_bell -> absolute"
    assert expected in out
    assert "quick run ([eval] quick): not comparable to full runs, never publish it" in out
    full = re.findall(r"^bpc = ([0-9.]+)$", out, re.M)
    assert full, out
    assert f"measured bpc = {full[-1]}" in out  # push --check says what it measured: the full run's value
    assert re.search(r"^published [0-9a-f]{40}$", out, re.M) and "pushed" in out
    assert "Legend" in out and "Where to work next" in out
    assert "note: build: `python3 train.py --out /agora/artifact` (in the sandbox, time limit 60 s)" in proc.stderr

    agora(founder, "fetch")
    log = agora(founder, "log", "--json").json()
    newcomer = [row for row in log if row["account"] == "newcomer"]
    assert {tuple(row["tags"]) for row in newcomer} == {("result",), ("verification",)}
    verdict = next(row for row in newcomer if row["verdict"])
    assert verdict["verdict"] == "confirmed", verdict
    result = next(row for row in newcomer if not row["verdict"])
    shown = agora(founder, "show", result["sha"], "--json").json()
    assert shown["metadata"]["prediction"] == [2.2, 3.2]
    assert expected.split(" -> ")[1] in agora(founder, "show", result["sha"]).stdout


def _readme_block(heading: str, index: int = 0) -> str:
    return bash_blocks(section(README.read_text(), heading))[index]


def test_the_readmes_join_block_runs(tmp_path):
    plan = DemoPlan.create(tmp_path / "project", workers=0, rounds=0, seed=0)
    found_project(plan)
    block = _readme_block("Join a project")
    url = str(plan.directory / "remote.git")
    proc = run_script(block.replace("URL", url), tmp_path, {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "checked out" in proc.stdout and "Where to work next" in proc.stdout


def test_the_readmes_found_block_runs(tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    block = _readme_block("Found a project")
    proc = run_script(block.replace("URL", str(remote)), tmp_path, {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^setup [0-9a-f]{40}$", proc.stdout, re.M) and "pushed" in proc.stdout
    assert git(tmp_path, "--git-dir", str(remote), "for-each-ref", "refs/agora/")
