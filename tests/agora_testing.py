"""Helpers for end-to-end tests: drive the real `git agora` command and plain git."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


def agora(
    cwd: Path,
    *args: str,
    account: str | None = None,
    check: bool = True,
    timeout: float = 120,
    input: str | None = None,
) -> Result:
    """Run the real `git agora` command, as a user would."""
    env = dict(os.environ)
    if account:
        env["AGORA_ACCOUNT"] = account
    proc = subprocess.run(
        ["git", "agora", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout, input=input
    )
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"git agora {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return result


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def make_clone(parent: Path, name: str, url: str, account: str) -> Path:
    path = parent / name
    path.mkdir()
    git(path, "init", "-q")
    git(path, "remote", "add", "origin", url)
    git(path, "config", "agora.account", account)
    return path
