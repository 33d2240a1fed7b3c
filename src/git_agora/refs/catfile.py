"""Commits read one at a time from a single `git cat-file --batch` process: for walks that decide the next
commit to read from the last one, where a `git log` would paint the whole graph."""

from __future__ import annotations

import subprocess
from pathlib import Path

BATCH = 1024  # shas asked at once: 41 KiB of questions, under a pipe's 64 KiB


class CatFile:
    """One `git cat-file --batch` process, asked one object at a time (a context manager)."""

    def __init__(self, git_dir: Path):
        self.proc = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def __enter__(self) -> CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()

    def commit(self, sha: str) -> bytes | None:
        """The raw commit, or None when it is missing or not a commit."""
        return self.commits([sha])[0]

    def commits(self, shas: list[str]) -> list[bytes | None]:
        """`commit` of each sha, asked for together: one round trip per `BATCH` shas instead of one per
        sha (the questions fit in the pipe, so git can answer while they are still being written)."""
        assert self.proc.stdin is not None
        found: list[bytes | None] = []
        for start in range(0, len(shas), BATCH):
            part = shas[start : start + BATCH]
            self.proc.stdin.write(b"".join(sha.encode() + b"\n" for sha in part))
            self.proc.stdin.flush()
            found += [self._answer() for _ in part]
        return found

    def _answer(self) -> bytes | None:
        assert self.proc.stdout is not None
        header = self.proc.stdout.readline().split()
        if len(header) != 3:  # "<sha> missing" / "ambiguous"
            return None
        body = self.proc.stdout.read(int(header[2]) + 1)[:-1]
        return body if header[1] == b"commit" else None


def parents(raw: bytes) -> list[str]:
    head = raw.partition(b"\n\n")[0]
    return [line[7:47].decode("ascii", "replace") for line in head.split(b"\n") if line.startswith(b"parent ")]


def message(raw: bytes) -> bytes:
    return raw.partition(b"\n\n")[2]
