"""Shared fixtures: an isolated Git environment and a driver for the real `git agora` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory, monkeypatch):
    """No user config leaks in; `git agora` resolves to this environment's console script."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                       "GIT_COMMITTER_EMAIL": "t@t"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AGORA_ACCOUNT", raising=False)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


def agora(cwd: Path, *args: str, account: str | None = None, check: bool = True, timeout: float = 120,
          input: str | None = None) -> Result:
    """Run the real `git agora` command, as a user would."""
    env = dict(os.environ)
    if account:
        env["AGORA_ACCOUNT"] = account
    proc = subprocess.run(["git", "agora", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=timeout, input=input)
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"git agora {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return result


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def remote(tmp_path) -> Path:
    path = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(path))
    return path


def make_clone(parent: Path, name: str, url: str, account: str) -> Path:
    path = parent / name
    path.mkdir()
    git(path, "init", "-q")
    git(path, "remote", "add", "origin", url)
    git(path, "config", "agora.account", account)
    return path


@pytest.fixture
def project(tmp_path, remote):
    """A clone `a` (account alice) that has initialised a project on a bare remote."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    agora(a, "init", "--metric", "bpc", "--direction", "min", "--tolerance", "0.01")
    return a
