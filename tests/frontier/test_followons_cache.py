"""The follow-on cache on disk: kept after a count, updated on the next, never trusted when damaged."""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from frontier_tables import random_table

from git_agora import followons_cache
from git_agora.followons_cache import FOLLOW_ONS_FILE, cached_counter, read_follow_ons
from git_agora.frontier.evidence import count_descendants, current_verdicts, follow_on_work
from git_agora.frontier.graph import build_graph
from git_agora.index.segments import WriteFailed


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "index").mkdir()
    return SimpleNamespace(agora_path=str(tmp_path))


def state(rows: int):
    graph = build_graph(random_table(600, seed=9, merge_share=0.3).slice(0, rows))
    return graph, follow_on_work(graph, current_verdicts(graph))


def test_counts_are_kept_and_updated(repo, monkeypatch):
    graph, qualifying = state(500)
    assert cached_counter(repo)(graph, qualifying).tolist() == count_descendants(graph, qualifying).tolist()
    kept = read_follow_ons(repo)
    assert kept is not None and kept.sha.to_pylist() == graph.table["sha"].to_pylist()

    recounts = []
    monkeypatch.setattr(followons_cache, "follow_on_counts", _spy(followons_cache.follow_on_counts, recounts))
    graph, qualifying = state(600)
    assert cached_counter(repo)(graph, qualifying).tolist() == count_descendants(graph, qualifying).tolist()
    assert recounts == [500]  # started from the 500 rows kept
    assert len(read_follow_ons(repo).sha) == 600


def _spy(function, seen):
    def spy(graph, qualifying, previous=None):
        seen.append(None if previous is None else len(previous.sha))
        return function(graph, qualifying, previous)

    return spy


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other rules", "impossible counts"])
def test_a_damaged_cache_counts_as_missing(repo, damage):
    graph, qualifying = state(300)
    cached_counter(repo)(graph, qualifying)
    path = Path(repo.agora_path) / "index" / FOLLOW_ONS_FILE
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
    elif damage == "garbage":
        data = bytearray(path.read_bytes())
        data[200:260] = b"\xff" * 60
        path.write_bytes(bytes(data))
    elif damage == "other rules":
        table = pq.read_table(path)
        pq.write_table(table.replace_schema_metadata({b"rules": b"0"}), path)
    else:
        table = pq.read_table(path)
        counts = pa.array(np.full(table.num_rows, table.num_rows + 5), pa.int64())
        pq.write_table(table.set_column(2, "counts", counts), path)
    assert read_follow_ons(repo) is None
    graph, qualifying = state(400)
    assert cached_counter(repo)(graph, qualifying).tolist() == count_descendants(graph, qualifying).tolist()
    assert read_follow_ons(repo) is not None  # written again


def test_read_only_index_counts_without_keeping(repo, monkeypatch):
    def refuse(*_):
        raise WriteFailed(OSError(errno.EROFS, "Read-only file system"), Path(repo.agora_path) / "index")

    monkeypatch.setattr(followons_cache, "write_follow_ons", refuse)
    graph, qualifying = state(300)
    assert cached_counter(repo)(graph, qualifying).tolist() == count_descendants(graph, qualifying).tolist()
    assert not (Path(repo.agora_path) / "index" / FOLLOW_ONS_FILE).exists()
