"""A post on an old parent in a large history names that parent to the remote before it packs: git's
pack-objects then knows the parent is there, instead of proving it by walking the history down from
every remote tip (at a million contributions 10-20 s and 1 GB of the poster's machine, for a pack of
one commit). Over each transport a remote speaks (a bare repository, `git daemon`, smart HTTP): the
push negotiates, the remote acknowledges the parent, and the published log is whole. A small history
pushes as git does (a negotiation would cost a connection more over a network, for a walk of
milliseconds)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import git_agora as agora
from agora_testing import agora as run
from agora_testing import git, make_clone
from git_agora.refs import sync
from git_agora.refs.sync import packed_objects
from servers import git_daemon, smart_http


def _history(tmp_path: Path, remote: Path) -> tuple[Path, list[str]]:
    """alice's project with a chain of twelve results on `remote`; the shas, oldest first."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    run(a, "init", "--metric", "bpc", "--direction", "min", "--tolerance", "0.01")
    for n in range(12):
        (a / "model.py").write_text(f"order = {n + 4}\n")
        run(a, "push", "-m", f"order {n + 4}", "--tag", "result", "--metric", f"bpc={3 - n / 10}")
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


def _post_traced(b: Path, parent: str, trace: Path, monkeypatch) -> str:
    """bob's first insight on `parent`, git's packets traced; the sha of his log's tip."""
    bob = agora.open_project(b)
    agora.fetch(bob)
    monkeypatch.setenv("GIT_TRACE_PACKET", str(trace))
    posted = agora.post(bob, "bob's first insight, on an old result", ["insight"], parents=[parent])
    monkeypatch.delenv("GIT_TRACE_PACKET")
    assert posted.shared, posted.push
    return git(b, "rev-parse", "refs/agora/log/bob").strip()


def test_a_new_accounts_first_post_on_an_old_parent_is_negotiated(tmp_path, remote, url, monkeypatch):
    _a, results = _history(tmp_path, remote)
    monkeypatch.setattr(sync, "PROBE_FROM_COMMITS", 0)  # this small history takes the large ones' path
    old = results[1]  # ten results newer than it on the remote
    b = make_clone(tmp_path, "b", url, "bob")
    tip = _post_traced(b, old, tmp_path / "packets", monkeypatch)
    assert re.search(rf"ACK {old}\b", (tmp_path / "packets").read_text()), "the parent was not negotiated"
    assert git(b, "ls-remote", str(remote), "refs/agora/log/bob").split() == [tip, "refs/agora/log/bob"]
    whole = subprocess.run(["git", "rev-list", "--objects", "--quiet", tip], cwd=remote)
    assert whole.returncode == 0  # the remote holds the log and all it reaches
    entry = git(b, "log", "-1", "--format=%P", tip).split()[-1]
    assert git(b, "log", "-1", "--format=%P", entry).split() == [old]


def test_a_small_history_pushes_without_negotiating(tmp_path, remote, monkeypatch):
    _a, results = _history(tmp_path, remote)
    b = make_clone(tmp_path, "b", str(remote), "bob")
    tip = _post_traced(b, results[1], tmp_path / "packets", monkeypatch)
    assert "ACK" not in (tmp_path / "packets").read_text()  # no fetch negotiation at all
    assert git(b, "ls-remote", str(remote), "refs/agora/log/bob").split() == [tip, "refs/agora/log/bob"]


def test_packed_objects_counts_the_pack_indexes_and_the_alternates_they_borrow(tmp_path, remote):
    a, _ = _history(tmp_path, remote)
    git(a, "repack", "-a", "-d", "-q")
    held = int(dict(line.split(": ") for line in git(a, "count-objects", "-v").splitlines())["in-pack"])
    assert packed_objects(str(a / ".git" / "objects")) == held > 0
    borrower = tmp_path / "borrower"
    git(tmp_path, "init", "-q", str(borrower))
    (borrower / ".git" / "objects" / "info" / "alternates").write_text(f"# shared\n{a / '.git' / 'objects'}\n")
    assert packed_objects(str(borrower / ".git" / "objects")) == held
    looped = a / ".git" / "objects" / "info" / "alternates"
    looped.write_text(f"{borrower / '.git' / 'objects'}\n")  # a loop: each directory counted once
    assert packed_objects(str(borrower / ".git" / "objects")) == held
    (a / ".git" / "objects" / "pack" / "pack-broken.idx").write_bytes(b"\xfftOc\x00\x00\x00\x02")  # cut short
    assert packed_objects(str(a / ".git" / "objects")) == held
