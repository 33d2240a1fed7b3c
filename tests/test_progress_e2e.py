"""Work that takes seconds shows progress on a terminal (what, how many, the rate), never under --json."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pexpect
import pytest

from site_projects import load_tracegen


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    tracegen = load_tracegen()
    base = tmp_path_factory.mktemp("progress")
    tracegen.generate(base / "origin.git", 5000, 10, seed=2)
    clone = base / "clone"
    clone.mkdir()
    for args in (["init", "-q"], ["remote", "add", "origin", str(base / "origin.git")]):
        subprocess.run(["git", *args], cwd=clone, check=True)
    return clone


def _run(clone: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "COLUMNS": "120"}
    child = pexpect.spawn("git", ["agora", *args], cwd=str(clone), env=env, encoding="utf-8", timeout=300)
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before


def test_a_rebuild_shows_how_many_commits_it_has_read_and_json_shows_nothing(big):
    code, shown = _run(big, "fetch")
    assert code == 0 and "fetched 5000 new contributions" in shown
    assert "indexing commits" in shown and "/s" in shown, shown[-2000:]
    code, shown = _run(big, "index", "--rebuild", "--json")
    assert code == 0 and "indexing commits" not in shown
    assert json.loads(shown)["contributions"] == 5000
