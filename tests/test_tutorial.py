"""docs/tutorial.md runs as written: every command of its `bash` blocks, in order, in one shell, against
a fresh project (the demo's task, founded by `git_agora.demo.run.found_project`, on a bare remote)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from agora_testing import agora
from git_agora.demo.run import DemoPlan, found_project

TUTORIAL = Path(__file__).parents[1] / "docs" / "tutorial.md"


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)


def test_every_command_of_the_tutorial_runs(tmp_path, monkeypatch):
    plan = DemoPlan.create(tmp_path / "project", workers=0, rounds=0, seed=0)
    founder = found_project(plan)
    blocks = bash_blocks(TUTORIAL.read_text())
    assert len(blocks) >= 7
    script = "set -euo pipefail\n" + "\n".join(blocks)
    work = tmp_path / "newcomer"
    work.mkdir()
    env = {"PROJECT_URL": str(plan.directory / "remote.git"), "COLUMNS": "100"}
    proc = subprocess.run(
        ["bash", "-c", script], cwd=work, capture_output=True, text=True, timeout=600, env={**_environ(), **env}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "cloned " in out and "account      newcomer (remembered" in out
    assert "quick run ([eval] quick): not comparable to full runs, never publish it" in out
    assert "bpc = 2.72938" in out  # the full run of the change, as the push message says
    assert re.search(r"^published [0-9a-f]{40}$", out, re.M) and "pushed" in out
    assert "Legend" in out and "Where to work next" in out
    assert "note: build: `python3 train.py --out /agora/artifact` (in the sandbox, timeout 60 s)" in proc.stderr
    assert re.search(
        r"note: score: `python3 score\.py /agora/artifact --quick` \(in the sandbox, timeout \d+ s\)", proc.stderr
    )

    agora(founder, "fetch")
    log = agora(founder, "log", "--json").json()
    newcomer = [row for row in log if row["account"] == "newcomer"]
    assert {tuple(row["tags"]) for row in newcomer} == {("result",), ("verification",)}
    verdict = next(row for row in newcomer if row["verdict"])
    assert verdict["verdict"] == "confirmed", verdict


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)
