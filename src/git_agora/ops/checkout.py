"""Checking out a contribution: its exact tree, remembered as the parent of the next push."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..project import Project


@dataclass(frozen=True)
class CheckedOut:
    sha: str
    title: str
    path: Path

    def to_dict(self) -> dict:
        return {"sha": self.sha, "path": str(self.path)}


def checkout(project: Project, rev: str, worktree: Path | None = None) -> CheckedOut:
    """Check out contribution `rev` in place (detached HEAD) or in a new linked work tree.

    The parent of the next push is recorded before HEAD moves; if the checkout then fails, the previous
    record is put back (in place) or the new work tree removed, so HEAD and the record never disagree.
    """
    from ..workspace import checkout as checkout_tree

    contribution = project.contribution(rev)
    sha = contribution.sha
    assert sha is not None
    if worktree is not None:
        path = checkout_tree(project.repo, sha, worktree, record=lambda p: Project.open(p).set_base(sha))
        return CheckedOut(sha, contribution.title, path)
    previous = project.recorded_base()
    try:
        path = checkout_tree(project.repo, sha, None, record=lambda _: project.set_base(sha))
    except BaseException:
        project.restore_base(previous)
        raise
    return CheckedOut(sha, contribution.title, path)
