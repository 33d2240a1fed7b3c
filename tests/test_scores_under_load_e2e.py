"""A score is a function of the tree and the evaluator alone: every template and the demo's task score
one tree bit-identically on an idle machine and beside two busy loops, and another account's `verify`,
run under that load, confirms the honest claim (on main, autoresearch's clock cut a loaded run short
and a verifier published "contradicts the claim" on an honest result)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agora_testing import agora, demo_task_clone, make_clone

CHANGES = {  # a change to the contribution's file that leaves the default run's cost as it is
    "autoresearch": ("train.py", r"^SEED = 0", "SEED = 1"),
    "two-phase": ("solve.py", r"^    return \[0\.0, 1\.0", "    return [0.001, 1.0"),
    "demo": ("choices.py", r"^ORDER = 2", "ORDER = 3"),
}
METRICS = {"autoresearch": "val_bpb", "two-phase": "max_error", "demo": "bpc"}


@contextmanager
def two_busy_loops() -> Iterator[None]:
    """Two processes that spin on a CPU each while the block runs; stopped by their pids."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def founded(tmp_path: Path, remote: Path, name: str) -> Path:
    if name == "demo":
        return demo_task_clone(tmp_path, remote)
    a = make_clone(tmp_path, "a", str(remote), "alice")
    agora(a, "init", "--template", name)
    return a


@pytest.mark.slow
@pytest.mark.parametrize("name", ["autoresearch", "two-phase", "demo"])
def test_one_tree_scores_bit_identically_idle_and_under_load_and_a_loaded_verify_confirms(tmp_path, remote, name):
    a = founded(tmp_path, remote, name)
    agora(tmp_path, "clone", str(remote), "b", "--account", "bob")
    b = tmp_path / "b"
    path, pattern, replacement = CHANGES[name]
    text, count = re.subn(pattern, replacement, (b / path).read_text(), flags=re.M)
    assert count == 1
    (b / path).write_text(text)
    metric = METRICS[name]

    sha = agora(b, "push", "--check", "-m", "one change", "--tag", "result", "--json", timeout=600).json()["sha"]
    idle = agora(b, "show", sha, "--json").json()["metrics"][metric]  # measured by push --check, idle
    agora(a, "fetch")
    with two_busy_loops():
        loaded = agora(b, "run", "--json", timeout=600).json()
        verified = agora(a, "verify", sha, "--json", timeout=600).json()
    assert loaded["ok"] and loaded["metrics"][metric] == idle, (idle, loaded)
    assert verified["verdict"] == "confirmed" and verified["reproduced"][metric] == idle, verified
