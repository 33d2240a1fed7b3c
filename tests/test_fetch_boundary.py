"""A fetch names the commits new work rests on before it asks for it (refs.boundary): an old parent costs
neither the server nor the client a walk of the whole graph, and nothing unproven stands as a ref."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from agora_testing import files_stored_in_folder_17, forge, git, loose_objects, make_clone, publish_forged_log
from git_agora.refs import boundary, sync, upkeep
from git_agora.refs.boundary import commit_graph_size, in_commit_graph, proven
from git_agora.refs.git import Git
from git_agora.refs.store import Repository


@pytest.fixture(autouse=True)
def probe_at_any_size(monkeypatch):
    """The probe is for large projects; these small ones take it too."""
    monkeypatch.setattr(sync, "PROBE_FROM_COMMITS", 0)


@pytest.fixture
def history(tmp_path, remote):
    """alice's clone `a` of a remote with a setup and three accounts' logs; bob's clone `b` fetched it all."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "setup")
    setup = git(a, "rev-parse", "HEAD").strip()
    entries: dict[str, list[str]] = {}
    parent = setup
    for n in range(9):
        parent = forge(a, f"result {n}\n", [parent])
        entries.setdefault(f"acct{n % 3}", []).append(parent)
    for account, chain in entries.items():
        publish_forged_log(a, account, chain)
    b = make_clone(tmp_path, "b", str(remote), "bob")
    assert sync.fetch(Repository.discover(b), "origin").new_contributions == 9
    return a, b, setup


def _traced_fetch(b, monkeypatch, trace) -> sync.FetchResult:
    monkeypatch.setenv("GIT_TRACE_PACKET", str(trace))
    result = sync.fetch(Repository.discover(b), "origin")
    monkeypatch.delenv("GIT_TRACE_PACKET")
    return result


def _sent(trace, what: str) -> list[str]:
    return re.findall(rf"fetch> {what} ([0-9a-f]{{40}})", trace.read_text())


def _connected(clone, tip: str) -> bool:
    return subprocess.run(["git", "rev-list", "--objects", "--quiet", tip], cwd=clone).returncode == 0


def test_a_new_accounts_first_entry_on_the_setup_sends_only_the_setup_as_a_have(tmp_path, monkeypatch, history):
    a, b, setup = history
    entry = forge(a, "newcomer's first, on the setup\n", [setup])
    publish_forged_log(a, "newcomer", [entry])
    result = _traced_fetch(b, monkeypatch, tmp_path / "packets")
    assert result.new_contributions == 1 and result.updated_logs == ("newcomer",)
    tip = git(a, "rev-parse", "refs/agora/log/newcomer").strip()
    assert git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer").strip() == tip
    assert set(_sent(tmp_path / "packets", "have")) <= {setup}  # not the other logs' tips, newest first
    assert set(_sent(tmp_path / "packets", "want")) == {tip}  # the moved log only
    assert git(b, "for-each-ref", sync.BOUNDARY_PREFIX) == ""  # the boundary refs are gone
    assert _connected(b, tip)


def test_boundary_refs_left_by_a_killed_fetch_are_removed_by_the_next(tmp_path, monkeypatch, history):
    a, b, setup = history
    base = git(b, "rev-parse", "refs/agora/remotes/origin/log/acct2~1").strip()
    for sha in (setup, base):
        git(b, "update-ref", sync.BOUNDARY_PREFIX + sha, sha)
    publish_forged_log(a, "newcomer", [forge(a, "on the setup\n", [setup])])
    assert _traced_fetch(b, monkeypatch, tmp_path / "packets").updated_logs == ("newcomer",)
    assert git(b, "for-each-ref", sync.BOUNDARY_PREFIX) == ""


def test_nothing_moved_lists_the_remote_and_fetches_nothing(tmp_path, monkeypatch, history):
    _, b, _ = history
    result = _traced_fetch(b, monkeypatch, tmp_path / "packets")
    assert result.new_contributions == 0 and result.updated_logs == ()
    assert "command=fetch" not in (tmp_path / "packets").read_text()


