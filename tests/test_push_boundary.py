"""A post on an old parent names that parent to the remote before it packs: git's pack-objects then knows
the parent is there, instead of proving it by walking the history down from every remote tip (at a
million contributions 10-20 s and 1 GB of the poster's machine, for a pack of one commit). Over each
transport a remote speaks (a bare repository, `git daemon`, smart HTTP): the push negotiates, the
remote acknowledges the parent, and the published log is whole."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from agora_testing import agora, git, make_clone
from servers import git_daemon, smart_http


def _history(tmp_path: Path, remote: Path) -> tuple[Path, list[str]]:
    """alice's project with a chain of twelve results on `remote`; the shas, oldest first."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    agora(a, "init", "--metric", "bpc", "--direction", "min", "--tolerance", "0.01")
    for n in range(12):
        (a / "model.py").write_text(f"order = {n + 4}\n")
        agora(a, "push", "-m", f"order {n + 4}", "--tag", "result", "--metric", f"bpc={3 - n / 10}")
    logs = git(a, "log", "--first-parent", "--reverse", "--format=%P", "refs/agora/log/alice").splitlines()
    entries = [parents.split()[-1] for parents in logs if parents]  # a log commit's last parent: its entry
    return a, entries[1:]  # after the setup


@pytest.fixture(params=["bare", "git-daemon", "smart-http"])
def url(request, tmp_path, remote):
    """The project's remote as each transport serves it."""
    if request.param == "bare":
        yield str(remote)
        return
    served = tmp_path / "served"
    served.mkdir()
    shutil.move(str(remote), served / "remote.git")
    remote.symlink_to(served / "remote.git")  # the `remote` fixture's path still names it
    serve = git_daemon if request.param == "git-daemon" else smart_http
    with serve(served) as base:
        yield f"{base}/remote.git"


def test_a_new_accounts_first_post_on_an_old_parent_is_negotiated(tmp_path, remote, url):
    a, results = _history(tmp_path, remote)
    old = results[1]  # ten results newer than it on the remote
    b = make_clone(tmp_path, "b", url, "bob")
    agora(b, "fetch")
    trace = tmp_path / "packets"
    posted = agora(
        b, "post", "-m", "bob's first insight, on an old result", "--tag", "insight", "--parent", old,
        env={"GIT_TRACE_PACKET": str(trace)},
    )  # fmt: skip
    assert "pushed" in posted.stdout, posted.stdout + posted.stderr
    assert "negotiation failed" not in posted.stderr
    packets = trace.read_text()
    assert re.search(rf"ACK {old}\b", packets), "the remote was not asked whether it holds the parent"
    tip = git(b, "rev-parse", "refs/agora/log/bob").strip()
    assert git(a, "ls-remote", str(remote), "refs/agora/log/bob").split() == [tip, "refs/agora/log/bob"]
    whole = subprocess.run(["git", "rev-list", "--objects", "--quiet", tip], cwd=remote)
    assert whole.returncode == 0  # the remote holds the log and all it reaches
    entry = git(b, "log", "-1", "--format=%P", tip).split()[-1]
    assert git(b, "log", "-1", "--format=%P", entry).split() == [old]
