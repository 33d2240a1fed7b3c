"""The embedding cache in `.git/agora/index/`: vectors keyed by (sha, model), computed only when
missing (commits never change), stored as a memory-mapped float32 file. Derived data: not part of
`index --check`, and rebuilt by deleting it.

Adding vectors costs what is new (`append_embeddings`): the vectors are written after the last one the
keys name, then the small keys file is replaced atomically. The keys are the commit point: a crash
before their rename leaves the old keys, which name only old vectors (readers ignore bytes past the
last vector the keys name), and the next append writes over those bytes.

Two ways to read the vectors: `read_embeddings` maps the file (a few rows touched, as analyze's window
needs), `row_reader` reads rows with plain reads into a small buffer, for a scan of every vector (search):
a mapped scan would keep every page it touched resident, 154 MB at 100,000 x 384.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..frontier.embeddings import RowReader
from ..index.osfiles import writing
from ..index.schema import EMBEDDINGS
from ..index.segments import WriteFailed, discard, read_parquet, sync_dir
from ..index.state import index_dir
from ..index.store import locked
from ..refs.store import Repository

EMBEDDINGS_FILE = "embeddings.parquet"
VECTORS_FILE = "embeddings.f32"
KEYS_GROUP = 32_768  # rows per row group of the keys file: reading one holds a few MB, not the whole file
KEYS = pa.schema([("sha", pa.string()), ("model", pa.string()), ("start", pa.int64()), ("dim", pa.int32())])


def read_embeddings(repo: Repository) -> pa.Table | None:
    """The cache as an EMBEDDINGS table whose vectors are memory-mapped, not read into memory.

    On disk: `embeddings.parquet` holds (sha, model, start, dim) and `embeddings.f32` the float32
    vectors back to back. Reading a 100,000 x 384 cache costs a few MB until vectors are used.
    """
    directory = index_dir(repo)
    try:
        floats = np.memmap(directory / VECTORS_FILE, dtype="<f4", mode="r")
    except (OSError, ValueError):
        return None
    keys = _read_keys(directory, len(floats))
    if keys is None:
        return None
    ends = keys["start"].to_numpy() + keys["dim"].to_numpy()
    offsets = np.r_[0, ends].astype(np.int32) if len(ends) else np.zeros(1, np.int32)
    values = pa.Array.from_buffers(pa.float32(), int(offsets[-1]), [None, pa.py_buffer(floats)])
    vectors = pa.ListArray.from_arrays(pa.array(offsets), values)
    return pa.table([keys["sha"], keys["model"], vectors], schema=EMBEDDINGS)


def _read_keys(directory: Path, floats: int) -> pa.Table | None:
    """The keys, when they name contiguous vectors within the first ``floats`` floats of the vector file
    (it may be longer: an append that crashed before its keys were replaced); else None."""
    try:
        keys = read_parquet(directory / EMBEDDINGS_FILE)  # a row group at a time: a search's peak
    except (OSError, ValueError, pa.ArrowException):
        return None
    if keys.schema.names != KEYS.names:
        return None
    starts = keys["start"].to_numpy()
    ends = starts + keys["dim"].to_numpy()
    if len(ends) and (starts[0] != 0 or ends.max() > floats or not np.array_equal(starts[1:], ends[:-1])):
        return None  # the two files do not belong together: recompute rather than guess
    return keys.cast(KEYS)


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
                if handle.readinto(out[first:end].data.cast("B")) != out[first:end].nbytes:
                    raise ValueError(f"{path.name} is shorter than its index says")
        return out.astype(np.float32, copy=False)

    return read


def append_embeddings(repo: Repository, rows: pa.Table) -> pa.Table | None:
    """Add ``rows`` (EMBEDDINGS: sha, model, vector) to the cache, writing only them, and return the
    cache as `read_embeddings` reads it now. Rows whose (sha, model) is cached already are skipped.

    Under the index's exclusive lock: (1) read the current keys (another process may have appended);
    (2) write the new vectors after the last vector they name and fsync; (3) write the new keys to a
    temporary file, fsync, rename it over the keys, sync the directory. Raises `WriteFailed` (one
    line naming the path) when the directory cannot be written; the cache is then unchanged.
    """
    directory = index_dir(repo)
    vectors_path, keys_path = directory / VECTORS_FILE, directory / EMBEDDINGS_FILE
    with locked(directory, exclusive=True):
        try:
            size = vectors_path.stat().st_size // 4
        except FileNotFoundError:
            size = 0
        keys = _read_keys(directory, size)
        if keys is None:
            keys = KEYS.empty_table()  # nothing usable cached: start over from the first byte
        rows = _not_cached(rows.combine_chunks(), keys)
        end = int((keys["start"].to_numpy() + keys["dim"].to_numpy()).max()) if keys.num_rows else 0
        flat, new_keys = _flat(rows, end)
        tmp = directory / f".{EMBEDDINGS_FILE}.{os.getpid()}"
        try:
            _write_vectors(vectors_path, end, flat)
            _write_keys(pa.concat_tables([keys, new_keys]), tmp)
            _replace(tmp, keys_path)
            sync_dir(directory)
        except OSError as exc:
            discard(tmp)
            raise WriteFailed(exc, exc.filename or directory) from None
    return read_embeddings(repo)


def _not_cached(rows: pa.Table, keys: pa.Table) -> pa.Table:
    if not keys.num_rows or not rows.num_rows:
        return rows
    key = pc.binary_join_element_wise(rows["sha"], rows["model"], "\0")
    cached = pc.binary_join_element_wise(keys["sha"], keys["model"], "\0")
    return rows.filter(pc.invert(pc.is_in(key, value_set=cached)))


def _flat(rows: pa.Table, end: int) -> tuple[np.ndarray, pa.Table]:
    """The vectors of ``rows`` back to back, and their keys when they start at float ``end``."""
    vectors = rows.column("vector")
    vectors = vectors.chunk(0) if vectors.num_chunks else pa.array([], pa.list_(pa.float32()))
    lengths = pc.list_value_length(vectors).fill_null(0).to_numpy().astype(np.int64)
    starts = end + np.r_[0, np.cumsum(lengths)[:-1]] if len(lengths) else np.zeros(0, np.int64)
    flat = pc.list_flatten(vectors).to_numpy(zero_copy_only=False).astype("<f4", copy=False)
    keys = pa.table([rows["sha"], rows["model"], pa.array(starts, pa.int64()), pa.array(lengths, pa.int32())], KEYS)
    return flat, keys


# --- the steps of an append (each one a place where a crash is injected in the tests) -------------


def _write_vectors(path: Path, start: int, flat: np.ndarray) -> None:
    """Write ``flat`` from float ``start`` on, cut the file there, fsync. Bytes before ``start`` are
    never touched: readers holding the old keys see the same vectors throughout."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        data, offset = np.ascontiguousarray(flat).data.cast("B"), start * 4
        while data:
            written = os.pwrite(fd, data, offset)
            data, offset = data[written:], offset + written
        os.ftruncate(fd, offset)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_keys(keys: pa.Table, path: Path) -> None:
    with writing(path) as sink:
        pq.write_table(keys, sink, compression="zstd", use_dictionary=["model"], row_group_size=KEYS_GROUP)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(src: Path, dst: Path) -> None:
    os.replace(src, dst)
