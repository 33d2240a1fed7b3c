"""The parallel rebuild (worker processes, graph rules over columns) equals the serial path row by row,
also when a worker dies."""

from __future__ import annotations

import os
from pathlib import Path

import hostile
import pytest

from agora_testing import agora, git, make_clone
from git_agora.index import compare, parallel, store
from git_agora.ops.indexing import _rules
from git_agora.project import Project
from git_agora.refs.store import Repository

NOW = 1_900_000_000  # after every corpus commit: nothing is pending


@pytest.fixture
def corpus(tmp_path, remote, project):
    """A project with valid work, a verification, and 400 hostile commits (bad parents, formats, times)."""
    setup = agora(project, "whoami", "--json").json()["setup"]
    (project / "model.py").write_text("order = 4\n")
    work = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=1.5", "--json").json()["sha"]
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    agora(b, "post", "-m", "checked", "--tag", "verification", "--target", work, "--verdict", "confirmed")
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    hostile.write(m, setup, 400)
    git(m, "push", "-q", "origin", "refs/agora/log/mallory")
    agora(project, "fetch")
    return project


def rebuilt(clone: Path, tmp: Path):
    p = Project.open(clone)
    store.update_index(p.repo, _rules(p), rebuild=True, directory=tmp, now=NOW)
    return store._read(tmp, None)


def assert_same(serial, parallel_) -> None:
    assert compare.differences("contributions", serial[1], parallel_[1]) == []
    assert compare.differences("cross_refs", serial[2], parallel_[2]) == []
    assert serial[1].equals(parallel_[1]) and serial[2].equals(parallel_[2])
    assert serial[0].tips == parallel_[0].tips and serial[0].accounts == parallel_[0].accounts


def test_the_parallel_rebuild_equals_the_serial_one(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    serial = rebuilt(corpus, tmp_path / "serial")
    assert serial[1].num_rows > 400 and not all(serial[1].column("valid").to_pylist())
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    monkeypatch.setattr(parallel, "CHUNK", 37)  # many chunks, finishing in any order
    monkeypatch.setattr(parallel, "workers", lambda: 3)
    assert_same(serial, rebuilt(corpus, tmp_path / "parallel"))


def test_a_worker_that_dies_loses_no_row(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    serial = rebuilt(corpus, tmp_path / "serial")
    main, original = os.getpid(), parallel.local_rows

    def dying(records, primary_metric, now):
        if os.getpid() != main:
            os._exit(3)  # a worker killed midway (out of memory, a signal)
        return original(records, primary_metric, now)

    pools, make_pool = [], parallel._pool
    monkeypatch.setattr(parallel, "_pool", lambda count: pools.append(make_pool(count)) or pools[-1])
    monkeypatch.setattr(parallel, "local_rows", dying)
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    monkeypatch.setattr(parallel, "CHUNK", 50)
    assert_same(serial, rebuilt(corpus, tmp_path / "parallel"))
    assert len(pools) == 1  # the workers were started, died, and their chunks were parsed here


def test_an_update_after_a_parallel_rebuild_equals_a_rebuild(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    monkeypatch.setattr(parallel, "CHUNK", 64)
    p = Project.open(corpus)
    store.update_index(p.repo, _rules(p), rebuild=True, now=NOW)
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    agora(corpus, "post", "-m", "later", "--tag", "insight")
    assert store.check_index(Repository.discover(corpus), _rules(Project.open(corpus)), now=NOW) == []
