"""Faults a clone meets: concurrent fetches, a read-only or full `.git/agora`, a checkout cut short."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agora_testing import agora, git, make_clone

PLAIN_FETCH = (
    "+refs/agora/log/*:refs/agora/remotes/origin/log/*",
    "+refs/agora/identity/*:refs/agora/remotes/origin/identity/*",
)

# --- concurrent fetches ---------------------------------------------------------------------------


def test_twenty_rounds_of_two_concurrent_fetches_never_fail(tmp_path, remote, project):
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    env = {**os.environ}
    for n in range(20):
        agora(project, "post", "-m", f"insight {n}", "--tag", "insight")
        both = [
            subprocess.Popen(["git", "agora", "fetch"], cwd=b, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)
        ]
        for proc in both:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"round {n}: {err.decode()}"
    titles = {row["title"] for row in agora(b, "log", "--json", "--limit", "100").json()}
    assert {f"insight {n}" for n in range(20)} <= titles
    agora(b, "index", "--check")


def test_a_second_fetch_says_it_waits_for_the_first(tmp_path, remote, project):
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    agora(project, "post", "-m", "while busy", "--tag", "insight")
    lock = b / ".git" / "agora" / "fetch.lock"
    with open(lock, "a+") as held:  # this test plays the first fetch
        fcntl.flock(held, fcntl.LOCK_EX)
        second = subprocess.Popen(["git", "agora", "fetch"], cwd=b, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert second.stderr is not None
        line = second.stderr.readline().decode()
        assert "another git agora fetch is running in this clone: waiting" in line
        assert second.poll() is None
        fcntl.flock(held, fcntl.LOCK_UN)
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0 and b"fetched 1 new contribution" in out


# --- a read-only .git/agora -----------------------------------------------------------------------


def read_only(path: Path) -> list[str]:
    """A prefix that runs a command with `path` read-only: plain permissions for a normal user; for root,
    whom permissions do not stop, a read-only bind mount in a private mount namespace."""
    if os.geteuid() != 0:
        for p in [path, *path.rglob("*")]:
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        return []
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
    probe = subprocess.run(["unshare", "-m", "sh", "-c", script, str(path), "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"root without mount namespaces cannot make {path} read-only: {probe.stderr.decode()}")
    return ["unshare", "-m", "sh", "-c", script, str(path)]


def run(prefix: list[str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, "git", "agora", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def restore(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_reading_commands_work_on_a_read_only_agora_dir(tmp_path, remote, project):
    insight = agora(project, "post", "-m", "first", "--tag", "insight", "--json").json()
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    agora(b, "log")
    agora(project, "post", "-m", "arrived by plain git fetch", "--tag", "insight")
    git(b, "fetch", "-q", "origin", *PLAIN_FETCH)
    agora_dir = b / ".git" / "agora"
    before = {p: p.stat().st_mtime_ns for p in agora_dir.rglob("*")}
    prefix = read_only(agora_dir)
    try:
        r = run(prefix, b, "log", "--json")
        assert r.returncode == 0, r.stderr
        assert "arrived by plain git fetch" in r.stdout  # indexed in a temporary copy
        assert "temporary copy" in r.stderr and len(r.stderr.strip().splitlines()) == 1
        for args in (["show", insight["sha"]], ["status"], ["stats"], ["lineage", insight["sha"]], ["whoami"]):
            r = run(prefix, b, *args)
            assert r.returncode == 0, f"{args}: {r.stderr}"
            assert "Traceback" not in r.stderr
        r = run(prefix, b, "fetch")
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
        assert str(agora_dir / "fetch.lock") in r.stderr
    finally:
        if not prefix:
            restore(agora_dir)
    assert {p: p.stat().st_mtime_ns for p in agora_dir.rglob("*")} == before  # nothing was written
    agora(b, "fetch")
    assert agora(b, "log").stderr == ""


# --- a full disk ----------------------------------------------------------------------------------

FULL_DISK = """
import errno, os, sys
from git_agora.index import segments
def full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(args[1]))
segments._write_parquet = full
from git_agora.cli import main
main(sys.argv[1:])
"""


def test_a_full_disk_is_one_line_naming_the_file(tmp_path, remote, project):
    agora(project, "post", "-m", "new", "--tag", "insight")
    b = make_clone(tmp_path, "b", str(remote), "bob")
    git(b, "fetch", "-q", "origin", *PLAIN_FETCH)
    r = subprocess.run([sys.executable, "-c", FULL_DISK, "log"], cwd=b, capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.startswith("git agora: error: cannot write ") and len(r.stderr.strip().splitlines()) == 1
    assert "/.git/agora/index/segments/." in r.stderr and "No space left on device" in r.stderr
    assert [p.name for p in (b / ".git" / "agora" / "index" / "segments").iterdir()] == []  # no half file
    agora(b, "log")
    agora(b, "index", "--check")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="a tmpfs mount needs root")
def test_a_really_full_disk_is_one_line_too(tmp_path, remote, project):
    b = make_clone(tmp_path, "b", str(remote), "bob")
    git(b, "fetch", "-q", "origin", *PLAIN_FETCH)
    index = b / ".git" / "agora" / "index"
    index.mkdir(parents=True)
    script = 'mount -t tmpfs -o size=4k tmpfs "$0" && exec "$@"'  # one page: the first segment does not fit
    r = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(index), "git", "agora", "log"], cwd=b, capture_output=True, text=True
    )
    if "mount" in r.stderr and r.returncode != 1:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr}")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "No space left on device" in r.stderr and str(index) in r.stderr


def test_permission_errors_name_the_path(project):
    trust = project / ".git" / "agora" / "trust.json"
    trust.parent.mkdir(parents=True, exist_ok=True)
    script = (
        "import errno, os, sys\n"
        "from git_agora import trust\n"
        "def denied(*a, **k):\n"
        f"    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), {str(trust)!r})\n"
        "trust._save = denied\n"
        "from git_agora.cli import main\n"
        "main(['status', '--ack', 'all'])\n"
    )
    r = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip() == f"git agora: error: Permission denied: {trust}"


# --- checkout -------------------------------------------------------------------------------------


def test_a_failed_checkout_puts_the_recorded_parent_back(project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    (project / "extra.py").write_text("x = 1\n")
    result = agora(project, "push", "-m", "extra", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
    agora(project, "checkout", setup)
    base = project / ".git" / "agora" / "base"
    assert base.read_text().strip() == setup
    (project / "extra.py").write_text("in the way\n")  # untracked: git refuses to overwrite it
    r = agora(project, "checkout", result["sha"], check=False)
    assert r.returncode == 1 and "cannot check out" in r.stderr
    assert base.read_text().strip() == setup
    assert git(project, "rev-parse", "HEAD").strip() == setup


KILLED_CHECKOUT = """
import os, sys
from git_agora.refs import git
original = git.Git.run
def run(self, *args, **kwargs):
    if args[:1] == ("checkout",):
        os._exit(9)
    return original(self, *args, **kwargs)
