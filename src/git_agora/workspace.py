"""The working tree side of publishing: snapshot what `push` would publish, and check out a contribution."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from .errors import AgoraError
from .refs.git import GitError
from .refs.store import Repository


@dataclass(frozen=True)
class Snapshot:
    tree: str
    index_file: Path  # a Git index matching `tree`, with the work tree's stat data


@contextmanager
def snapshot(repo: Repository) -> Iterator[Snapshot]:
    """The current work tree as a Git tree: tracked changes and untracked, non-ignored files.

    Built in a temporary index (a copy of the real one, so unchanged files are not re-hashed); the
    user's own index, HEAD and branches are not touched. Every copy of an index keeps its modification
    time (`copy2`): Git trusts an entry's stat data only when the file is older than the index, so a
    copy stamped "now" would make a same-size edit made in the index's second look clean ("racy git").
    """
    if repo.bare:
        raise AgoraError("a bare repository has no work tree to publish")
    real_index = Path(repo.git.run("rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    with tempfile.TemporaryDirectory(prefix="agora-index-", dir=repo.git_path) as tmp:
        index_file = Path(tmp) / "index"
        if real_index.exists():
            shutil.copy2(real_index, index_file)
        env = {"GIT_INDEX_FILE": str(index_file)}
        try:
            repo.git.run("add", "--all", "--", ":/", env=env)
            tree = repo.git.run("write-tree", env=env).strip()
        except GitError as exc:
            raise AgoraError(f"could not snapshot the work tree: {exc}") from None
        yield Snapshot(tree, index_file)


def with_files_of(repo: Repository, snap: Snapshot, source_tree: str, paths: Iterable[str]) -> Snapshot:
    """The snapshot with `paths` as `source_tree` holds them (a path it lacks is removed), in the same
    temporary index; the work tree is not touched (`write_files`)."""
    env = {"GIT_INDEX_FILE": str(snap.index_file)}
    paths = sorted(set(paths))
    present = {}
    listed = repo.git.run("--literal-pathspecs", "ls-tree", "-r", "-z", source_tree, "--", *paths)
    for entry in filter(None, listed.split("\0")):
        mode_type_oid, _, path = entry.partition("\t")
        mode, _, oid = mode_type_oid.split(" ")
        present[path] = f"{mode} {oid}\t{path}"
    lines = [present.get(path, f"0 {'0' * 40}\t{path}") for path in paths]
    repo.git.run("update-index", "--index-info", input="\n".join(lines) + "\n", env=env)
    return Snapshot(repo.git.run("write-tree", env=env).strip(), snap.index_file)


def write_files(repo: Repository, paths: Iterable[str]) -> None:
    """Make these work tree files what the real index holds (a path it lacks is deleted)."""
    indexed = set(filter(None, repo.git.run("--literal-pathspecs", "ls-files", "-z", "--", *paths).split("\0")))
    if indexed:
        repo.git.run("checkout-index", "--force", "-z", "--stdin", input="\0".join(sorted(indexed)) + "\0")
    for path in set(paths) - indexed:
        with suppress(FileNotFoundError):
            os.unlink(Path(repo.worktree_path) / path)


def oversized_files(repo: Repository, tree: str, limit: int) -> list[tuple[str, int]]:
    """Files in `tree` larger than `limit` bytes, largest first."""
    out = repo.git.run("ls-tree", "-r", "-l", "-z", tree)
    big = []
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        size = meta.split()[3]
        if size != "-" and int(size) > limit:
            big.append((path, int(size)))
    return sorted(big, key=lambda item: -item[1])


def check_size(repo: Repository, tree: str, limit: int) -> None:
    big = oversized_files(repo, tree, limit)
    if big:
        path, size = big[0]
        raise AgoraError(
            f"{path} is {size:,} bytes, over the project's limit of {limit:,} (policy.max_file_bytes in agora.toml)"
        )


def advance_head(repo: Repository, old: str, new: str, snap: Snapshot) -> bool:
    """If HEAD is detached at the contribution the work started from, move it to the new one.

    The snapshot index matches the new tree, so it becomes the real index and `git status` is clean.
    Returns whether HEAD moved; a branch checked out by the user is never moved.
    """
    head = repo.git.run("symbolic-ref", "-q", "HEAD", check=False).strip()
    if head or repo.resolve("HEAD") != old:
        return False
    repo.git.run("update-ref", "--no-deref", "HEAD", new, old)
    real_index = Path(repo.git.run("rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    tmp = real_index.with_name(f"index.agora.{os.getpid()}")
    shutil.copy2(snap.index_file, tmp)
    tmp.replace(real_index)
    return True


def checkout(
    repo: Repository, sha: str, worktree: Path | None = None, record: Callable[[Path], None] | None = None
) -> Path:
    """The exact tree of a contribution, in place (detached HEAD) or in a new linked work tree.

    `record(path)` runs after the checks and before HEAD moves (in place) or the files appear (a new work
    tree, whose HEAD exists only once git created it); a failure after it is rolled back by the caller
    (in place) or here (the new work tree is removed).
    """
    if worktree is not None:
        if worktree.exists() and any(worktree.iterdir()):
            raise AgoraError(f"{worktree} exists and is not empty")
        try:
            repo.git.run("worktree", "add", "--no-checkout", "--detach", "--force", str(worktree), sha)
        except GitError as exc:
            raise AgoraError(str(exc)) from None
        path = worktree.resolve()
        try:
            if record is not None:
                record(path)
            repo.git.run("-C", str(path), "reset", "--hard", "--quiet", sha)
        except BaseException:
            repo.git.attempt("worktree", "remove", "--force", str(path))
            raise
        return path
    if repo.bare:
        raise AgoraError("a bare repository has no work tree: use --worktree DIR")
    if repo.git.run("status", "--porcelain", "--untracked-files=no").strip():
        raise AgoraError("the work tree has uncommitted changes: publish, commit or stash them, or use --worktree DIR")
    if record is not None:
        record(Path(repo.worktree_path))
    try:
        repo.git.run("checkout", "--quiet", "--detach", sha)
    except GitError as exc:
        first = next((ln for ln in exc.stderr.splitlines() if ln.strip()), str(exc))
        raise AgoraError(f"cannot check out {sha[:12]} here ({first.strip()}); use --worktree DIR") from None
    return Path(repo.worktree_path)


def adopt_if_unborn(repo: Repository, sha: str, snap: Snapshot) -> bool:
    """In a repository with no commit yet, detach HEAD at the new setup so the work tree is clean."""
    if repo.resolve("HEAD") is not None:
        return False
    repo.git.run("update-ref", "--no-deref", "HEAD", sha)
    real_index = Path(repo.git.run("rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    shutil.copy2(snap.index_file, real_index)
    return True
