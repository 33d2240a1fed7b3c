"""Facts remembered under .git/agora: recalled by key, bounded, and never an error when unwritable."""

from __future__ import annotations

import os

from agora_testing import agora, git
from git_agora import amendments, memo
from git_agora.policy import POLICY_MEMO, policy_sha_for
from git_agora.project import Project


def test_remembered_facts_are_recalled_bounded_and_optional(tmp_path, monkeypatch):
    folder = tmp_path / "agora"
    assert memo.recall(folder, "kind", "a") is None
    memo.remember(folder, "kind", "a", "1")
    memo.remember(folder, "kind", "a", "2")
    assert memo.recall(folder, "kind", "a") == "2"
    assert (folder / "kind").read_text().count("a ") == 1
    monkeypatch.setattr(memo, "KEEP", 3)
    for key in "bcd":
        memo.remember(folder, "kind", key, key)
    assert memo.recall(folder, "kind", "a") is None and memo.recall(folder, "kind", "d") == "d"
    (folder / "kind").write_bytes(b"\xff\xfe broken")
    assert memo.recall(folder, "kind", "b") is None
    blocked = tmp_path / "a-file"  # no folder can be made here (as in a read-only .git, also for root)
    blocked.write_text("")
    memo.remember(blocked / "agora", "kind", "a", "1")  # no error: only not remembered
    assert memo.recall(blocked / "agora", "kind", "a") is None


def test_the_policy_in_force_is_found_once_per_contribution(project, monkeypatch):
    """Remembered per contribution; a contribution built on one remembered needs no git process (its
    first-parent line is walked to the remembered one), and a line longer than the walk asks git."""
    first = agora(project, "post", "-m", "one", "--tag", "insight", "--json").json()["sha"]
    second = agora(project, "post", "-m", "two", "--tag", "insight", "--parent", first, "--json").json()["sha"]
    p = Project.open(project)
    setup = p.setup
    os.unlink(os.path.join(p.repo.agora_path, POLICY_MEMO))  # what the posts remembered
    assert policy_sha_for(p.repo, setup, setup) == setup
    assert memo.recall(p.repo.agora_path, POLICY_MEMO, f"{setup}-{setup}") == setup
    ran = type(p.repo.git).run
    monkeypatch.setattr(type(p.repo.git), "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran git")))
    assert policy_sha_for(p.repo, setup, setup) == setup
    assert policy_sha_for(p.repo, second, setup) == setup  # walked: second, first, then the setup's answer
    assert memo.recall(p.repo.agora_path, POLICY_MEMO, f"{setup}-{second}") == setup
    monkeypatch.setattr(type(p.repo.git), "run", ran)
    monkeypatch.setattr(amendments, "WALK", 0)
    assert policy_sha_for(p.repo, first, setup) == setup  # git's candidates (none)
    assert git(project, "rev-parse", setup).strip() == setup
