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
    """Check out contribution `rev` in place (detached HEAD) or in a new linked work tree."""
    from ..workspace import checkout as checkout_tree

    contribution = project.contribution(rev)
    assert contribution.sha is not None
    path = checkout_tree(project.repo, contribution.sha, worktree)
    Project.open(path).set_base(contribution.sha)
    return CheckedOut(contribution.sha, contribution.title, path)
