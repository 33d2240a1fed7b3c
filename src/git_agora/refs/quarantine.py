"""Quarantine: a remote log that moved backwards or sideways keeps its old tip under
`refs/agora/quarantine/<remote>/<account>/<old tip>`, so nothing once fetched is lost.

The one home of the rule: `git agora fetch` applies it to the tips it moved, and the index applies it
to tips moved by a plain `git fetch` since the last update.
"""

from collections.abc import Mapping
from typing import NamedTuple

from .names import REMOTES_PREFIX, LogRef
from .store import Repository


class RewrittenLog(NamedTuple):
    remote: str
    account: str
    old_tip: str
    new_tip: str | None  # None: the log was deleted
    quarantine_ref: str

    def describe(self) -> str:
        what = "deleted" if self.new_tip is None else "rewritten"
        return f"the log of {self.account} on {self.remote} was {what}; its old tip is kept as {self.quarantine_ref}"


def quarantine_rewritten_logs(
    repo: Repository, old_tips: Mapping[str, str], new_tips: Mapping[str, str]
) -> list[RewrittenLog]:
    """Keep the old tip of every remote-tracking log that no longer contains it (rewritten) or is gone
    (deleted on the remote); returns the newly kept ones only."""
    kept = []
    for ref, old_tip in old_tips.items():
        new_tip = new_tips.get(ref)
        if not ref.startswith(REMOTES_PREFIX) or "/log/" not in ref or new_tip == old_tip:
            continue
        if repo.commit_info(old_tip) is None or (new_tip is not None and _moved_forward(repo, old_tip, new_tip)):
            continue
        remote, _, account = ref[len(REMOTES_PREFIX) :].partition("/log/")
        quarantine = LogRef(account).quarantine(remote, old_tip)
        if repo.ref(quarantine) is None:
            repo.set_ref(quarantine, old_tip)
            kept.append(RewrittenLog(remote, account, old_tip, new_tip, quarantine))
    return kept


FIRST_PARENT_STEPS = 16  # a log that moved forward by a few entries is told in-process


def _moved_forward(repo: Repository, old_tip: str, new_tip: str) -> bool:
    """Does `new_tip` contain `old_tip`? A few steps down the first-parent chain of `new_tip` (how a log
    grows) answer most cases without a git process; `git merge-base --is-ancestor` the rest (it can walk
    much of a large project's history)."""
    sha: str | None = new_tip
    for _ in range(FIRST_PARENT_STEPS):
        if sha == old_tip:
            return True
        info = repo.commit_info(sha) if sha is not None else None
        if info is None or not info.parents:
            break
        sha = info.parents[0]
    return repo.git.is_ancestor(old_tip, new_tip)
