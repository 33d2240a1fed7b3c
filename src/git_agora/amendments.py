"""Which policy is in force for a contribution: the nearest amendment (a contribution tagged `policy` by
the setup's account) on its first-parent line, else the setup (`policy` reads what it declares).

Kept apart from `policy` so that a post, which asks only this question, loads no project config."""

from __future__ import annotations

from .contribution import POLICY, Contribution
from .refs.git import LOG_OPTIONS
from .refs.store import Repository

POLICY_MEMO = "policy-in-force"  # under .git/agora: "<setup>-<contribution> <policy sha>"


def is_amendment(contribution: Contribution, root_account: str | None) -> bool:
    return POLICY in contribution.tags and contribution.account == root_account


def policy_sha_for(repo: Repository, sha: str, root: str) -> str:
    """The policy in force for `sha`: the nearest amendment by the setup's account on its first-parent
    line (itself included), else the setup. The answer depends on immutable commits only, so it is
    remembered per clone (`memo`), and it is the first parent's answer unless `sha` is an amendment: the
    line is walked here up to a commit whose answer is remembered (a post on a contribution built on one
    posted on before: a step or two, no git process). Beyond `WALK` steps git finds the candidates
    (amendments are rare)."""
    from .memo import facts, remember

    known = facts(repo.agora_path, POLICY_MEMO)
    found = known.get(f"{root}-{sha}")
    if found is not None:
        return found
    root_account, at = account_of(repo, root), sha
    for _ in range(WALK):
        contribution = repo.contribution(at)
        if contribution is not None and is_amendment(contribution, root_account):
            found = at
            break
        parents = contribution.parents if contribution else getattr(repo.commit_info(at), "parents", ())
        at = parents[0] if parents else root
        found = known.get(f"{root}-{at}") if parents else root
        if found is not None:
            break
    if found is None:
        policy_tag = f"--grep=^Agora-Tag: {POLICY}$"
        out = repo.git.run("log", *LOG_OPTIONS, "--first-parent", "--format=%H", "-E", policy_tag, at)
        amendments = (c.sha for c in map(repo.contribution, out.split()) if c and is_amendment(c, root_account))
        found = next(amendments, None) or root
    remember(repo.agora_path, POLICY_MEMO, f"{root}-{sha}", found)
    return found


WALK = 8  # first-parent steps taken here before git is asked (`policy_sha_for`)


def account_of(repo: Repository, sha: str) -> str | None:
    contribution = repo.contribution(sha)
    return contribution.account if contribution else None
