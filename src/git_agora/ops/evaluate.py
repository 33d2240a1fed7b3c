"""`run`: evaluate exactly what `push` would publish, from a clean export, with the policy's evaluator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evaluate import EvalRun
from ..project import Project


@dataclass(frozen=True)
class Evaluated:
    run: EvalRun
    tree: str
    evaluator: dict[str, Any]  # the evaluator identity (commands, files, scorer packages, sha256)
    quick: bool = False  # a quick run: not comparable, never published as a claim

    def to_dict(self) -> dict:
        return {
            **self.run.to_dict(),
            "tree": self.tree,
            "evaluator": self.evaluator,
            "quick": self.quick,
            "comparable": not self.quick,
        }


def run(project: Project, timeout: float | None = None, quick: bool = False) -> Evaluated:
    """Evaluate a clean export of the work tree (tracked and untracked, non-ignored files: the tree
    `publish_worktree` would publish) with the evaluator of the policy in force for the checked-out
    contribution; local changes to evaluator files are ignored, and a notice says so."""
    from ..evaluate import evaluate_tree
    from ..policy import changed_protected_files
    from ..workspace import snapshot

    policy = project.policy(project.base)
    with snapshot(project.repo) as snap:
        changed = changed_protected_files(project.repo, snap.tree, policy)
        if changed:
            project.feedback.notice(
                f"your changes to {', '.join(changed)} are not used: the evaluator comes from "
                f"the project's policy ({policy.sha[:12]})"
            )
        evaluation = evaluate_tree(project.repo, policy, snap.tree, timeout, project.feedback, quick)
    return Evaluated(evaluation.run, snap.tree, evaluation.identity, quick)
