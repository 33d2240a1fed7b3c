"""A post starts git's first three processes before its imports (`refs.headstart`); the repository that
takes them over must see exactly what it would have seen starting them itself, and nothing may be left
running, wherever the post is run from."""

from __future__ import annotations

import pytest

from agora_testing import agora, git
from git_agora.refs.headstart import HeadStart
from git_agora.refs.store import NotARepository, Repository


def _same_view(directory) -> None:
    plain = Repository.discover(directory)
    with HeadStart(directory) as started:
        early = Repository.discover(directory, started)
        assert started.location is started.config is started.objects is None  # all taken over
    for attribute in ("worktree", "git_dir", "common_dir", "bare"):
        assert getattr(early, attribute) == getattr(plain, attribute), attribute
    for key in ("agora.account", "remote.origin.url", "user.name", "core.bare"):
        assert early.git.config_get(key) == plain.git.config_get(key), key
    head = git(directory, "rev-parse", "HEAD").strip()
    assert early.commit_info(head) == plain.commit_info(head) is not None


def test_the_repository_taken_over_is_the_one_git_finds(project):
    _same_view(project)
    (project / "deep" / "er").mkdir(parents=True)
    _same_view(project / "deep" / "er")
    git(project, "worktree", "add", "-q", "--detach", str(project.parent / "linked"))
    _same_view(project.parent / "linked")


def test_nothing_is_left_running(tmp_path, project):
    started = HeadStart(project)
    processes = [started.location, started.config, started.objects]
    started.close()
    assert all(p is not None and p.returncode is not None for p in processes)
    outside = tmp_path / "not-a-repository"
    outside.mkdir()
    with HeadStart(outside) as started, pytest.raises(NotARepository):
        Repository.discover(outside, started)
    with HeadStart(tmp_path / "missing") as started:  # git cannot even start there
        assert started.location is started.config is started.objects is None
        with pytest.raises(NotARepository):
            Repository.discover(tmp_path / "missing", started)


@pytest.mark.parametrize("where", ["subdirectory", "not a repository", "missing"])
def test_a_post_from_anywhere_says_what_git_says(tmp_path, project, where):
    directory = {"subdirectory": project / "sub", "not a repository": tmp_path / "plain", "missing": tmp_path / "gone"}
    target = directory[where]
    if where != "missing":
        target.mkdir()
    r = agora(tmp_path, "-C", str(target), "post", "-m", "from elsewhere", "--tag", "insight", check=False)
    if where == "subdirectory":
        assert r.returncode == 0, r.stderr
        assert "from elsewhere" in git(project, "log", "-1", "--format=%B", "refs/agora/log/alice^2")
    else:
        assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
