"""Publishing captures the work tree exactly as `git add -A` would see it, whatever the timestamps."""

from __future__ import annotations

import pytest

import git_agora as agora
from agora_testing import git, make_clone


@pytest.mark.slow
def test_rapid_same_size_edits_are_never_lost(tmp_path, remote):
    clone = make_clone(tmp_path, "a", str(remote), "alice")
    (clone / "model.py").write_text("order = 0\n")
    project = agora.open_project(clone)
    agora.init_project(project, metric="bpc")
    git(clone, "remote", "remove", "origin")  # a local project: the test is about the snapshot
    project = agora.open_project(clone)
    last = project.base
    for i in range(1, 301):
        agora.checkout(project, last)
        content = f"order = {i % 10}\n"  # the same size every time, within the same second
        (clone / "model.py").write_text(content)
        published = agora.publish_worktree(project, agora.Push(f"order {i % 10}"))
        assert git(clone, "show", f"{published.sha}:model.py") == content, f"cycle {i} lost its edit"
        assert git(clone, "status", "--porcelain") == "", f"cycle {i}: git status is not truthful"
        last = published.sha


def test_status_after_push_sees_a_later_edit_in_the_same_second(project):
    agora_project = agora.open_project(project)
    (project / "model.py").write_text("order = 7\n")
    agora.publish_worktree(agora_project, agora.Push("order 7"))
    (project / "model.py").write_text("order = 8\n")  # same size, same second as the push
    assert git(project, "status", "--porcelain").strip() == "M model.py"
