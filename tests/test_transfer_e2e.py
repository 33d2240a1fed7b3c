"""Transfers: never killed while they progress, stopped when silent, and shown to a person on a terminal."""

from __future__ import annotations

import json
import os
import re
import stat

import pexpect

from agora_testing import agora, git, make_clone


def _remote_script(tmp_path, body: str) -> str:
    """An `ext::` remote: a script that talks (or not) on stderr, then serves the real remote."""
    script = tmp_path / "remote.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f"ext::{script} %S"


def _clone_of(tmp_path, url: str):
    c = make_clone(tmp_path, "c", url, "carol")
    git(c, "config", "protocol.ext.allow", "always")
    return c


def test_a_silent_remote_is_stopped_with_one_line(tmp_path, project):
    url = _remote_script(tmp_path, "sleep 60")
    c = _clone_of(tmp_path, url)
    r = agora(c, "fetch", check=False, env={"AGORA_STALL_SECONDS": "1"}, timeout=30)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "git agora: error: could not fetch from origin: no progress for 1 s: stopped "
        "(set AGORA_STALL_SECONDS to wait longer)"
    ]


def test_a_slow_remote_that_keeps_talking_is_never_stopped(tmp_path, remote, project):
    (project / "model.py").write_text("order = 4\n")
    agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5")
    talk = "for i in 1 2 3 4 5 6; do echo 'remote: still counting' >&2; sleep 0.5; done"
    c = _clone_of(tmp_path, _remote_script(tmp_path, f'{talk}\nexec "$1" {remote}'))
    r = agora(c, "fetch", env={"AGORA_STALL_SECONDS": "1"}, timeout=60)
    assert "fetched 2 new contributions" in r.stdout  # 3 s of talk against a 1 s stall limit


def test_fetch_shows_gits_phases_on_a_terminal_and_nothing_under_json(tmp_path, remote, project):
    for n in range(3):
        (project / "model.py").write_text(f"order = {n + 4}\n" + "x" * 5000 * n)
        agora(project, "push", "-m", f"order {n + 4}", "--tag", "result", "--metric", f"bpc={2.5 - n / 10}")
    c = make_clone(tmp_path, "c", str(remote), "carol")
    env = {**os.environ, "COLUMNS": "100", "GIT_PROGRESS_DELAY": "0"}
    child = pexpect.spawn("git", ["agora", "fetch"], cwd=str(c), env=env, encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    shown = child.before
    assert child.exitstatus == 0 and "fetched 4 new contributions" in shown
    assert re.search(r"(Receiving|Unpacking|Counting|Enumerating|Compressing) objects", shown), shown

    d = make_clone(tmp_path, "d", str(remote), "dora")
    child = pexpect.spawn("git", ["agora", "fetch", "--json"], cwd=str(d), env=env, encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "objects" not in child.before
    assert json.loads(child.before)["new_contributions"] == 4


def _counter(tmp_path, lines: str) -> str:
    """A git alias that prints progress lines to stderr, a tenth of a second apart, then exits 0."""
    script = tmp_path / "progress.sh"
    script.write_text(f"#!/bin/sh\nfor line in {lines}; do printf '%s\\r' \"$line\" >&2; sleep 0.1; done\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f"alias.progress=!{script}"


def test_a_local_job_stuck_on_one_progress_line_is_stopped_and_a_moving_one_is_not(tmp_path):
    from git_agora.refs.git import Git

    git_ = Git(tmp_path)
    stuck = " ".join(["Counting:_50%_1/2"] * 40)  # 4 s of the same line: what a spinning writer shows
    moving = " ".join(f"Counting:_{i}%_{i}/40" for i in range(40))
    assert git_.watched("-c", _counter(tmp_path, stuck), "progress", stall=1.5, new_lines_only=True).returncode == 124
    assert git_.watched("-c", _counter(tmp_path, moving), "progress", stall=1.5, new_lines_only=True).returncode == 0
    assert git_.watched("-c", _counter(tmp_path, stuck), "progress", stall=1.5).returncode == 0  # a remote talking
