"""Objects and refs in one repository: canonical commits written in process (`objects`), refs updated
with compare-and-swap (`files`), and the append-only account log."""

from __future__ import annotations

import os
import subprocess
import time
import weakref
from collections.abc import Callable
from functools import cached_property

from ..contribution import Contribution, ContributionError, git_identity
from .catfile import CatFile
from .files import NotPlain, read_ref, read_refs, swap_ref
from .git import LOG_OPTIONS, Git
from .names import LogRef
from .objects import CommitInfo, commit_body, parse_commit, write_loose
from .shared import shared_permission

LOG_TITLE = "agora log"
LOG_FORMAT_TRAILER = "Agora-Log-Format: 1"
LOG_ENTRY_KEY = "Agora-Log-Entry"


MAX_REF_ATTEMPTS = 100
AHEAD_AT_MOST = 60  # seconds: how far ahead of the clock `next_timestamp` dates a quick succession of posts


class NotARepository(RuntimeError):
    pass


class RefBusy(RuntimeError):
    pass


class Repository:
    """A Git repository (work tree or bare) as git-agora sees it.

    Its folders are strings, one kind of path for every caller (`worktree_path`, `git_path`,
    `common_path` and the `*_path` folders under them): a post then never imports pathlib (3 ms)."""

    def __init__(
        self,
        worktree: str | os.PathLike[str],
        git_dir: str | os.PathLike[str],
        common_dir: str | os.PathLike[str],
        bare: bool = False,
    ):
        self.worktree_path = os.fspath(worktree)
        self.git_path = os.fspath(git_dir)
        self.common_path = os.fspath(common_dir)
        self.bare = bare
        self.git = Git(self.worktree_path)
        self.signer: Callable[[bytes], bytes] | None = None  # signs every commit written, when set
        self._objects: CatFile | None = None
        self._objects_pid = 0

    @classmethod
    def discover(cls, start: str | os.PathLike[str] = ".") -> Repository:
        """The repository `start` is in (one `git rev-parse`)."""
        found = _location(start)
        out = found.decode("utf-8", "surrogateescape").splitlines() if found else []
        if len(out) < 4:
            raise NotARepository(f"not a Git repository: {os.path.realpath(start)}")
        bare = out[0] == "true"
        git_dir, common_dir, object_format = out[1], out[2], out[3]
        if object_format != "sha1":  # before anything is read or written: ids are 40 hex digits here
            raise NotARepository(
                f"{os.path.realpath(start)} is a {object_format} repository (extensions.objectformat): "
                "Agora format 1 names contributions by SHA-1; use a repository made by plain `git init`"
            )
        if bare:
            return cls(git_dir, git_dir, common_dir, bare=True)
        if len(out) < 5:  # not bare, yet no work tree (inside .git): git says why
            Git(start).run("rev-parse", "--show-toplevel")
            raise NotARepository(f"no work tree: {os.path.realpath(start)}")
        return cls(out[4], git_dir, common_dir)

    @property
    def objects(self) -> CatFile:
        """One `git cat-file --batch` process that reads this repository's objects, started on first use,
        ended with the Repository (or the interpreter); a forked child starts its own."""
        if self._objects is None or self._objects_pid != os.getpid():
            self._objects = CatFile(self.common_path)
            self._objects_pid = os.getpid()
            weakref.finalize(self, self._objects.close)
        return self._objects

    @property
    def objects_path(self) -> str:
        return os.path.join(self.common_path, "objects")

    @cached_property
    def shared(self) -> int:
        """`core.sharedRepository` as the modes of what is written here (`shared.shared_permission`)."""
        return shared_permission(self.git.config_get("core.sharedrepository"))

    # --- private state under .git/agora (per clone) and the per-worktree git dir -------------

    @property
    def agora_path(self) -> str:
        return os.path.join(self.common_path, "agora")

    @property
    def worktree_state_path(self) -> str:
        return os.path.join(self.git_path, "agora")

    # --- objects ---------------------------------------------------------------------------

    def commit_info(self, sha: str) -> CommitInfo | None:
        """The commit with this full sha, or None when it is missing, not a commit or malformed
        (`objects.parse_commit`: the message ends at its first NUL byte, as every reader sees it)."""
        found = self.objects.object(sha)
        if found is None or found[0] != b"commit":
            return None
        return parse_commit(sha, found[1])

    def file_text(self, tree: str, path: str) -> str:
        """The content of the file at `path` in `tree` ("" when there is none), as `git cat-file -p`
        prints it."""
        found = self.objects.at(tree, path)
        return found[1].decode("utf-8", "surrogateescape") if found else ""

    def contribution(self, sha: str) -> Contribution | None:
        info = self.commit_info(sha)
        if info is None:
            return None
        try:
            return Contribution.from_message(
                info.message, sha=sha, parents=info.parents, timestamp=info.timestamp, tree=info.tree
            )
        except ContributionError:
            return None

    def resolve(self, rev: str) -> str | None:
        """A full commit sha for a sha prefix or ref name, or None."""
        if self.commit_info(rev) is not None:  # a full sha of a commit here (nothing else is asked)
            return rev
        out = self.git.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False).strip()
        return out or None

    def write_commit(
        self, tree: str, parents: list[str], message: str, account: str, timestamp: int | None = None
    ) -> str:
        identity = git_identity(account)
        when = int(time.time()) if timestamp is None else timestamp
        body = commit_body(tree, parents, identity, when, message)
        if self.signer is not None:
            body = commit_body(tree, parents, identity, when, message, self.signer(body))
        return write_loose(self.objects_path, "commit", body, self.shared)

    def write_contribution(self, contribution: Contribution, tree: str, timestamp: int | None = None) -> str:
        parents = list(contribution.parents)
        return self.write_commit(tree, parents, contribution.to_message(), contribution.account, timestamp)

    @cached_property
    def empty_tree(self) -> str:
        return write_loose(self.objects_path, "tree", b"", self.shared)

    # --- refs --------------------------------------------------------------------------------

    def refs_under(self, prefix: str) -> dict[str, str]:
        """Ref name -> sha for every ref under `prefix` (ending in "/"), as `git for-each-ref` lists them:
        read from the ref files where that is plain (`files.read_refs`), else by git."""
        found = read_refs(self.common_path, prefix)
        return found if found is not None else self.git.for_each_ref(prefix)

    def ref(self, name: str) -> str | None:
        try:
            return read_ref(self.common_path, name)
        except NotPlain:
            out = self.git.run("show-ref", "--verify", "--hash", name, check=False).strip()
            return out or None

    def compare_and_swap(self, name: str, old: str | None, new: str) -> bool:
        """Set ref `name` to `new` only if it still points at `old` (None: only if it is absent).

        A ref locked by another process counts as a lost race; the caller retries.
        """
        try:
            return swap_ref(self.common_path, name, old, new, shared=self.shared)
        except NotPlain:
            return self.git.ok("update-ref", name, new, old or "0" * 40)

    def set_ref(self, name: str, new: str) -> None:
        """Point `name` at `new`, whatever it pointed at; waits out another process's lock."""

        def attempt() -> str | None:
            try:
                swapped = swap_ref(self.common_path, name, None, new, unconditional=True, shared=self.shared)
            except NotPlain:
                self.git.run("update-ref", name, new)
                swapped = True
            return new if swapped else None

        _retried(name, attempt)

    # --- the account log -----------------------------------------------------------------------

    def next_timestamp(self, account: str) -> int:
        """When the account's next contribution is dated: now, or one second after the last entry of its
        local log when that is not earlier. An account's contributions are then dated strictly in the order
        it publishes them, so that of two posts in one second (a verdict and its replacement) the later is
        the newer for every reader (`frontier.evidence`), not the one whose sha sorts later. A burst of
        posts runs at most `AHEAD_AT_MOST` ahead of the clock, then shares that second until the clock
        catches up (never dated before the last one); a last entry dated further ahead (a forged log, a
        clock set back) is not followed."""
        now = int(time.time())
        tip = self.commit_info(self.ref(LogRef(account).local) or "")
        entry = self.commit_info(tip.parents[-1]) if tip is not None and tip.parents else None
        last = max((info.timestamp for info in (tip, entry) if info is not None), default=now - 1)
        return min(last + 1, now + AHEAD_AT_MOST) if now <= last <= now + AHEAD_AT_MOST else now

    def append_to_log(self, account: str, entries: list[str]) -> str:
        """Append contributions to the local account log; retries when another process wins."""
        ref = LogRef(account).local

        def attempt() -> str | None:
            old = self.ref(ref)
            tip = self._chain(account, old, entries)
            return tip if self.compare_and_swap(ref, old, tip) else None

        return _retried(ref, attempt)

    def rebuild_log(self, account: str, base: str, entries: list[str], expected: str) -> str | None:
        """Set the local log to `base` plus `entries`, if it still points at `expected`."""
        tip = self._chain(account, base, entries) if entries else base
        return tip if self.compare_and_swap(LogRef(account).local, expected, tip) else None

    def _chain(self, account: str, tip: str | None, entries: list[str]) -> str:
        for entry in entries:
            parents = [tip, entry] if tip else [entry]
            tip = self.write_commit(self.empty_tree, parents, log_message(account, entry), account)
        assert tip is not None
        return tip

    def log_entries(self, tip: str, stop: str | None = None) -> list[str]:
        """Contributions appended to a log, oldest first, from its tip down to (not including) stop."""
        args = ["log", *LOG_OPTIONS, "--first-parent", f"--format=%(trailers:key={LOG_ENTRY_KEY},valueonly)", tip]
        if stop:
            args += ["--not", stop]
        out = self.git.run(*args)
        return [line for line in reversed(out.splitlines()) if line.strip()]


def _retried(name: str, attempt: Callable[[], str | None]) -> str:
    """`attempt()` until it returns the sha the ref `name` now holds (None: another process won or holds
    its lock), waiting a little longer each time; `RefBusy` when the lock never goes."""
    for tries in range(MAX_REF_ATTEMPTS):
        done = attempt()
        if done is not None:
            return done
        time.sleep(min(0.005 * tries, 0.05))
    raise RefBusy(f"could not update {name}: it stays locked ({name}.lock); remove a stale lock file")


def log_message(account: str, entry: str) -> str:
    return f"{LOG_TITLE}: {account}\n\n{LOG_FORMAT_TRAILER}\n{LOG_ENTRY_KEY}: {entry}\n"


LOCATION = ["rev-parse", "--path-format=absolute", "--is-bare-repository", "--git-dir", "--git-common-dir"]
LOCATION += ["--show-object-format", "--show-toplevel"]  # the top level last: git stops before it when bare


def _location(directory: str | os.PathLike[str]) -> bytes | None:
    """What `git rev-parse` says of `directory` (`LOCATION`); None where git cannot even start there."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run(["git", *LOCATION], cwd=directory, capture_output=True, env=env).stdout
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