def test_two_new_entries_in_a_log_are_probed_in_one_round(tmp_path, monkeypatch, history):
    """An account that posted twice since the last fetch (the common case): the first round reaches down
    to the old tip and to the first entry's parent."""
    a, b, setup = history
    first = forge(a, "one\n", [setup])
    second = forge(a, "two\n", [first])
    publish_forged_log(a, "newcomer", [first, second])
    result = _traced_fetch(b, monkeypatch, tmp_path / "packets")
    assert result.new_contributions == 2
    assert _depths(tmp_path / "packets") == [3]
    assert _sent(tmp_path / "packets", "have") == []  # no fetch after the probe
    tip = git(a, "rev-parse", "refs/agora/log/newcomer").strip()
    assert git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer").strip() == tip
    assert _connected(b, tip)


def _depths(trace) -> list[int]:
    return [int(n) for n in re.findall(r"fetch> deepen (\d+)", trace.read_text())]


def test_a_log_with_several_new_entries_on_old_parents_is_probed_deeper_never_walked(tmp_path, monkeypatch, history):
    """An account that posted four times (on the setup, on an old result, on its own, on the old result
    again) since the last fetch: a plain fetch of every log would send every tip as a have (and walk the
    history from them); the probe goes deeper for that log only, and the fetch sends no have at all (the
    probe brought it)."""
    a, b, setup = history
    old = git(b, "rev-parse", "refs/agora/remotes/origin/log/acct1~2^").strip()  # its first entry
    first = forge(a, "one, on the setup\n", [setup])
    second = forge(a, "two, on an old result\n", [old])
    third = forge(a, "three, on my first\n", [first])
    fourth = forge(a, "four, on the old result again\n", [old])
    publish_forged_log(a, "newcomer", [first, second, third, fourth])
    plus_one = forge(
        a, "a +1 on acct0's last\n", [git(b, "rev-parse", "refs/agora/remotes/origin/log/acct0^2").strip()]
    )
    tip0 = git(b, "rev-parse", "refs/agora/remotes/origin/log/acct0").strip()
    log = forge(a, f"agora log: acct0\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {plus_one}\n", [tip0, plus_one])
    git(a, "push", "-q", "origin", f"{log}:refs/agora/log/acct0")
    result = _traced_fetch(b, monkeypatch, tmp_path / "packets")
    assert result.new_contributions == 5 and set(result.updated_logs) == {"newcomer", "acct0"}
    depths = _depths(tmp_path / "packets")
    assert depths == [3, 8], depths  # one deeper round, for the newcomer's log alone
    assert _sent(tmp_path / "packets", "have") == []  # no plain fetch of every log
    deeper = (tmp_path / "packets").read_text().split("fetch> deepen 8")[1].split("fetch> command=")[0]
    newcomer = git(a, "rev-parse", "refs/agora/log/newcomer").strip()
    assert re.findall(r"fetch> want ([0-9a-f]{40})", deeper) == [newcomer]
    for tip in (newcomer, log):
        assert _connected(b, tip)
    assert git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer").strip() == newcomer
    assert git(b, "for-each-ref", sync.BOUNDARY_PREFIX) == ""


def test_a_log_deeper_than_the_probe_goes_falls_back_to_a_plain_fetch(tmp_path, monkeypatch, history):
    a, b, setup = history
    monkeypatch.setattr("git_agora.refs.boundary.PROBE_DEPTHS", (2, 3))
    chain = [forge(a, "one\n", [setup])]
    for n in range(3):
        chain.append(forge(a, f"then {n}\n", [chain[-1]]))
    publish_forged_log(a, "newcomer", chain)
    result = _traced_fetch(b, monkeypatch, tmp_path / "packets")
    assert result.new_contributions == 4 and result.updated_logs == ("newcomer",)
    assert _depths(tmp_path / "packets") == [2, 3]
    assert _sent(tmp_path / "packets", "have")  # the plain fetch of every log: its tips as haves
    assert _connected(b, git(a, "rev-parse", "refs/agora/log/newcomer").strip())


