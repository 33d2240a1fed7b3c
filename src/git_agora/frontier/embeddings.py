"""Vectors of contribution descriptions, as the frontier uses them: which text is embedded, which
model's vectors to read, and unit-length matrices aligned with a list of shas. Pure: encoders are
loaded and vectors cached by `git_agora.embedding`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from git_agora.index.schema import EMBEDDINGS

RowReader = Callable[[np.ndarray], np.ndarray]
"""Reads the vectors of cache rows (ascending row numbers) as float32 ``(n, dim)``; handed in by the
owner of the cache file, so that a scan of every vector needs no mapping of the whole file."""


class QueryEncoder(Protocol):
    """What search needs of an encoder: the model id its vectors are cached under, and `encode`."""

    @property
    def model(self) -> str: ...

    def encode(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Coverage:
    """How many valid contributions have a vector of the model (``embedded``) of how many (``total``)."""

    embedded: int
    total: int

    @property
    def complete(self) -> bool:
        return self.embedded >= self.total

    def describe(self) -> str:
        return f"embeddings cover {self.embedded:,} of {self.total:,} contributions"

    def to_dict(self) -> dict[str, int]:
        return {"embedded": self.embedded, "total": self.total}


def contribution_text(title: str | None, description: str | None) -> str:
    """The text that is embedded: the title, a blank line, then the description."""
    title = (title or "").strip()
    description = (description or "").strip()
    if not description or description == title:
        return title
    if description.startswith(title + "\n"):
        return description  # the index keeps the title as the description's first line
    return f"{title}\n\n{description}" if title else description


class TextsOf(Mapping[str, str]):
    """``{sha: contribution_text}`` of the valid rows (of those among ``shas`` when given, in that order), each text
    made when asked for from the table's own columns: a million descriptions as Python strings, or a
    filtered copy of the column, would take several times the column's size."""

    def __init__(self, contributions: pa.Table, shas: Sequence[str] | None = None):
        valid = np.asarray(pc.fill_null(contributions["valid"], False).to_numpy(zero_copy_only=False), dtype=bool)
        if shas is None:
            rows = np.flatnonzero(valid)
            keys: Sequence[str] = contributions["sha"].take(pa.array(rows, pa.int64())).to_pylist()
        else:
            at = pc.index_in(pa.array(shas, pa.string()), value_set=contributions["sha"])
            found = np.asarray(pc.fill_null(at, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
            keep = (found >= 0) & valid[np.maximum(found, 0)]
            keys, rows = [sha for sha, kept in zip(shas, keep.tolist()) if kept], found[keep]
        self._titles, self._descriptions = contributions["title"], contributions["description"]
        self._row = dict(zip(keys, rows.tolist()))

    def __getitem__(self, sha: str) -> str:
        row = self._row[sha]
        return contribution_text(self._titles[row].as_py(), self._descriptions[row].as_py())

    def __iter__(self):
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def empty_cache() -> pa.Table:
    return EMBEDDINGS.empty_table()


def rows_table(shas: Sequence[str], model: str, vectors: np.ndarray) -> pa.Table:
    n, dim = vectors.shape
    flat = pa.array(vectors.reshape(-1), type=pa.float32())
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32))
    column = pa.ListArray.from_arrays(offsets, flat)
    return pa.table(
        {"sha": pa.array(shas, pa.string()), "model": pa.array([model] * n, pa.string()), "vector": column}
    ).cast(EMBEDDINGS)


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
    (zero rows where absent) and the presence mask, without re-indexing the cache each time;
    ``similarities(vector)`` scores every sha against one vector, a block of rows at a time.
    Rows are read with ``read`` when one is given; else, when the cache's vectors lie end to end with
    one length (how the cache file stores them), straight from its buffer (only the rows used are
    touched, none copied whole); otherwise through Arrow's list take.
    """

    rows: pa.Table  # the cache
    position: np.ndarray  # per sha: its row of the model in ``rows``, -1 when absent
    model: str | None
    read: RowReader | None = None

    @property
    def present(self) -> np.ndarray:
        return self.position >= 0

    @cached_property
    def _layout(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(the values as a (k, dim) matrix view, each cache row's row of it), or None."""
        column = self.rows["vector"]
        if column.num_chunks != 1 or not self.present.any():
            return None
        vectors = column.chunk(0)
        offsets = vectors.offsets.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        used = self.position[self.present]
        lengths = offsets[used + 1] - offsets[used]
        dim = int(lengths[0])
        values = vectors.values
        if dim == 0 or (lengths != dim).any() or (offsets[used] % dim).any() or len(values) % dim:
            return None
        if values.null_count or not pa.types.is_floating(values.type):
            return None
        matrix = values.to_numpy(zero_copy_only=True).reshape(-1, dim)
        return matrix, offsets[:-1] // dim

    def vectors(self, indices: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Unit-length vectors aligned with the shas (those at ``indices``): ``(matrix (n, dim) float32,
        present (n,) bool)``, a zero row where a sha has none (any model's output: cosine = dot product)."""
        where = self.position if indices is None else self.position[np.asarray(indices, dtype=np.int64)]
        present = where >= 0
        if not present.any():
            return np.zeros((len(where), 0), dtype=np.float32), present
        chosen = self._rows_of(where[present])
        matrix = np.zeros((len(where), chosen.shape[1]), dtype=np.float32)
        matrix[present] = unit_rows(chosen)
        return matrix, present

    def similarities(self, vector: np.ndarray, block: int = 4096) -> np.ndarray:
        """Cosine similarity of ``vector`` with each sha's vector; -inf where a sha has none."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        scores = np.full(len(self.position), -np.inf, dtype=np.float32)
        shas = np.flatnonzero(self.present)
        shas = shas[np.argsort(self.position[shas], kind="stable")]  # cache order: the file is read forwards
        for start in range(0, len(shas), block):
            part = shas[start : start + block]
            rows = self._rows_of(self.position[part])
            if rows.shape[1] != len(query):
                raise ValueError(f"query has dimension {len(query)}, model {self.model} has {rows.shape[1]}")
            norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
            scores[part] = np.einsum("ij,j->i", rows, query) / np.where(norms > 0, norms, 1.0)
        return scores

    def _rows_of(self, cache_rows: np.ndarray) -> np.ndarray:
        """float32 (len(cache_rows), dim) copies of these cache rows' vectors (as stored, not normalised)."""
        if self.read is not None:
            return self.read(cache_rows)
        if self._layout is not None:
            matrix, row = self._layout
            return matrix[row[cache_rows]].astype(np.float32, copy=False)
        vectors = self.rows["vector"].take(pa.array(cache_rows)).combine_chunks()
        lengths = pc.list_value_length(vectors).to_numpy(zero_copy_only=False)
        dim = int(lengths.max())
        if (lengths != dim).any():
            raise ValueError(f"embeddings of model {self.model!r} have mixed dimensions")
        flat = pc.list_flatten(vectors).to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        return flat.reshape(-1, dim)


def vector_index(
    embeddings: pa.Table | None,
    shas: pa.Array | pa.ChunkedArray | Sequence[str],
    model: str | None = None,
    read: RowReader | None = None,
) -> VectorIndex:
    """Index ``model``'s vectors (see ``pick_model``) by position in ``shas`` (``read``: see `VectorIndex`)."""
    if not isinstance(shas, (pa.Array, pa.ChunkedArray)):
        shas = pa.array(list(shas), pa.string())
    model = pick_model(embeddings, model)
    if embeddings is None or model is None or embeddings.num_rows == 0:
        return VectorIndex(empty_cache(), np.full(len(shas), -1, dtype=np.int64), model)
    mine = np.flatnonzero(pc.fill_null(pc.equal(embeddings["model"], model), False).to_numpy(zero_copy_only=False))
    every = len(mine) == embeddings.num_rows
    keys = embeddings["sha"] if every else embeddings["sha"].take(pa.array(mine))  # no copy of the vectors
    found = pc.index_in(shas, value_set=keys)
    position = np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    if not every:
        position[position >= 0] = mine[position[position >= 0]]
    return VectorIndex(embeddings, position, model, read)
