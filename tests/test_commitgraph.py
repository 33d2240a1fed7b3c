"""Git's commit-graph files read as git reads them (`refs.commitgraph`), by both of this package's readers:
the fetch's counts and lookups (`refs.boundary`) and the rebuild's arrays (`index.graphfile`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agora_testing import git
from git_agora.index.graphfile import CommitGraph
from git_agora.refs.boundary import commit_graph_size, in_commit_graph
from git_agora.refs.commitgraph import HEADER, chunk_table, graph_files, table_size


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository of 12 commits on one branch, 5 more on another, no commit-graph yet."""
    path = tmp_path / "r"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for i in range(12):
        git(path, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", f"c{i}")
    git(path, "checkout", "-q", "-b", "side", "HEAD~3")
    for i in range(5):
        git(path, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", f"s{i}")
    return path


def objects(repo: Path) -> Path:
    return repo / ".git" / "objects"


def counts(repo: Path) -> tuple[int, int | None]:
    """What each reader finds: the fetch's count, and the rebuild's number of commits (None: no graph)."""
    graph = CommitGraph.load(objects(repo))
    return commit_graph_size(objects(repo)), None if graph is None else len(graph.oids)


def test_both_readers_read_a_single_file_and_a_split_chain_alike(repo):
    assert graph_files(objects(repo)) == [] and counts(repo) == (0, None)
    git(repo, "commit-graph", "write", "--reachable", "--split")
    assert counts(repo) == (17, 17)
    git(repo, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "more")
    git(repo, "commit-graph", "write", "--reachable", "--split=no-merge")
    files = graph_files(objects(repo))
    assert len(files) == 2 and all(f.parent.name == "commit-graphs" for f in files)
    assert counts(repo) == (18, 18)
    tip = git(repo, "rev-parse", "HEAD").strip()
    assert in_commit_graph(objects(repo), [tip, "f" * 40]) == {tip}


def test_a_single_file_beside_a_chain_is_the_one_git_reads(repo):
    """git reads `info/commit-graph` when it exists and ignores a chain beside it: so do both readers
    (the fetch's count once added both)."""
    git(repo, "commit-graph", "write", "--reachable", "--split")
    chain = objects(repo) / "info" / "commit-graphs"
    kept = repo.parent / "kept-chain"
    shutil.copytree(chain, kept)
    git(repo, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "more")
    git(repo, "commit-graph", "write", "--reachable")  # a single file; git removes the chain
    if not chain.exists():
        shutil.copytree(kept, chain)  # a chain left beside it, as an interrupted write leaves one
    assert graph_files(objects(repo)) == [objects(repo) / "info" / "commit-graph"]
    assert counts(repo) == (18, 18)


def test_a_damaged_chunk_table_reads_as_no_graph(repo):
    git(repo, "commit-graph", "write", "--reachable")
    path = objects(repo) / "info" / "commit-graph"
    data = bytearray(path.read_bytes())
    assert chunk_table(bytes(data[: table_size(bytes(data[:HEADER]))]), len(data)) is not None
    os.chmod(path, 0o644)
    second_offset = HEADER + 12 + 4  # the second chunk's offset: past the end of the file
    data[second_offset : second_offset + 8] = (len(data) + 100).to_bytes(8, "big")
    path.write_bytes(bytes(data))
    assert chunk_table(bytes(data[: table_size(bytes(data[:HEADER]))]), len(data)) is None
    assert counts(repo) == (0, None)
    path.write_bytes(b"CGPH\x02\x01")  # another version, cut short
    assert counts(repo) == (0, None)


def test_no_damage_to_a_graph_file_makes_either_reader_raise(repo):
    """Bytes flipped in the header and chunk table or anywhere in the file, or the file cut anywhere: both
    readers answer (a count, a lookup, a graph or none), never raise."""
    import random

    git(repo, "commit-graph", "write", "--reachable")
    path = objects(repo) / "info" / "commit-graph"
    os.chmod(path, 0o644)
    good = path.read_bytes()
    tip = git(repo, "rev-parse", "HEAD").strip()
    rng = random.Random(5)
    table_end = table_size(good[:HEADER])
    for trial in range(300):
        data = bytearray(good)
        if trial % 3 == 0:
            data = data[: rng.randrange(len(good))]
        else:
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(table_end if trial % 3 == 1 else len(good))] = rng.randrange(256)
        path.write_bytes(bytes(data))
        size, graph = counts(repo)
        assert size >= 0 and (graph is None or graph >= 0)
        assert in_commit_graph(objects(repo), [tip]) <= {tip}
    path.write_bytes(good)
    assert counts(repo) == (17, 17)
