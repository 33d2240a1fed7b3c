"""The kept clustering (`ops.link_cache`): the answer single link gave for a window is reused only for that
window, model and threshold, and a damaged, foreign or unwritable file means linking again, never a
wrong answer or a crash."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from git_agora.frontier.clusters import single_link
from git_agora.ops import link_cache
from git_agora.ops.link_cache import LINK_FILE, MAGIC, kept_linker


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    base = rng.normal(size=(4, 16))
    rows = base[rng.integers(0, 4, n)] + 0.05 * rng.normal(size=(n, 16))  # four tight groups
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def linker(tmp_path, monkeypatch):
    folder = tmp_path / "index"
    folder.mkdir()
    monkeypatch.setattr(link_cache, "index_dir", lambda repo: folder)
    calls = []

    def counted(vectors, threshold, block):
        calls.append(len(vectors))
        return single_link(vectors, threshold, block)

    monkeypatch.setattr(link_cache, "single_link", counted)
    project = type("P", (), {"repo": None})()
    return kept_linker(project), calls, folder / LINK_FILE


def same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def test_the_same_window_is_linked_once_and_any_change_links_again(linker):
    link, calls, path = linker
    rng = np.random.default_rng(3)
    vectors = unit_rows(rng, 60)
    shas = pa.array([f"{i:040x}" for i in range(60)])
    first = link("hashing", shas, vectors, 0.9, 16)
    assert same(first, single_link(vectors, 0.9, 16)) and calls == [60] and path.exists()
    assert same(link("hashing", shas, vectors, 0.9, 16), first) and calls == [60]  # kept
    assert same(link("hashing", shas, vectors, 0.9, 1024), first) and calls == [60]  # blocks change no answer

    link("minilm", shas, vectors, 0.9, 16)  # another model's vectors
    link("minilm", shas, vectors, 0.8, 16)  # another threshold
    moved = pa.array([f"{i:040x}" for i in range(1, 61)])  # the window moved on by one
    assert same(link("minilm", moved, vectors, 0.8, 16), single_link(vectors, 0.8, 16))
    assert calls == [60] * 4


def test_a_damaged_or_foreign_file_is_linked_again_and_replaced(linker):
    link, calls, path = linker
    vectors = unit_rows(np.random.default_rng(5), 40)
    shas = pa.array([f"{i:040x}" for i in range(40)])
    good = link("m", shas, vectors, 0.9, 1024)
    whole = path.read_bytes()
    out_of_range = whole[: len(whole) - 8] + (10**6).to_bytes(8, "little")  # a degree no window of 40 has
    negative = whole[:-8] + (-1).to_bytes(8, "little", signed=True)
    foreign = b"XXXXXXXX" + whole[len(MAGIC) :]
    for damaged in (whole[:-1], whole + b"\0" * 16, foreign, b"", whole[:20], out_of_range, negative):
        path.write_bytes(damaged)
        assert same(link("m", shas, vectors, 0.9, 1024), good)
    assert len(calls) == 8 and path.read_bytes() == whole  # each linked again and kept again


def test_an_unwritable_place_still_gives_the_answer(tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the index folder would be: every write fails, even as root\n")
    monkeypatch.setattr(link_cache, "index_dir", lambda repo: blocked)
    link = kept_linker(type("P", (), {"repo": None})())
    vectors = unit_rows(np.random.default_rng(8), 30)
    shas = pa.array([f"{i:040x}" for i in range(30)])
    for _ in range(2):
        assert same(link("m", shas, vectors, 0.9, 1024), single_link(vectors, 0.9, 1024))
    assert list(tmp_path.iterdir()) == [blocked]
