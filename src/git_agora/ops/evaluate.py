"""`run`: evaluate exactly what `push` would publish, from a clean export, with the policy's evaluator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import AgoraError
from ..evaluate import EvalRun, evaluate_tree
from ..evaluate.sandbox import require_bwrap
from ..project import Project
from ..workspace import snapshot

SANDBOX_CONFIG = "agora.sandbox"


@dataclass(frozen=True)
class Evaluated:
    run: EvalRun
    tree: str
    evaluator: dict[str, Any]  # the evaluator identity (commands, files, scorer packages, sha256)
    quick: bool = False  # a quick run: not comparable, never published as a claim
    sandbox: bool = True
    limits: dict[str, Any] | None = None
    run_folder: str | None = None  # where the steps' stdout and stderr are kept, on this machine only

    def to_dict(self) -> dict:
        return {
            **self.run.to_dict(),
            "tree": self.tree,
            "evaluator": self.evaluator,
            "quick": self.quick,
            "comparable": not self.quick,
            "sandbox": self.sandbox,
            "limits": self.limits,
            "run_folder": self.run_folder,
        }


def check_sandbox() -> None:
    """Refuse in one line, saying what to do, where the sandbox cannot start (no bubblewrap; as root,
    no setpriv). Whether user namespaces work shows only when a step starts."""

    require_bwrap()


def sandbox_choice(project: Project, requested: bool | None) -> bool:
    """Whether contribution code runs in the sandbox: `requested` (--sandbox / --no-sandbox), else
    `git config agora.sandbox` (on unless set off). Every evaluation that runs unsandboxed says so."""
    source = "--no-sandbox"
    if requested is None:
        value = (project.repo.git.config_get(SANDBOX_CONFIG) or "on").strip().lower()
        if value in ("on", "true", "yes", "1"):
            return True
        if value not in ("off", "false", "no", "0"):
            raise AgoraError(f"git config {SANDBOX_CONFIG} is {value!r}: set it to on or off")
        requested, source = False, f"git config {SANDBOX_CONFIG} {value}"
    if not requested:
        project.feedback.notice(
            f"the sandbox is off ({source}): contribution code runs on this machine as you, "
            "with your files, keys and network"
        )
    return requested


def run(project: Project, timeout: float | None = None, quick: bool = False, sandbox: bool | None = None) -> Evaluated:
    """Evaluate a clean export of the work tree (tracked and untracked, non-ignored files: the tree
    `publish_worktree` would publish) with the evaluator of the policy in force for the checked-out
    contribution, in the sandbox unless `sandbox` is False (None: `sandbox_choice`); local changes to
    evaluator files are ignored, and a notice says so."""
    from ..policy import changed_protected_files

    policy = project.policy(project.base)
    sandboxed = sandbox_choice(project, sandbox)
    with snapshot(project.repo) as snap:
        changed = changed_protected_files(project.repo, snap.tree, policy)
        if changed:
            project.feedback.notice(
                f"your changes to {', '.join(changed)} are not used: the evaluator comes from "
                f"the project's policy ({policy.sha[:12]})"
            )
        evaluation = evaluate_tree(project.repo, policy, snap.tree, timeout, project.feedback, quick, sandboxed)
    return Evaluated(
        evaluation.run,
        snap.tree,
        evaluation.identity,
        quick,
        evaluation.sandbox,
        dict(evaluation.limits),
        evaluation.run_folder,
    )
