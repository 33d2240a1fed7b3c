"""Shared fixtures: an isolated Git environment and a driver for the real `git agora` command."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from slurm import slurm, slurm_cluster  # noqa: F401  (a real Slurm, started only for a test that asks)

from agora_testing import agora, git, make_clone

BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory, monkeypatch):
    """No user config leaks in; `git agora` resolves to this environment's console script. The cache
    directory (the embedding model exported to ONNX) is shared by every test of the run, across xdist
    workers: exported once (its writers take a lock, so the other workers wait and then load it).
    The command runs as installed for a user, its bytecode cached: where the environment turns caching
    off (PYTHONDONTWRITEBYTECODE), each of the suite's thousands of `git agora` processes would compile
    the package again (0.1 s each)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(run_folder(tmp_path_factory) / "cache"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AGORA_ACCOUNT", raising=False)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    (home / ".gitconfig").write_text('[init]\n\tdefaultBranch = main\n[protocol "file"]\n\tallow = always\n')


def run_folder(tmp_path_factory) -> Path:
    """The folder of this test run: under xdist, the one above every worker's base folder."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture
def remote(tmp_path) -> Path:
    path = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(path))
    return path


@pytest.fixture
def project(tmp_path, remote):
    """A clone `a` (account alice) that has initialised a project on a bare remote."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    agora(a, "init", "--metric", "bpc", "--direction", "min", "--tolerance", "0.01")
    return a
