"""A thin wrapper around the `git` executable: bulk reads, transport and working-tree plumbing.

Git itself is the fastest reader of history and the most compatible transport (it speaks to every
remote the user's git speaks to, with their credentials). dulwich builds and reads single objects.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


class GitError(RuntimeError):
    def __init__(self, args: Sequence[str], returncode: int, stderr: str):
        self.git_args = list(args)
        self.returncode = returncode
        self.stderr = stderr
        last = next((ln for ln in reversed(stderr.strip().splitlines()) if ln.strip()), "")
        super().__init__(f"git {' '.join(args[:2])} failed: {last or f'exit {returncode}'}")


@dataclass(frozen=True)
class Git:
    """Runs git in one work tree (or bare repository)."""

    cwd: Path

    def run(
        self,
        *args: str,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> str:
        return self.run_bytes(*args, input=input, env=env, check=check, timeout=timeout).decode(
            "utf-8", "surrogateescape"
        )

    def run_bytes(
        self,
        *args: str,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> bytes:
        data = input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input
        full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
        proc = subprocess.run(
            ["git", *args],
            cwd=self.cwd,
            input=data,
            capture_output=True,
            env=full_env,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        return proc.stdout

    def attempt(self, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
        """Run git without raising; the caller reads returncode, stdout and stderr (text)."""
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}
        try:
            return subprocess.run(
                ["git", *args], cwd=self.cwd, capture_output=True, text=True, env=env, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(["git", *args], 124, "", f"timed out after {timeout} s")

    def ok(self, *args: str) -> bool:
        return subprocess.run(["git", *args], cwd=self.cwd, capture_output=True).returncode == 0

    def config_get(self, key: str) -> str | None:
        out = subprocess.run(["git", "config", "--get", key], cwd=self.cwd, capture_output=True, text=True)
        return out.stdout.strip() or None if out.returncode == 0 else None

    def config_set(self, key: str, value: str) -> None:
        self.run("config", key, value)

    def for_each_ref(self, prefix: str) -> dict[str, str]:
        """Ref name -> commit sha for every ref under prefix."""
        out = self.run("for-each-ref", "--format=%(objectname) %(refname)", prefix)
        return {name: sha for sha, name in (line.split(" ", 1) for line in out.splitlines())}

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.ok("merge-base", "--is-ancestor", ancestor, descendant)