def test_a_probe_a_killed_fetch_left_is_swept_by_the_next(tmp_path, monkeypatch, history):
    from git_agora.drafts import ABANDONED_AFTER_S

    a, b, setup = history
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = b / ".git" / "agora" / f"probe-{dead.pid}-killed"
    (left / "objects" / "pack").mkdir(parents=True)
    (left / "objects" / "pack" / "pack-1.pack").write_bytes(b"half fetched")
    old = left.stat().st_mtime - ABANDONED_AFTER_S - 5
    os.utime(left, (old, old))
    publish_forged_log(a, "newcomer", [forge(a, "first\n", [setup])])
    assert _traced_fetch(b, monkeypatch, tmp_path / "packets").updated_logs == ("newcomer",)
    assert not left.exists()
    assert [p.name for p in (b / ".git" / "agora").glob("probe-*")] == []  # its own is gone too


def test_a_present_commit_with_a_missing_parent_is_never_taken_as_held(tmp_path, monkeypatch, history):
    """A commit bob holds without its history (left by a fetch that failed its check) is neither sent as
    a have nor stood up as a ref: the fetch brings its missing parent and the new log is whole."""
    a, b, setup = history
    hidden = forge(a, "hidden parent\n", [setup])
    orphan = forge(a, "present without its parent\n", [hidden])
    raw = subprocess.run(["git", "cat-file", "commit", orphan], cwd=a, capture_output=True, check=True).stdout
    written = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=b, input=raw, capture_output=True, check=True
    )
    assert written.stdout.decode().strip() == orphan
    entry = forge(a, "on the orphan\n", [orphan])
    publish_forged_log(a, "newcomer", [entry])
    result = _traced_fetch(b, monkeypatch, tmp_path / "packets")
    assert result.updated_logs == ("newcomer",)
    assert orphan not in _sent(tmp_path / "packets", "have")
    assert _connected(b, git(a, "rev-parse", "refs/agora/log/newcomer").strip())


def test_a_log_deleted_on_the_remote_is_still_pruned_and_quarantined(tmp_path, history):
    a, b, _ = history
    old = git(b, "rev-parse", "refs/agora/remotes/origin/log/acct1").strip()
    git(a, "push", "-q", "origin", ":refs/agora/log/acct1")
    result = sync.fetch(Repository.discover(b), "origin")
    assert [r.account for r in result.rewritten] == ["acct1"]
    assert git(b, "for-each-ref", "refs/agora/remotes/origin/log/acct1") == ""
    assert old in git(b, "for-each-ref", "--format=%(objectname)", "refs/agora/quarantine/")


def test_the_commit_graph_proves_what_it_lists_and_nothing_else(tmp_path, history):
    a, b, setup = history
    listed = git(b, "rev-parse", "refs/agora/remotes/origin/log/acct0~1").strip()
    dangling = forge(b, "dangling\n", [setup])
    common = Path(Repository.discover(b).common_path)
    for old in [common / "objects/info/commit-graph", *(common / "objects/info/commit-graphs").glob("*")]:
        old.unlink(missing_ok=True)  # the first fetch wrote one
    assert in_commit_graph(common / "objects", [listed, dangling]) == set()
    git(b, "commit-graph", "write", "--reachable")
    assert in_commit_graph(common / "objects", [listed, setup, dangling, "0" * 40]) == {listed, setup}
    tip = git(b, "rev-parse", "refs/agora/remotes/origin/log/acct0").strip()
    git(b, "update-ref", "refs/agora/remotes/origin/log/acct0", setup)  # a split layer on top
    git(b, "update-ref", "refs/agora/remotes/origin/log/acct0", tip)
    git(b, "update-ref", "refs/heads/extra", dangling)
    git(b, "commit-graph", "write", "--reachable", "--split=no-merge")
    assert (common / "objects/info/commit-graphs/commit-graph-chain").exists()
    assert in_commit_graph(common / "objects", [listed, dangling]) == {listed, dangling}
    git(b, "update-ref", "-d", "refs/heads/extra")
    assert proven(common, [dangling, tip], ref_tips=[tip]) == {dangling, tip}


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong version"])
def test_a_damaged_commit_graph_proves_nothing(tmp_path, history, damage):
    _, b, setup = history
    git(b, "commit-graph", "write", "--reachable")
    path = Path(Repository.discover(b).common_path) / "objects/info/commit-graph"
    data = path.read_bytes()
    path.chmod(0o644)
    if damage == "garbage":
        path.write_bytes(b"CGPH\x01\x01\x05\x00" + b"\xff" * 200)
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(data[:4] + b"\x02" + data[5:])
    assert in_commit_graph(path.parent.parent, [setup]) == set()


