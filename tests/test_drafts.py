"""Drafts a killed process left beside the index are swept by the next write, and nothing else is."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from git_agora.drafts import ABANDONED_AFTER_S, draft_of, sweep_drafts
from git_agora.ops.link_cache import write_link


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def aged(path, seconds: float) -> None:
    os.utime(path, (path.stat().st_mtime - seconds,) * 2)


def test_an_old_draft_of_a_process_that_is_gone_is_removed_and_nothing_else(tmp_path):
    state = tmp_path / "frame.state"
    gone = tmp_path / f".frame.state.{dead_pid()}"
    recent = tmp_path / f".frame.state.{dead_pid()}"
    living = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = tmp_path / f".frame.state.{living.pid}"
        others = [tmp_path / ".frame.state.notapid", tmp_path / f".clusters.state.{dead_pid()}", draft_of(state)]
        for path in [gone, alive, *others]:
            path.write_bytes(b"draft")
            aged(path, ABANDONED_AFTER_S + 5)
        assert sweep_drafts(state) == [gone]
        assert not gone.exists() and alive.exists() and all(p.exists() for p in others)
        recent.write_bytes(b"being written")  # untouched for less than the limit: kept, whoever wrote it
        assert sweep_drafts(state) == [] and recent.exists()
    finally:
        living.kill()
        living.wait()


def test_the_next_write_sweeps_a_killed_writer_s_draft(tmp_path):
    path = tmp_path / "clusters.state"
    left = tmp_path / f".clusters.state.{dead_pid()}"
    left.write_bytes(b"x" * 1000)
    aged(left, ABANDONED_AFTER_S + 5)
    write_link(path, b"d" * 32, np.zeros(3, np.int64), np.zeros(3, np.int64))
    assert path.exists() and not left.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clusters.state"]
