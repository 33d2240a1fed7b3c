"""Helpers for end-to-end tests: drive the real `git agora` command and plain git."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    """A finished command; its repr (what a failing assertion on it prints) carries its output."""

    returncode: int
    stdout: str
    stderr: str
    command: str = "git agora"

    def json(self):
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError:
            raise AssertionError(f"not JSON: {self!r}") from None

    def __repr__(self) -> str:
        return (
            f"<{self.command} exited {self.returncode}\nstdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-4000:]}>"
        )


def agora(
    cwd: Path,
    *args: str,
    account: str | None = None,
    check: bool = True,
    timeout: float = 120,
    input: str | None = None,
    env: dict[str, str] | None = None,
) -> Result:
    """Run the real `git agora` command, as a user would (`env`: extra environment variables)."""
    env = {**os.environ, **(env or {})}
    if account:
        env["AGORA_ACCOUNT"] = account
    proc = subprocess.run(
        ["git", "agora", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout, input=input
    )
    result = Result(proc.returncode, proc.stdout, proc.stderr, " ".join(["git agora", *args]))
    if check and proc.returncode != 0:
        raise AssertionError(repr(result))
    return result


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(repr(Result(proc.returncode, proc.stdout, proc.stderr, " ".join(["git", *args]))))
    return proc.stdout


def make_clone(parent: Path, name: str, url: str, account: str) -> Path:
    path = parent / name
    path.mkdir()
    git(path, "init", "-q")
    git(path, "remote", "add", "origin", url)
    git(path, "config", "agora.account", account)
    return path


def forge(clone, message, parents, tree=None, author=None):
    """A commit written by hand, as a buggy or malicious client would. Its Git author and committer are
    those git-agora writes for the account the message names, so that only what the test forges is wrong;
    `author`: another Git author ("name", "email")."""
    tree = tree or git(clone, "rev-parse", f"{parents[0]}^{{tree}}").strip()
    args = ["commit-tree", tree] + [x for p in parents for x in ("-p", p)]
    env = _people(message) | ({"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1]} if author else {})
    return subprocess.run(
        ["git", *args], cwd=clone, input=message, capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def _people(message: str) -> dict[str, str]:
    """The environment of a plain git command that writes `message` as its account's commit."""
    account = next((line[15:] for line in message.splitlines() if line.startswith("Agora-Account: ")), None)
    if account is None:
        return dict(os.environ)
    people = {"GIT_AUTHOR_NAME": account, "GIT_AUTHOR_EMAIL": f"{account}@agora"}
    return {**os.environ, **people, "GIT_COMMITTER_NAME": account, "GIT_COMMITTER_EMAIL": f"{account}@agora"}


def publish_forged_log(clone, account, entries):
    """Append forged entries to a log the way git-agora does, and push it."""
    tip = None
    empty = subprocess.run(["git", "mktree"], cwd=clone, input="", capture_output=True, text=True).stdout.strip()
    for entry in entries:
        msg = f"agora log: {account}\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {entry}\n"
        tip = forge(clone, msg, [tip, entry] if tip else [entry], tree=empty)
    git(clone, "update-ref", f"refs/agora/log/{account}", tip)
    git(clone, "push", "-q", "origin", f"refs/agora/log/{account}")


def forge_root(clone, message, tree):
    return subprocess.run(
        ["git", "commit-tree", tree], cwd=clone, input=message, capture_output=True, text=True, check=True,
        env=_people(message),
    ).stdout.strip()  # fmt: skip


def worktree_tree(clone: Path) -> str:
    """The tree of the work tree as it is now (tracked and untracked files), without committing."""
    git(clone, "add", "--all")
    return git(clone, "write-tree").strip()


def demo_task_clone(parent: Path, remote: Path, name: str = "a", account: str = "alice") -> Path:
    """A clone that founded a project on the demo's task: `train.py` builds, the fixed `score.py` scores."""
    import shutil
    from importlib.resources import files

    from git_agora.demo.run import AGORA_TOML, TASK_FILES

    clone = make_clone(parent, name, str(remote), account)
    for task_file in TASK_FILES:
        shutil.copyfile(files("git_agora") / "demo" / "task" / task_file, clone / task_file)
    (clone / ".gitignore").write_text("__pycache__/\n")
    (clone / "agora.toml").write_text(AGORA_TOML)
    agora(clone, "init")
    return clone


def source_copy(tmp_path: Path) -> Path:
    """The files of this tree a build reads, copied without what running it left (a build writes build/
    and *.egg-info/ next to them; caches)."""
    import shutil

    root = Path(__file__).resolve().parents[1]
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy(root / name, source / name)
    for folder in ("man", "build_backend", "src/git_agora", "src/hybridlm"):
        shutil.copytree(root / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return source


def files_stored_in_folder_17(folder: Path, count: int, stem: str = "sample") -> None:
    """Write `count` files whose contents git stores as loose objects under `objects/17/`, the one folder
    git counts to tell whether `gc --auto` should pack (it scales that count by 256)."""
    import hashlib

    found, n = 0, 0
    while found < count:
        body = f"{stem} {n}\n".encode()
        n += 1
        if hashlib.sha1(b"blob %d\0%s" % (len(body), body)).hexdigest().startswith("17"):
            (folder / f"{stem}-{found}.txt").write_bytes(body)
            found += 1


def loose_objects(clone: Path) -> int:
    """The loose objects of a clone, as git counts them."""
    counts = dict(line.split(": ") for line in git(clone, "count-objects", "-v").splitlines())
    return int(counts["count"])