def test_probed_tips_are_stored_only_when_everything_under_them_is_present(history):
    """The check that replaces git fetch's: a new tip whose tree names a missing blob is refused and
    no tracking ref moves; a whole one is stored."""
    _, b, setup = history
    repo = Repository.discover(b)
    missing = subprocess.run(
        ["git", "mktree", "--missing"],
        cwd=b,
        input=f"100644 blob {'1' * 40}\tgone.txt\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    broken = forge(b, "names a missing blob\n", [setup], tree=missing)
    whole = forge(b, "whole\n", [setup])
    tracking = {
        "refs/agora/remotes/origin/log/acct0": git(b, "rev-parse", "refs/agora/remotes/origin/log/acct0").strip()
    }
    assert not sync._store_probed(repo, "origin", {"refs/agora/log/newcomer": broken}, tracking, {setup})
    assert git(b, "for-each-ref", "refs/agora/remotes/origin/log/newcomer") == ""
    assert sync._store_probed(repo, "origin", {"refs/agora/log/newcomer": whole}, tracking, {setup})
    assert git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer").strip() == whole
    moved_meanwhile = {"refs/agora/remotes/origin/log/acct0": setup}  # not what the ref holds
    assert not sync._store_probed(repo, "origin", {"refs/agora/log/acct0": whole}, moved_meanwhile, {setup})
    assert (
        git(b, "rev-parse", "refs/agora/remotes/origin/log/acct0").strip()
        == tracking["refs/agora/remotes/origin/log/acct0"]
    )


def test_a_small_project_fetches_with_one_git_fetch(monkeypatch, history):
    a, b, setup = history
    monkeypatch.undo()  # the default threshold: this project is far below it
    git(b, "commit-graph", "write", "--reachable")
    assert 0 < commit_graph_size(b / ".git" / "objects") < sync.PROBE_FROM_COMMITS

    def no_probe(*args, **kwargs):
        raise AssertionError("a small project was probed")

    monkeypatch.setattr(sync, "_fetch_moved", no_probe)
    asked = []
    real_transfer = Git.transfer
    monkeypatch.setattr(Git, "transfer", lambda self, *a, **kw: asked.append(a[0]) or real_transfer(self, *a, **kw))
    publish_forged_log(a, "newcomer", [forge(a, "first\n", [setup])])
    assert sync.fetch(Repository.discover(b), "origin").updated_logs == ("newcomer",)
    assert asked == ["fetch"]  # no listing either: one round trip


def test_a_large_clone_reads_its_refs_while_the_remote_lists_its_own(monkeypatch, history):
    """The listing's round trip and the read of every local ref overlap: the refs are read only once
    the listing has been asked for (sequentially, in the other order, this would wait forever)."""
    a, b, setup = history
    listing_asked = threading.Event()
    real_transfer, real_refs = Git.transfer, Git.for_each_ref

    def transfer(self, *args, **kwargs):
        if args[0] == "ls-remote":
            listing_asked.set()
        return real_transfer(self, *args, **kwargs)

    def for_each_ref(self, *args, **kwargs):
        if args == ("refs/",):
            assert listing_asked.wait(30), "the refs were read before the listing was asked for"
        return real_refs(self, *args, **kwargs)

    monkeypatch.setattr(Git, "transfer", transfer)
    monkeypatch.setattr(Git, "for_each_ref", for_each_ref)
    entry = forge(a, "on the setup\n", [setup])
    publish_forged_log(a, "newcomer", [entry])
    result = sync.fetch(Repository.discover(b), "origin")
    assert result.updated_logs == ("newcomer",) and result.new_contributions == 1
    assert (
        git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer").strip()
        == git(a, "rev-parse", "refs/agora/log/newcomer").strip()
    )


def test_commit_graph_size_counts_every_file_of_a_split_chain(history):
    a, b, setup = history
    objects = b / ".git" / "objects"
    (objects / "info" / "commit-graph").unlink(missing_ok=True)  # the fetch wrote one
    shutil.rmtree(objects / "info" / "commit-graphs", ignore_errors=True)
    assert commit_graph_size(objects) == 0
    git(b, "commit-graph", "write", "--reachable")
    reachable = int(git(b, "rev-list", "--all", "--count").strip())
    assert commit_graph_size(objects) == reachable
    (objects / "info" / "commit-graph").unlink()
    git(b, "commit-graph", "write", "--reachable", "--split")
    publish_forged_log(a, "newcomer", [forge(a, "first\n", [setup])])
    git(b, "fetch", "-q", "origin", "+refs/agora/log/*:refs/agora/remotes/origin/log/*")
    git(b, "commit-graph", "write", "--reachable", "--split=no-merge")
    chain = (objects / "info" / "commit-graphs" / "commit-graph-chain").read_text().split()
    assert len(chain) == 2 and not (objects / "info" / "commit-graph").exists()
    assert commit_graph_size(objects) == int(git(b, "rev-list", "--all", "--count").strip()) == reachable + 2


def test_a_full_disk_while_adopting_the_probe_leaves_no_half_copy_and_falls_back(monkeypatch, history):
    import errno

    from git_agora.refs import boundary

    a, b, setup = history
    publish_forged_log(a, "newcomer", [forge(a, "first\n", [setup])])

    def full_disk(source, target):
        with open(target, "wb") as out:
            out.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(boundary.shutil, "copyfile", full_disk)
    assert sync.fetch(Repository.discover(b), "origin").updated_logs == ("newcomer",)  # the plain fetch did it
    assert not list((b / ".git" / "objects").rglob("tmp-probe-*"))
    tip = git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer").strip()
    assert _connected(b, tip)


def test_the_probe_s_scratch_repository_is_one_git_recognizes(tmp_path):
    """The files written for the probe's scratch repository make a bare repository of its own, with this
    clone's configuration: git run inside it never walks up to the clone around it."""
    from git_agora.refs.boundary import _bare_repository

    clone = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    git(clone, "config", "remote.origin.url", "https://example.invalid/x.git")
    scratch = clone / ".git" / "agora" / "probe-x"
    _bare_repository(scratch, clone / ".git" / "config")
    assert git(scratch, "rev-parse", "--git-dir", "--is-bare-repository").split() == [".", "true"]
    assert git(scratch, "config", "remote.origin.url").strip() == "https://example.invalid/x.git"
    assert git(scratch, "config", "gc.auto").strip() == "0"
    git(scratch, "fsck", "--no-progress")


def _loose_refs(clone: Path) -> int:
    """Loose refs under refs/agora, which the fetch counts."""
    return sum(1 for p in (clone / ".git" / "refs" / "agora").rglob("*") if p.is_file())


def test_a_fetch_packs_the_refs_once_many_are_loose(monkeypatch, history):
    """Every log a fetch moves leaves its tracking ref loose; from `LOOSE_REFS_PACKED_AT` loose refs the
    fetch packs them (as `git gc` would), and every ref reads as it did."""
    import git_agora

    a, b, setup = history
    bob = git_agora.open_project(b)
    monkeypatch.setattr(sync, "LOOSE_REFS_PACKED_AT", _loose_refs(b) + 2)
    publish_forged_log(a, "newcomer0", [forge(a, "first of newcomer 0\n", [setup])])
    assert git_agora.fetch(bob).updated_logs == ("newcomer0",)
    assert not (b / ".git" / "packed-refs").exists()  # one short: left as git left them
    publish_forged_log(a, "newcomer1", [forge(a, "first of newcomer 1\n", [setup])])
    assert git_agora.fetch(bob).updated_logs == ("newcomer1",)
    assert _loose_refs(b) == 0
    listed = git(b, "for-each-ref", "--format=%(objectname) %(refname)", "refs/agora/")
    assert len(listed.splitlines()) == 5 and "refs/agora/remotes/origin/log/newcomer1" in listed
    assert (
        git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer1").strip()
        == git(a, "rev-parse", "refs/agora/log/newcomer1").strip()
    )
    publish_forged_log(a, "newcomer2", [forge(a, "first of newcomer 2\n", [setup])])
    assert git_agora.fetch(bob).updated_logs == ("newcomer2",)  # packed refs move as loose ones did


@pytest.mark.parametrize("past", [False, True])
def test_a_fetch_the_probe_answered_packs_what_it_adopted_once_past_gits_limits(monkeypatch, history, past):
    """The probe's objects are adopted loose and no `git fetch` runs in the clone to pack them: past git's
    own limits the fetch asks git's upkeep, which packs them (every object still there); below, it does
    not ask."""
    a, b, setup = history
    limit = -(-upkeep.GC_AUTO // 256)
    files_stored_in_folder_17(b, limit + 1 if past else limit - 4)  # a few below: adopted objects may land there
    git(b, "add", "-A")
    git(b, "-c", "gc.auto=0", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "samples")
    git(b, "config", "gc.autoDetach", "false")
    asked: list[bool] = []
    monkeypatch.setattr(sync, "maintain_when_loose", lambda *args: asked.append(upkeep.maintain_when_loose(*args)))
    monkeypatch.setattr(Git, "transfer", _no_plain_fetch(Git.transfer))
    publish_forged_log(a, "newcomer", [forge(a, "newcomer's first\n", [setup])])
    assert sync.fetch(Repository.discover(b), "origin").updated_logs == ("newcomer",)
    assert asked == [past]
    assert (loose_objects(b) == 0) == past
    assert _connected(b, git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer").strip())


def _no_plain_fetch(transfer):
    def probed_only(self, *args, **kwargs):
        assert not (args[0] == "fetch" and not any(a.startswith("--depth=") for a in args)), "the probe answers"
        return transfer(self, *args, **kwargs)

    return probed_only


@pytest.fixture
def files_history(tmp_path, remote):
    """alice's clone `a` of a remote whose setup holds 150 files, with a first result on it; bob's clone
    `b` fetched it (a pack: more objects than git unpacks); the result's sha."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    for i in range(150):
        (a / f"f{i}.txt").write_text(f"file {i}\n")
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "setup")
    first = forge(a, "result 0\n", [git(a, "rev-parse", "HEAD").strip()])
    publish_forged_log(a, "acct0", [first])
    b = make_clone(tmp_path, "b", str(remote), "bob")
    assert sync.fetch(Repository.discover(b), "origin").new_contributions == 1
    return a, b, first


@pytest.mark.parametrize("new_files", [1, 120])
def test_a_probe_stores_only_what_this_clone_lacks(monkeypatch, files_history, new_files):
    """A shallow probe brings a new entry's whole tree (150 files this clone has): only the objects this
    clone lacks are stored, not the project's files again; an entry that brings more new objects than git
    unpacks (`UNPACK_BELOW`) keeps its pack, as git fetch would."""
    a, b, first = files_history
    packs = sorted((b / ".git" / "objects" / "pack").glob("*.pack"))
    for i in range(new_files):
        (a / f"f{i}.txt").write_text(f"changed {i}\n")
    git(a, "add", "-A")
    entry = forge(a, "result 1\n", [first], tree=git(a, "write-tree").strip())
    publish_forged_log(a, "acct1", [entry])
    monkeypatch.setattr(Git, "transfer", _no_plain_fetch(Git.transfer))
    assert sync.fetch(Repository.discover(b), "origin").updated_logs == ("acct1",)
    added = sorted(set((b / ".git" / "objects" / "pack").glob("*.pack")) - set(packs))
    assert len(added) == (new_files + 4 >= boundary.UNPACK_BELOW), added  # the log commit, the entry, its tree
    if added:
        listed = git(b, "verify-pack", "-v", str(added[0].with_suffix(".idx")))
        assert "blob" in listed
    assert _connected(b, git(b, "rev-parse", "refs/agora/remotes/origin/log/acct1").strip())
    assert git(b, "cat-file", "-p", f"{entry}:f0.txt") == "changed 0\n"


def test_a_failed_unpack_falls_back_to_a_plain_fetch(monkeypatch, files_history):
    """`git unpack-objects` failing (a full disk) leaves what it wrote, whole objects, and the fetch
    goes on as a plain one."""
    a, b, first = files_history
    publish_forged_log(a, "acct1", [forge(a, "result 1\n", [first])])
    unpacked: list[Path] = []

    def full_disk(common_dir, pack):
        unpacked.append(pack)
        raise OSError("fatal: write error: No space left on device")

    monkeypatch.setattr(boundary, "_unpack", full_disk)
    assert sync.fetch(Repository.discover(b), "origin").updated_logs == ("acct1",)
    assert unpacked  # the probe's pack was to be unpacked; the plain fetch brought it instead
    assert _connected(b, git(b, "rev-parse", "refs/agora/remotes/origin/log/acct1").strip())


def test_a_probe_adopts_no_object_this_clone_holds_packed(monkeypatch, history):
    """The probe's third level brings commits this clone holds (the entry's parent, the old tip's), loose:
    one held in a pack is not copied beside it (`git count-objects` would list it as prune-packable)."""
    a, b, setup = history
    git(b, "repack", "-a", "-d", "-q")  # as a clone's first fetch leaves a large project: packed
    assert loose_objects(b) == 0
    parent = git(b, "rev-parse", "refs/agora/remotes/origin/log/acct1^2").strip()
    publish_forged_log(a, "newcomer", [forge(a, "a +1\n", [parent])])
    monkeypatch.setattr(Git, "transfer", _no_plain_fetch(Git.transfer))
    assert sync.fetch(Repository.discover(b), "origin").updated_logs == ("newcomer",)
    counts = dict(line.split(": ") for line in git(b, "count-objects", "-v").splitlines())
    assert counts["prune-packable"] == "0" and counts["count"] == "2", counts  # the log commit, the entry
    assert _connected(b, git(b, "rev-parse", "refs/agora/remotes/origin/log/newcomer").strip())


class _Store:
    """A commit store for `boundary._boundaries`: sha -> parents, counting each read."""

    def __init__(self, graph: dict[str, list[str]]):
        self.graph, self.reads = graph, 0

    def commit(self, sha: str) -> bytes | None:
        self.reads += 1
        if sha not in self.graph:
            return None
        return b"tree " + b"0" * 40 + b"\n" + b"".join(b"parent %s\n" % p.encode() for p in self.graph[sha]) + b"\n"


def _sha(name: str) -> str:
    return name.encode().hex().ljust(40, "0")[:40]


def test_the_probe_reads_each_commit_once_however_many_logs_share_it():
    """A published graph that 200 logs point into: the boundary is one walk (a walk per log would read
    the shared commits 200 times: a stall someone else's publishing could cause). A log whose path
    leaves the probe is not reached; the others are, with the commits they rest on."""
    from git_agora.refs.boundary import _boundaries

    old, gone = _sha("old"), _sha("gone")
    chain = [_sha(f"c{n}") for n in range(1000)]
    theirs_graph = {chain[0]: [old], **{chain[n]: [chain[n - 1]] for n in range(1, 1000)}}
    tips = {}
    for n in range(200):
        theirs_graph[_sha(f"log{n}")] = [chain[-1], _sha(f"entry{n}")]
        theirs_graph[_sha(f"entry{n}")] = [old if n % 2 else _sha(f"mine{n}")]
        tips[f"refs/agora/log/a{n}"] = _sha(f"log{n}")
    theirs_graph[_sha("short")] = [chain[500], gone]  # `gone`: in neither store
    tips["refs/agora/log/short"] = _sha("short")
    ours = _Store({old: [], **{_sha(f"mine{n}"): [] for n in range(0, 200, 2)}})
    theirs = _Store(theirs_graph)
    boundary, reached = _boundaries(theirs, ours, tips)
    assert reached == set(tips) - {"refs/agora/log/short"}
    assert boundary == {old} | {_sha(f"mine{n}") for n in range(0, 200, 2)}
    assert theirs.reads <= len(theirs_graph) + 1 and ours.reads <= len(theirs_graph) + 102
