"""Checking out a contribution: its exact tree, remembered as the parent of the next push."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import AgoraError
from ..project import Project


@dataclass(frozen=True)
class CheckedOut:
    sha: str
    title: str
    path: Path
    status: str | None = None  # with --best: its status as readers show it ("unchecked", "confirmed", ...)
    note: str | None = None  # with --best: `checked_best.unchecked_note`

    def to_dict(self) -> dict:
        out = {"sha": self.sha, "path": str(self.path)}
        return out if self.status is None else {**out, "status": self.status, "note": self.note}


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


def checkout_best(project: Project, checked: bool = False, worktree: Path | None = None) -> CheckedOut:
    """`checkout --best`: the result `clone` would check out (`checked_best.best_picks`), said with its status; with
    `checked`, the best run-backed result when the best is unchecked (`checked_best`)."""
    from .checked_best import best_picks, unchecked_note
    from .indexing import FRAME_COLUMNS, load

    contributions = load(project, FRAME_COLUMNS).contributions
    picks = best_picks(project, contributions)
    if picks is None:
        raise AgoraError("nothing is scored yet: no best result to check out")
    chosen = picks.chosen(checked)
    done = checkout(project, chosen.sha, worktree)
    note = unchecked_note(picks, chosen, project.config.metric)
    return replace(done, status=chosen.status, note=note)
