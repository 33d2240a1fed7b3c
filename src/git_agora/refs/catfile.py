"""Objects read through `git cat-file --batch`, the one place its output is parsed: one at a time from a
single process (`CatFile`, one per repository: `Repository.objects`), for walks that decide the next
commit to read from the last one, where a `git log` would paint the whole graph, and for the single
commits a command reads (`Repository.commit_info`); or many at once (`batch_output`, `batch_answers`)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator

from .git import GitError
from .objects import is_sha

BATCH = 1024  # shas asked at once: 41 KiB of questions, under a pipe's 64 KiB


class CatFile:
    """One `git cat-file --batch` process (a context manager); safe to share between threads."""

    def __init__(self, git_dir: str | os.PathLike[str]):
        """A new process reading the objects of `git_dir`."""
        self.proc = subprocess.Popen(
            ["git", "--git-dir", os.fspath(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._lock = threading.Lock()

    def __enter__(self) -> CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with contextlib.suppress(BrokenPipeError):  # git is gone already
            self.proc.stdin.close()
        self.proc.stdout.close()
        self.proc.wait()

    def commit(self, sha: str) -> bytes | None:
        """The raw commit, or None when it is missing or not a commit."""
        return self.commits([sha])[0]

    def commits(self, shas: list[str]) -> list[bytes | None]:
        """`commit` of each sha, asked for together: one round trip per `BATCH` shas instead of one per
        sha (the questions fit in the pipe, so git can answer while they are still being written)."""
        return [body if kind == b"commit" else None for kind, body in self.objects(shas)]

    def object(self, sha: str) -> tuple[bytes, bytes] | None:
        """(kind, content) of the object with this full sha; None when it is missing."""
        kind, body = self.objects([sha])[0]
        return (kind, body) if body is not None else None

    def at(self, tree: str, path: str) -> tuple[bytes, bytes] | None:
        """(kind, content) of the object at `path` in the tree (or commit) `tree`; None when there is none."""
        if not is_sha(tree.encode()) or not path or any(c in path for c in "\n\0"):
            return None
        with self._lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"{tree}:{path}\n".encode("utf-8", "surrogateescape"))
            self.proc.stdin.flush()
            kind, body = self._answer()
        return (kind, body) if body is not None else None

    def objects(self, shas: list[str]) -> list[tuple[bytes, bytes | None]]:
        """(kind, content) of each object, (b"missing", None) for one that is not here. Only full
        lower-case hex shas are asked: anything else (a ref name, a line break) would be git's to resolve."""
        assert self.proc.stdin is not None
        found: list[tuple[bytes, bytes | None]] = []
        with self._lock:
            for start in range(0, len(shas), BATCH):
                part = [sha.encode() for sha in shas[start : start + BATCH]]
                asked = [sha for sha in part if is_sha(sha)]
                self.proc.stdin.write(b"".join(sha + b"\n" for sha in asked))
                self.proc.stdin.flush()
                answers = iter([self._answer() for _ in asked])
                found += [next(answers) if is_sha(sha) else (b"missing", None) for sha in part]
        return found

    def _answer(self) -> tuple[bytes, bytes | None]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise GitError(["cat-file", "--batch"], self.proc.poll() or 1, "git cat-file stopped answering")
        header = line.split()
        if len(header) != 3 or not is_sha(header[0]):  # "<what was asked> missing" / "ambiguous"
            return b"missing", None
        body = self.proc.stdout.read(int(header[2]) + 1)[:-1]
        return header[1], body


def batch_output(git_dir: str | os.PathLike[str], oids: list[str], header: str | None = None) -> bytes:
    """What one `git cat-file --batch --buffer` answers for these objects, asked at once (for bulk
    reads, where a round trip per object would cost as much as git's own reading); `header`: the
    format of the line before each object (`--batch=<format>`; git's own "<oid> <type> <size>" by
    default)."""
    batch = "--batch" if header is None else f"--batch={header}"
    return subprocess.run(
        ["git", "--git-dir", os.fspath(git_dir), "cat-file", batch, "--buffer"],
        input="".join(f"{oid}\n" for oid in oids).encode(),
        capture_output=True,
        check=True,
    ).stdout


def batch_answers(out: bytes, asked: list[str]) -> Iterator[tuple[str, bytes, bytes]]:
    """(oid, kind, body) of each object `batch_output` was asked about (kind b"missing" and an empty body
    for one that is not here)."""
    at = 0
    for oid in asked:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if len(header) != 3:  # "<oid> missing"
            yield oid, b"missing", b""
            at = end + 1
            continue
        size = int(header[2])
        yield oid, header[1], out[end + 1 : end + 1 + size]
        at = end + 2 + size


def parents(raw: bytes) -> list[str]:
    head = raw.partition(b"\n\n")[0]
    return [line[7:47].decode("ascii", "replace") for line in head.split(b"\n") if line.startswith(b"parent ")]


def message(raw: bytes) -> bytes:
    return raw.partition(b"\n\n")[2]
