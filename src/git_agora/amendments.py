"""Which policy is in force for a contribution: the nearest amendment (a contribution tagged `policy` by
the setup's account) on its first-parent line, else the setup (`policy` reads what it declares).

Kept apart from `policy` so that a post, which asks only this question, loads no project config."""

from __future__ import annotations

from .contribution import POLICY_TAG, Contribution
from .refs.store import Repository

POLICY_MEMO = "policy-in-force"  # under .git/agora: "<setup>-<contribution> <policy sha>"


def is_amendment(contribution: Contribution, root_account: str | None) -> bool:
    return POLICY_TAG in contribution.tags and contribution.account == root_account


def policy_sha_for(repo: Repository, sha: str, root: str) -> str:
    """The policy in force for `sha`: the nearest amendment by the setup's account on its first-parent
    line (itself included), else the setup. Amendments are rare: git finds the candidates. The answer
    depends on immutable commits only, so it is remembered per clone (`memo`): publishing on the same
    contribution again does not walk its first-parent line again."""
    from .memo import recall, remember

    key = f"{root}-{sha}"
    known = recall(repo.agora_path, POLICY_MEMO, key)
    if known is not None:
        return known
    root_account = account_of(repo, root)
    out = repo.git.run("log", "--first-parent", "--format=%H", "-E", f"--grep=^Agora-Tag: {POLICY_TAG}$", sha)
    found = root
    for candidate in out.split():
        contribution = repo.contribution(candidate)
        if contribution is not None and is_amendment(contribution, root_account):
            found = candidate
            break
    remember(repo.agora_path, POLICY_MEMO, key, found)
    return found


def account_of(repo: Repository, sha: str) -> str | None:
    contribution = repo.contribution(sha)
    return contribution.account if contribution else None
