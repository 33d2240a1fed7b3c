"""Refs read from git's files (`refs.git.read_refs`) equal `git for-each-ref`: loose over packed, peeled
lines, lock files, and git itself wherever the files are not plain."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from git_agora.refs.files import read_refs
from git_agora.refs.git import Git
from git_agora.refs.store import Repository

PREFIX = "refs/agora/"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(path))
    for name in ("a", "b", "c"):
        git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", name)
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "-m", "annotated", "v1", "HEAD~1")
    commits = git(path, "rev-list", "HEAD").split()
    tag = git(path, "rev-parse", "v1")
    git(path, "update-ref", "refs/agora/log/alice", commits[0])
    git(path, "update-ref", "refs/agora/log/bob", commits[1])
    git(path, "update-ref", "refs/agora/remotes/origin/log/carol", commits[2])
    git(path, "update-ref", "refs/agora/tagged", tag)  # packed with a peeled line below
    git(path, "pack-refs", "--all")
    git(path, "update-ref", "refs/agora/log/bob", commits[2])  # loose now, over the packed value
    git(path, "update-ref", "refs/agora/log/dave", commits[1])  # loose only
    (path / ".git" / "refs" / "agora" / "log" / "erin.lock").write_text(commits[0] + "\n")  # an update underway
    (path / ".git" / "refs" / "agora" / "gone").write_text("1" * 40 + "\n")  # no such object: git lists it
    return path


def by_git(path: Path) -> dict[str, str]:
    return Git(path).for_each_ref(PREFIX)


def test_refs_read_from_files_equal_git_for_each_ref(repo):
    assert "^" in (repo / ".git" / "packed-refs").read_text()  # the peeled line is there to skip
    found = read_refs(repo / ".git", PREFIX)
    assert found == by_git(repo) and list(found or {}) == list(by_git(repo))
    assert found is not None and "refs/agora/log/erin.lock" not in found and "refs/agora/tagged" in found
    assert read_refs(repo / ".git", "refs/agora/log/") == Git(repo).for_each_ref("refs/agora/log/")
    git(repo, "update-ref", "-d", "refs/agora/log/bob")  # deleted: gone from loose and packed both
    assert read_refs(repo / ".git", PREFIX) == by_git(repo)
    assert read_refs(repo / ".git", "refs/agora/none/") == {} == Git(repo).for_each_ref("refs/agora/none/")


@pytest.mark.parametrize(
    "name, content",
    [("sym", "ref: refs/agora/log/alice\n"), ("junk", "junk\n"), ("dangling", "ref: refs/agora/nothing\n")],
)
def test_what_only_git_can_tell_is_left_to_git(repo, name, content):
    (repo / ".git" / "refs" / "agora" / name).write_text(content)
    assert read_refs(repo / ".git", PREFIX) is None
    assert Repository.discover(repo).refs_under(PREFIX) == by_git(repo)


def test_odd_names_and_reftable_are_left_to_git(repo):
    (repo / ".git" / "refs" / "agora" / ".hidden").write_text(git(repo, "rev-parse", "HEAD") + "\n")
    assert read_refs(repo / ".git", PREFIX) is None
    assert Repository.discover(repo).refs_under(PREFIX) == by_git(repo)
    (repo / ".git" / "refs" / "agora" / ".hidden").unlink()
    (repo / ".git" / "reftable").mkdir()
    assert read_refs(repo / ".git", PREFIX) is None
