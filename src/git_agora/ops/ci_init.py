"""`git agora ci --init FORGE`: the CI job's file committed on the branch the forge runs workflows from,
never in a contribution (docs/ci.md, "The first day").

Through plumbing: the recipe's blob goes into a tree made from the branch's tip (the local branch, else
the remote's, else none: an orphan branch holding only CI files), committed on top of it, and the branch
moved by compare-and-swap. The work tree, the index and HEAD are left alone, so whatever the clone has
checked out (a founder's clone sits detached on Agora commits) is unchanged. Where the branch itself is
checked out here, the work tree follows by a two-way merge (`git read-tree -m -u`), refused when HEAD
is an Agora contribution. It pushes the branch only when asked.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from ..errors import AgoraError
from ..project import Project
from .ci_recipes import Recipe, recipe

COMMITTER = {"GIT_AUTHOR_NAME": "git agora ci --init", "GIT_AUTHOR_EMAIL": "ci-init@agora"}


@dataclass(frozen=True)
class CiInit:
    recipe: Recipe
    branch: str
    commit: str
    orphan: bool  # the branch was made here, holding only CI files
    pushed: bool
    remote: str | None
    steps: tuple[str, ...]  # every step left to the founder, in order

    def to_dict(self) -> dict:
        return {
            "forge": self.recipe.forge,
            "path": self.recipe.path,
            "branch": self.branch,
            "commit": self.commit,
            "orphan": self.orphan,
            "pushed": self.pushed,
            "steps": list(self.steps),
        }


def init_ci(project: Project, forge: str, branch: str = "main", force: bool = False, push: bool = False) -> CiInit:
    """Commit `forge`'s recipe (for the policy's CI account) at its path on `branch` (module docstring)."""
    config = project.config
    accounts = config.ci_accounts
    account = accounts[0] if accounts else "ci"
    made = recipe(forge, branch, account=account)
    git = project.repo.git
    local = project.repo.ref(f"refs/heads/{branch}")
    remote = project.remote
    tracked = project.repo.ref(f"refs/remotes/{remote}/{branch}") if remote else None
    base = local or tracked
    if base is not None and not force and git.ok("cat-file", "-e", f"{base}:{made.path}"):
        raise AgoraError(f"{made.path} exists on {branch}; --force replaces it")
    tree = _tree_with(project, base, made)
    message = f"CI: {made.path}, written by git agora ci --init {forge}\n"
    parents = ["-p", base] if base else []
    commit = git.run("commit-tree", tree, *parents, input=message, env=_identity(git)).strip()
    checked_out = git.run("symbolic-ref", "-q", "HEAD", check=False).strip() == f"refs/heads/{branch}"
    if checked_out:
        head = project.repo.resolve("HEAD")
        if head and project.repo.contribution(head) is not None:
            raise AgoraError(f"{branch} is checked out here on an Agora contribution: check out another branch")
    if not project.repo.compare_and_swap(f"refs/heads/{branch}", local, commit):
        raise AgoraError(f"{branch} moved while the recipe was written: run it again")
    if checked_out and local:
        git.run("read-tree", "-m", "-u", local, commit)
    pushed = False
    if push:
        if remote is None:
            raise AgoraError("no remote to push the branch to: add one or name it with --remote")
        done = git.attempt("push", remote, f"refs/heads/{branch}:refs/heads/{branch}")
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["git push failed"])[-1]
            raise AgoraError(f"committed {made.path} on {branch} ({commit[:12]}) but could not push it: {last}")
        pushed = True
    steps = _steps(made, branch, remote, pushed)
    return CiInit(made, branch, commit, base is None, pushed, remote, steps)


def _tree_with(project: Project, base: str | None, made: Recipe) -> str:
    """`base`'s tree (or an empty one) with the recipe's file, made in an index of its own."""
    git = project.repo.git
    blob = git.run("hash-object", "-w", "--stdin", input=made.text).strip()
    fd, index = tempfile.mkstemp(prefix="agora-ci-index-", dir=project.repo.agora_path)
    os.close(fd)
    os.unlink(index)
    env = {"GIT_INDEX_FILE": index}
    try:
        if base:
            git.run("read-tree", base, env=env)
        git.run("update-index", "--add", "--cacheinfo", f"100644,{blob},{made.path}", env=env)
        return git.run("write-tree", env=env).strip()
    finally:
        if os.path.exists(index):
            os.unlink(index)


def _identity(git) -> dict[str, str]:
    """The founder's git identity where configured, else git-agora's own."""
    name, email = git.config_get("user.name"), git.config_get("user.email")
    author = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email} if name and email else COMMITTER
    committer = {"GIT_COMMITTER_NAME": author["GIT_AUTHOR_NAME"], "GIT_COMMITTER_EMAIL": author["GIT_AUTHOR_EMAIL"]}
    return {**author, **committer}


def _steps(made: Recipe, branch: str, remote: str | None, pushed: bool) -> tuple[str, ...]:
    where = remote or "origin"
    command = f"git push {where} refs/heads/{branch}:refs/heads/{branch}"
    push = () if pushed else (f"Push the branch: `{command}` (or run this again with --push).",)
    default = f"Make `{branch}` the forge's default branch (schedules run only from it)."
    return (*push, default, *made.notes)
