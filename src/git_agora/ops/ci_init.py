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
from .ci_recipes import GITLAB_CI, GITLAB_INCLUDE, PATHS, Recipe, recipe

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
    config = _current_config(project)  # the key pin's steps
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
    keys, badge = key_steps(config, account), badge_steps(project, forge)
    steps = (*include_step, *_steps(made, branch, remote, pushed, keys, badge))
    return CiInit(made, branch, commit, base is None, pushed, remote, steps, tuple(p for p, _ in files))


def _gitlab_ci(project: Project, base: str | None) -> str | None:
    """The .gitlab-ci.yml the branch gets: new, or with the include appended; "" where it already
    includes the recipe; None where it has an `include:` of its own (a second key would break it)."""
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


def _steps(
    made: Recipe, branch: str, remote: str | None, pushed: bool, keys: tuple[str, ...], badge: tuple[str, ...]
) -> tuple[str, ...]:
    """Every step left, in order: the branch, the key pin, the recipe's own (the secret, the runner, the
    schedule), the first run by hand, the badge."""
    where = remote or "origin"
    command = f"git push {where} refs/heads/{branch}:refs/heads/{branch}"
    push = () if pushed else (f"Push the branch: `{command}` (or run this again with --push).",)
    default = f"Make `{branch}` the forge's default branch (schedules run only from it)."
    first = (
        "Once the secret is stored, run the job once by hand: its first run publishes the CI account's "
        "identity, which readers check against the pinned key."
    )
    return (*push, default, *keys, *made.notes, first, *badge)


def _current_config(project: Project):
    """The configuration of the policy in force (the setup's newest amendment, else the setup)."""
    from .indexing import FRAME_COLUMNS, load
    from .standing import root_and_config

    return root_and_config(project, load(project, FRAME_COLUMNS).contributions)[1]


def key_steps(config, account: str) -> tuple[str, ...]:
    """What makes the CI's key trusted, for the policy in force (`config`): readers count the verdicts
    of a CI account only with its key pinned in `[ci] keys` (docs/ci.md, "Setting up the CI account"),
    and `git agora ci` signs with the key the forge's secret holds, so the two must be one key pair."""
    from .standing import amendment_command

    pub = "<the line of ci_ed25519.pub>"
    pinned = config.ci_keys.get(account)
    if pinned is not None:
        line = " ".join(pinned.split()[:2])
        steps = [
            f"The key pin: the policy pins {account}'s key, `{line}`; the forge's secret must hold its private "
            "half: check the file with `ssh-keygen -y -f ci_ed25519` (it prints that line) before storing it "
            "(a run signed with another key exits 5 and publishes nothing).",
        ]
    elif account in config.ci_accounts:
        steps = [
            f"Pin the CI key: {account} is named without a key, and readers count no unpinned CI account "
            f"under [ci] format 2: {amendment_command(account, pub)}."
        ]
    else:
        steps = [
            f'Make the CI key once, outside the project: `ssh-keygen -t ed25519 -N "" -C {account}@agora -f '
            "ci_ed25519`.",
            "Pin the CI key: the policy names no CI account; the setup's account adds `[ci]` with format = 2, "
            f'accounts = ["{account}"] '
            f'and keys = {{ {account} = "{pub}" }} to agora.toml, then `git agora push --tag policy -m "the CI '
            f'account"` (a new project: `git agora init --ci-account {account} --ci-key ci_ed25519.pub`).',
        ]
    if config.members and account not in config.members:
        steps.append(
            f"A closed project: list {account} in [identity] members with its public key (only members publish)."
        )
    return tuple(steps)


def badge_steps(project: Project, forge: str) -> tuple[str, ...]:
    """The status badge's Markdown, for the site's published badge.json (docs/site.md)."""
    site = _pages_url(project, forge) or "<the site's URL>"
    return (
        f"The badge, for the README: `[![agora](https://img.shields.io/endpoint?url={site}/badge.json)]({site}/)` "
        "(the site's badge.json, a shields.io endpoint).",
    )


def _pages_url(project: Project, forge: str) -> str | None:
    """GitHub Pages' address of the remote's repository, when the remote is on github.com."""
    if forge != "github" or project.remote is None:
        return None
    url = project.repo.git.config_get(f"remote.{project.remote}.url") or ""
    found = re.match(
        r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url
    )
    if found is None:
        return None
    owner, name = found.groups()
    host = f"{owner.lower()}.github.io"
    return f"https://{host}" if name.lower() == host else f"https://{host}/{name}"
