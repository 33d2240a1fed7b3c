"""The embedding cache in `.git/agora/index/`: vectors keyed by (sha, model), computed only when
missing (commits never change), stored as a memory-mapped float32 file. Derived data: not part of
`index --check`, and rebuilt by deleting it.

Two ways to read the vectors: `read_embeddings` maps the file (a few rows touched, as analyze's window
needs), `row_reader` reads rows with plain reads into a small buffer, for a scan of every vector (search):
a mapped scan would keep every page it touched resident, 154 MB at 100,000 x 384.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..feedback import Feedback
from ..frontier.embeddings import RowReader, empty_cache, rows_table, texts_by_sha
from ..index.schema import EMBEDDINGS
from ..index.segments import WriteFailed, discard
from ..index.state import index_dir
from ..index.store import locked
from ..refs.store import Repository
from .backends import DEFAULT_MODEL, HASHING, EmbeddingBackend, backend_for, hashing_model_id

EMBEDDINGS_FILE = "embeddings.parquet"
VECTORS_FILE = "embeddings.f32"
PROGRESS_FROM = 512  # fewer texts than this embed in a blink: no progress bar

Progress = Callable[[int, int], None]


def read_embeddings(repo: Repository) -> pa.Table | None:
    """The cache as an EMBEDDINGS table whose vectors are memory-mapped, not read into memory.

    On disk: `embeddings.parquet` holds (sha, model, start, dim) and `embeddings.f32` the float32
    vectors back to back. Reading a 100,000 x 384 cache costs a few MB until vectors are used.
    """
    directory = index_dir(repo)
    try:
        keys = pq.ParquetFile(directory / EMBEDDINGS_FILE).read()
        floats = np.memmap(directory / VECTORS_FILE, dtype="<f4", mode="r")
    except (OSError, ValueError, pa.ArrowException):
        return None
    if keys.schema.names != ["sha", "model", "start", "dim"]:
        return None
    starts = keys["start"].to_numpy()
    ends = starts + keys["dim"].to_numpy()
    if len(ends) and (ends.max() > len(floats) or not np.array_equal(starts[1:], ends[:-1])):
        return None  # the two files do not belong together: recompute rather than guess
    offsets = np.r_[0, ends].astype(np.int32) if len(ends) else np.zeros(1, np.int32)
    values = pa.Array.from_buffers(pa.float32(), int(offsets[-1]), [None, pa.py_buffer(floats)])
    vectors = pa.ListArray.from_arrays(pa.array(offsets), values)
    table = pa.table([keys["sha"], keys["model"], vectors], schema=EMBEDDINGS)
    return table


def row_reader(repo: Repository, cache: pa.Table | None) -> RowReader | None:
    """Read the vectors of rows of ``cache`` (as `read_embeddings` returned it) with plain reads, one per
    run of consecutive rows, into a buffer the caller owns: a scan of every vector then holds one block
    in memory, not the whole mapped file. None when ``cache`` is not the file's table (rows added
    since, in memory only)."""
    path = index_dir(repo) / VECTORS_FILE
    if cache is None or cache["vector"].num_chunks != 1:
        return None
    offsets = cache["vector"].chunk(0).offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    try:
        if offsets[-1] * 4 > path.stat().st_size:
            return None
    except OSError:
        return None

    def read(rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        starts = offsets[rows]
        lengths = offsets[rows + 1] - starts
        dim = int(lengths[0]) if len(rows) else 0
        if (lengths != dim).any():
            raise ValueError("these embeddings have mixed dimensions")
        out = np.empty((len(rows), dim), dtype="<f4")
        breaks = np.flatnonzero(starts[1:] != starts[:-1] + dim) + 1
        with open(path, "rb", buffering=0) as handle:
            for first, end in zip(np.r_[0, breaks], np.r_[breaks, len(rows)]):
                handle.seek(int(starts[first]) * 4)
                if handle.readinto(out[first:end]) != out[first:end].nbytes:
                    raise ValueError(f"{path.name} is shorter than its index says")
        return out.astype(np.float32, copy=False)

    return read


def write_embeddings(repo: Repository, table: pa.Table) -> None:
    directory = index_dir(repo)
    table = table.combine_chunks()
    vectors = table.column("vector")
    vectors = vectors.chunk(0) if vectors.num_chunks else pa.array([], pa.list_(pa.float32()))
    lengths = pc.list_value_length(vectors).fill_null(0).to_numpy().astype(np.int64)
    starts = np.r_[0, np.cumsum(lengths)[:-1]] if len(lengths) else np.zeros(0, np.int64)
    flat = pc.list_flatten(vectors).to_numpy(zero_copy_only=False).astype("<f4", copy=False)
    keys = pa.table(
        {
            "sha": table["sha"],
            "model": table["model"],
            "start": pa.array(starts, pa.int64()),
            "dim": pa.array(lengths, pa.int32()),
        }
    )
    with locked(directory, exclusive=True):
        tmp_vectors = directory / f".{VECTORS_FILE}.{os.getpid()}"
        tmp_keys = directory / f".{EMBEDDINGS_FILE}.{os.getpid()}"
        try:
            flat.tofile(tmp_vectors)
            pq.write_table(keys, tmp_keys, compression="zstd", use_dictionary=["model"])
            os.replace(tmp_vectors, directory / VECTORS_FILE)
            os.replace(tmp_keys, directory / EMBEDDINGS_FILE)
        except OSError as exc:  # a full disk: one line naming the file, nothing half-written left
            discard(tmp_vectors)
            discard(tmp_keys)
            raise WriteFailed(exc, directory) from None


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
    nothing new the same table object is returned. Texts are encoded shortest first, ``batch_size``
    at a time, so that the encoder's own batches pad little.
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
    order = sorted(range(len(todo)), key=lambda i: len(texts[todo[i]]))
    vectors: np.ndarray | None = None
    for start in range(0, len(todo), batch_size):
        rows = order[start : start + batch_size]
        part = np.asarray(backend.encode([texts[todo[i]] for i in rows]), dtype=np.float32)
        if vectors is None:
            vectors = np.zeros((len(todo), part.shape[1]), dtype=np.float32)
        vectors[rows] = part
        if progress is not None and len(todo) > batch_size:
            progress(min(start + batch_size, len(todo)), len(todo))
    assert vectors is not None
    return pa.concat_tables([cache, rows_table(todo, backend.model, vectors)])


def _unembedded(contributions: pa.Table, cache: pa.Table | None, model: str) -> pa.ChunkedArray:
    """Per row: valid, and no vector of `model` cached."""
    valid = pc.fill_null(contributions["valid"], False)
    if cache is None:
        return valid
    have = cache["sha"].filter(pc.equal(cache["model"], model))  # never touch the vectors here
    return pc.and_(valid, pc.invert(pc.is_in(contributions["sha"], value_set=have)))


def cached_embeddings(
    repo: Repository,
    contributions: pa.Table,
    model: str | None,
    feedback: Feedback,
    described: Callable[[], pa.Table] | None = None,
) -> tuple[pa.Table | None, str]:
    """The cache with every valid contribution embedded by `model` (None: the default), and the model id.

    The encoder is loaded only when some contribution lacks a cached vector; then one line through
    `feedback` says how many descriptions which encoder embedded (and a fallback's reason).
    `contributions` may leave out the descriptions (the largest column) when `described()` gives the
    table with them: it is called only when something must be embedded.
    """
    cache = read_embeddings(repo)
    wanted = hashing_model_id() if model == HASHING else (model or DEFAULT_MODEL)
    valid = _unembedded(contributions, cache, wanted)
    if not pc.any(valid).as_py():
        return cache, wanted
    if "description" not in contributions.column_names and described is not None:
        contributions = described()
        valid = _unembedded(contributions, cache, wanted)
    texts = texts_by_sha(contributions.select(["sha", "title", "description", "valid"]).filter(valid))
    backend = backend_for(model)
    if backend.notice:
        feedback.notice(backend.notice)
    start = time.perf_counter()
    if len(texts) < PROGRESS_FROM:
        updated = embed_missing(texts, cache, backend)
    else:
        with feedback.progress("embedding descriptions", len(texts)) as advance:
            updated = embed_missing(texts, cache, backend, progress=lambda done, total: advance(done))
    if len(texts) >= PROGRESS_FROM:
        seconds = time.perf_counter() - start
        feedback.notice(
            f"embedded {len(texts)} descriptions with {backend.model} ({backend.runtime}) in {seconds:.1f} s"
        )
    try:
        write_embeddings(repo, updated)
    except WriteFailed as exc:  # a read-only .git/agora: use the vectors, keep none
        if not exc.read_only:
            raise
        feedback.notice(f"{exc}: the new embeddings are not cached")
    return updated, backend.model
