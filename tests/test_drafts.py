"""Drafts a killed process left beside the index are swept by the next write, and nothing else is."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from git_agora.drafts import ABANDONED_AFTER_S, draft_of, sweep_abandoned_folders, sweep_drafts
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


def test_an_old_scratch_folder_of_a_process_that_is_gone_is_removed_with_its_contents(tmp_path):
    gone = tmp_path / f"probe-{dead_pid()}-x1"
    recent = tmp_path / f"probe-{dead_pid()}-x2"
    living = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = tmp_path / f"probe-{living.pid}-x3"
        mine = tmp_path / f"probe-{os.getpid()}-x4"
        others = [tmp_path / "probe-notapid-x5", tmp_path / f"other-{dead_pid()}-x6", alive, mine]
        for path in [gone, *others]:
            (path / "objects" / "pack").mkdir(parents=True)
            (path / "objects" / "pack" / "pack-1.pack").write_bytes(b"fetched")
            aged(path, ABANDONED_AFTER_S + 5)
        linked = tmp_path / f"probe-{dead_pid()}-x7"
        linked.symlink_to(tmp_path / "probe-notapid-x5")  # a link is never followed, nor removed
        os.utime(linked, (0, 0), follow_symlinks=False)
        assert sweep_abandoned_folders(tmp_path, "probe-") == [gone]
        assert not gone.exists() and all((p / "objects" / "pack" / "pack-1.pack").exists() for p in others)
        assert linked.is_symlink()
        recent.mkdir()  # being written: kept, whoever writes it
        assert sweep_abandoned_folders(tmp_path, "probe-") == [] and recent.exists()
    finally:
        living.kill()
