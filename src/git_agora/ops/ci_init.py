"""`git agora ci --init FORGE`: the CI job's file committed on the branch the forge runs workflows from,
never in a contribution (docs/ci.md, "The first day").

Through plumbing: the recipe's blob goes into a tree made from the branch's tip (the local branch, else
the remote's, else none: an orphan branch holding only CI files), committed on top of it, and the branch
moved by compare-and-swap. The work tree, the index and HEAD are left alone, so whatever the clone has
checked out (a founder's clone sits detached on Agora commits) is unchanged. Where the branch itself is
checked out here, the work tree follows by a two-way merge (`git read-tree -m -u`), refused when HEAD
is an Agora contribution. It pushes the branch only when asked.

The recipe is written for the current policy: its CI account, its scorer Python (`[eval] python`) and a
copy of its lock (`[eval] lock`) beside the recipe, which the verify job installs. GitLab's recipe is a
file to include: a branch with no .gitlab-ci.yml gets one holding the include; one without an `include:`
gets it appended; one with its own `include:` is left alone, and the first step says what to add.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass

from ..errors import AgoraError
from ..project import Project
from .ci_recipes import GITLAB_CI, GITLAB_INCLUDE, Recipe, recipe

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
    files: tuple[str, ...] = ()  # every file committed on the branch, the recipe first

    def to_dict(self) -> dict:
        return {
            "forge": self.recipe.forge,
            "path": self.recipe.path,
            "branch": self.branch,
            "commit": self.commit,
            "orphan": self.orphan,
            "pushed": self.pushed,
            "steps": list(self.steps),
            "files": list(self.files),
            "python": self.recipe.python,
            "python_from_policy": self.recipe.python_from_policy,
        }


def init_ci(project: Project, forge: str, branch: str = "main", force: bool = False, push: bool = False) -> CiInit:
    """Commit `forge`'s recipe (for the policy's CI account) at its path on `branch` (module docstring)."""
    from .scorer_env import policy_environment

    env = policy_environment(project)
    account = env.accounts[0] if env.accounts else "ci"
    made = recipe(forge, branch, account=account, python=env.python, lock=env.lock_text)
    git = project.repo.git
    local = project.repo.ref(f"refs/heads/{branch}")
    remote = project.remote
    tracked = project.repo.ref(f"refs/remotes/{remote}/{branch}") if remote else None
    base = local or tracked
    if base is not None and not force and git.ok("cat-file", "-e", f"{base}:{made.path}"):
        raise AgoraError(f"{made.path} exists on {branch}; --force replaces it")
    files, include_step = list(made.files), tuple[str, ...]()
    if forge == "gitlab":
        included = _gitlab_ci(project, base)
        if included is None:
            line = f"- local: {made.path}"
            include_step = (f"Include the recipe: add `{line}` under the `include:` of {GITLAB_CI} on {branch}.",)
        elif included:
            files.append((GITLAB_CI, included))
    tree = _tree_with(project, base, files)
    message = f"CI: {', '.join(p for p, _ in files)}, written by git agora ci --init {forge}\n"
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
    steps = (*include_step, *_steps(made, branch, remote, pushed))
    return CiInit(made, branch, commit, base is None, pushed, remote, steps, tuple(p for p, _ in files))


def _gitlab_ci(project: Project, base: str | None) -> str | None:
    """The .gitlab-ci.yml the branch gets: new, or with the include appended; "" where it already
    includes the recipe; None where it has an `include:` of its own (a second key would break it)."""
    from .ci_recipes import PATHS

    info = project.repo.commit_info(base) if base else None
    text = project.repo.file_text(info.tree, GITLAB_CI) if info else None
    if not text:
        return f"# The project's GitLab CI; git agora's jobs are in {PATHS['gitlab']}.\n{GITLAB_INCLUDE}"
    if PATHS["gitlab"] in text:
        return ""
    if re.search(r"^include\s*:", text, re.M):
        return None
    return text + ("" if text.endswith("\n") else "\n") + "\n" + GITLAB_INCLUDE


def _tree_with(project: Project, base: str | None, files: list[tuple[str, str]]) -> str:
    """`base`'s tree (or an empty one) with `files` (path, text), made in an index of its own."""
    git = project.repo.git
    fd, index = tempfile.mkstemp(prefix="agora-ci-index-", dir=project.repo.agora_path)
    os.close(fd)
    os.unlink(index)
    env = {"GIT_INDEX_FILE": index}
    try:
        if base:
            git.run("read-tree", base, env=env)
        for path, text in files:
            blob = git.run("hash-object", "-w", "--stdin", input=text).strip()
            git.run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
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
