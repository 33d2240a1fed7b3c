"""Where git agora writes objects without a git command that would pack them (a post writes its commits
itself; a fetch the probe answered adopts its objects loose), it asks git's own upkeep once the store is
past git's default limits, estimated as git estimates them (`refs.upkeep`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agora_testing import agora, files_stored_in_folder_17, git, loose_objects
from git_agora.refs import upkeep
from git_agora.refs.git import Git

SAMPLE_LIMIT = -(-upkeep.GC_AUTO // 256)  # loose objects under objects/17 that git tolerates: 27


def _store(tmp_path: Path, in_folder_17: int) -> Path:
    """A repository whose commit holds `in_folder_17` blobs stored loose under objects/17 (committed with
    git's own upkeep off, so they stay loose), git's upkeep then run in the foreground."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    files_stored_in_folder_17(repo, in_folder_17)
    git(repo, "add", "-A")
    dated = {"GIT_AUTHOR_DATE": "1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 +0000"}  # a fixed sha
    commit = ["git", "-c", "gc.auto=0", "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-m", "samples"]
    subprocess.run(commit, cwd=repo, env={**os.environ, **dated}, check=True)
    assert upkeep._loose_in_sample(str(repo / ".git" / "objects")) == in_folder_17  # the tree, the commit elsewhere
    git(repo, "config", "gc.autoDetach", "false")
    return repo


@pytest.mark.parametrize("in_folder_17", [SAMPLE_LIMIT, SAMPLE_LIMIT + 1])
def test_the_estimate_is_gits_own(tmp_path, in_folder_17):
    """Past the estimate exactly when `git gc --auto` packs: one object more than git tolerates."""
    repo = _store(tmp_path, in_folder_17)
    objects = str(repo / ".git" / "objects")
    past = upkeep.past_git_limits(objects)
    assert past == (in_folder_17 > SAMPLE_LIMIT)
    before = loose_objects(repo)
    git(repo, "gc", "--auto", "--quiet")
    assert (loose_objects(repo) < before) == past
    assert upkeep.maintain_when_loose(Git(repo), objects) is False  # after git packed, or as git left it


def test_git_decides_with_its_configuration(tmp_path):
    repo = _store(tmp_path, SAMPLE_LIMIT + 1)
    git(repo, "config", "gc.auto", "0")
    before = loose_objects(repo)
    assert upkeep.maintain_when_loose(Git(repo), str(repo / ".git" / "objects")) is True  # asked ...
    assert loose_objects(repo) == before  # ... and git, told not to, did not pack


def test_packs_count_unless_kept(tmp_path):
    objects = tmp_path / "objects"
    (objects / "pack").mkdir(parents=True)
    for n in range(upkeep.GC_AUTO_PACK_LIMIT + 1):
        (objects / "pack" / f"pack-{n:040x}.pack").write_bytes(b"")
    assert upkeep.past_git_limits(str(objects))
    (objects / "pack" / f"pack-{0:040x}.keep").write_bytes(b"")
    assert not upkeep.past_git_limits(str(objects))


def test_names_git_does_not_count_are_not_counted(tmp_path):
    objects = tmp_path / "objects"
    (objects / "17").mkdir(parents=True)
    for n in range(SAMPLE_LIMIT + 5):
        (objects / "17" / f"tmp_obj_{n:032x}").write_bytes(b"")  # a writer's temporary file
    assert not upkeep.past_git_limits(str(objects))
    assert not upkeep.past_git_limits(str(tmp_path / "nothing-here"))


@pytest.mark.parametrize("in_folder_17", [SAMPLE_LIMIT - 4, SAMPLE_LIMIT + 1])
def test_a_push_that_leaves_the_store_past_gits_limits_packs_it(project, in_folder_17):
    """`git agora push` writes the work tree's blobs and its commits loose; past git's limit they are
    packed (every object still readable), below it left as they are (a few below: the push's own
    commits and trees, dated now, may land in the folder too)."""
    a = project
    git(a, "config", "gc.autoDetach", "false")
    files_stored_in_folder_17(a, in_folder_17)
    published = agora(a, "push", "-m", "samples", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
    assert published["push"] == "pushed"
    left = loose_objects(a)
    assert (left == 0) == (in_folder_17 > SAMPLE_LIMIT), left
    assert git(a, "cat-file", "-t", published["sha"]).strip() == "commit"
    assert git(a, "fsck", "--connectivity-only", "--no-dangling") == ""