git.Git.run = run
from git_agora.cli import main
main(["checkout", sys.argv[1]])
"""


def test_a_checkout_killed_before_head_moves_has_already_recorded_the_parent(project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    (project / "extra.py").write_text("x = 1\n")
    result = agora(project, "push", "-m", "extra", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
    agora(project, "checkout", setup)
    proc = subprocess.run([sys.executable, "-c", KILLED_CHECKOUT, result["sha"]], cwd=project, capture_output=True)
    assert proc.returncode == 9
    assert (project / ".git" / "agora" / "base").read_text().strip() == result["sha"]


def test_a_failed_worktree_checkout_leaves_no_work_tree(tmp_path, project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    script = (
        "import sys\n"
        "from git_agora.project import Project\n"
        "def broken(self, sha):\n"
        "    raise OSError(28, 'No space left on device', str(self._base_file))\n"
        "Project.set_base = broken\n"
        "from git_agora.cli import main\n"
        "main(['checkout', sys.argv[1], '--worktree', sys.argv[2]])\n"
    )
    side = tmp_path / "side"
    r = subprocess.run([sys.executable, "-c", script, setup, str(side)], cwd=project, capture_output=True, text=True)
    assert r.returncode == 1 and "No space left on device" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not side.exists() or not any(side.iterdir())
    assert "side" not in git(project, "worktree", "list")
    assert errno.ENOSPC == 28


def test_concurrent_probed_fetches_take_turns_and_lose_nothing(tmp_path, remote, project, monkeypatch):
    """The probed fetch of a large project (`sync._fetch_moved`: a listing, a shallow scratch fetch, refs
    set directly) under the fetch lock: two at once in one clone, ten rounds, new accounts on old parents."""
    from concurrent.futures import ThreadPoolExecutor

    import git_agora
    from git_agora.refs import sync

    monkeypatch.setattr(sync, "PROBE_FROM_COMMITS", 0)  # a small project takes the large one's path
    b = make_clone(tmp_path, "b", str(remote), "bob")
    git_agora.fetch(git_agora.open_project(b))
    setup = agora(b, "whoami", "--json").json()["setup"]
    probes = []
    real_probe = sync._fetch_moved

    def probe(*args):
        probes.append(real_probe(*args))
        return probes[-1]

    monkeypatch.setattr(sync, "_fetch_moved", probe)
    for n in range(10):
        newcomer = make_clone(tmp_path, f"n{n}", str(remote), f"newcomer{n}")
        agora(newcomer, "fetch")
        agora(newcomer, "post", "-m", f"first of newcomer {n}", "--tag", "insight", "--parent", setup)
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda _: git_agora.fetch(git_agora.open_project(b)), range(2)))
        assert sorted(r.new_contributions for r in results) == [0, 1], f"round {n}"
    assert len(probes) == 20 and all(isinstance(p, dict) for p in probes), "each stored what its probe brought"
    titles = {row["title"] for row in agora(b, "log", "--json", "--limit", "100").json()}
    assert {f"first of newcomer {n}" for n in range(10)} <= titles
    assert git(b, "for-each-ref", sync.BOUNDARY_PREFIX) == ""
    agora(b, "index", "--check")


def test_a_project_in_a_folder_whose_name_is_not_utf8_works_throughout(tmp_path):
    """Linux and git accept any bytes in a folder's name. pyarrow took the index's paths as UTF-8, so in
    such a folder every command that reads the index crashed with a traceback, and a UTF-8 locale's
    strict stdout refused to print the folder's name."""
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))  # Latin-1: not UTF-8
    odd.mkdir()
    remote = odd / "remote.git"
    git(odd, "init", "-q", "--bare", str(remote))
    a = make_clone(odd, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    agora(a, "init", "--metric", "bpc", "--direction", "min", "--tolerance", "0.01")
    posted = agora(a, "post", "-m", "an insight from an odd folder", "--tag", "insight", "--json").json()["sha"]
    assert posted in {c["sha"] for c in agora(a, "log", "--json").json()}
    assert "identical to a rebuild" in agora(a, "index", "--check").stdout
    strict = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    rebuilt = subprocess.run(["git", "agora", "index", "--rebuild"], cwd=a, capture_output=True, env=strict)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert b"/caf\xe9/a/.git/agora/index" in rebuilt.stdout  # the folder's own bytes, as git prints them
    analyzed = agora(a, "analyze", "--json").json()  # writes and reads the embedding and follow-on caches
    assert posted in {row["sha"] for row in analyzed["views"]["recent"]["rows"]}
    assert analyzed["diversity"]["coverage"] == 1.0
    b = make_clone(odd, "b", str(remote), "bob")
    agora(b, "fetch")
    assert agora(b, "show", posted, "--json").json()["description"] == "an insight from an odd folder"


def test_a_sha256_repository_is_refused_in_one_line_and_left_as_it_was(tmp_path):
    """Agora format 1 names contributions by 40-hex SHA-1 ids: a SHA-256 repository is refused by every
    command before anything is written (it used to get SHA-1-named objects and broken refs)."""

    a = tmp_path / "a"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(a)], check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    git(a, "remote", "add", "origin", str(tmp_path / "r.git"))
    (a / "m.py").write_text("x = 1\n")
    before = sorted(p.relative_to(a) for p in (a / ".git").rglob("*"))
    for args in (["init", "--metric", "m", "--account", "al"], ["post", "-m", "x", "--tag", "insight"], ["log"]):
        r = agora(a, *args, check=False)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "is a sha256 repository" in r.stderr and "plain `git init`" in r.stderr
    assert sorted(p.relative_to(a) for p in (a / ".git").rglob("*")) == before
    fsck = subprocess.run(["git", "fsck"], cwd=a, capture_output=True, text=True)
    assert fsck.returncode == 0 and "bad" not in fsck.stdout + fsck.stderr
