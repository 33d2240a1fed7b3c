"""`run`: evaluate exactly what `push` would publish, from a clean export of the work tree."""

from __future__ import annotations

from dataclasses import dataclass

from ..evaluate import EvalRun
from ..project import Project


@dataclass(frozen=True)
class Evaluated:
    run: EvalRun
    tree: str

    def to_dict(self) -> dict:
        return {**self.run.to_dict(), "tree": self.tree}


def run(project: Project, timeout: float | None = None) -> Evaluated:
    """Run the project's evaluation on a clean export of the work tree (tracked and untracked,
    non-ignored files: the tree `publish_worktree` would publish), not on the directory itself."""
    from ..evaluate import evaluate_tree
    from ..workspace import snapshot

    with snapshot(project.repo) as snap:
        result = evaluate_tree(project.repo, project.config, snap.tree, timeout)
    return Evaluated(result, snap.tree)
