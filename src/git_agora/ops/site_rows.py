"""The indexed commits for `git agora site`, kept as Arrow columns and numpy arrays: Python values are
made for a slice of rows at a time (a page chunk) or for the few rows a page links to.

At a million contributions, Python lists of every column held several gigabytes; the Arrow columns
the analysis already read cost nothing more, a sha lookup is a sorted array of 40-byte keys and a
binary search, and the children and verdicts of a row are CSR offsets into numpy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def sha_keys(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The shas as a numpy array of 40-byte keys (a sha that is not 40 characters long never matches)."""
    try:
        fixed = pc.cast(column, pa.binary(40))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return np.array([_key(s) for s in column.to_pylist()], dtype="S40")
    if isinstance(fixed, pa.ChunkedArray):
        fixed = fixed.combine_chunks() if fixed.num_chunks else pa.array([], pa.binary(40))
    if fixed.null_count:
        return np.array([_key(s) for s in column.to_pylist()], dtype="S40")
    if len(fixed) == 0:
        return np.zeros(0, dtype="S40")
    return np.frombuffer(fixed.buffers()[1], dtype="S40", count=len(fixed), offset=fixed.offset * 40).copy()


def _key(sha: Any, malformed: bytes = b"\xfe" * 40) -> bytes:
    if not isinstance(sha, str) or len(sha) != 40 or not sha.isascii():
        return malformed  # a row's (\xfe...) and a query's (\xff...) never meet
    return sha.encode("ascii")


def find(keys: np.ndarray, order: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions (through `order`) of `wanted` in the sorted `keys`, -1 where absent; of equal keys,
    the last (the row a sha -> row dict would have kept)."""
    if not len(keys):
        return np.full(len(wanted), -1, dtype=np.int64)
    at = np.maximum(np.searchsorted(keys, wanted, side="right") - 1, 0)
    return np.where(keys[at] == wanted, order[at], -1).astype(np.int64)


class Rows:
    """The table's rows: `lookup` turns shas into row numbers, `chunk` and `pick` into Python values."""

    def __init__(self, table: pa.Table, descriptions: pa.ChunkedArray | None):
        self.table = table
        self.n = table.num_rows
        keys = sha_keys(table["sha"])
        self.order = np.argsort(keys, kind="stable")
        self.sorted = keys[self.order]
        accounts = pc.dictionary_encode(table["account"]).combine_chunks()
        self.account_codes = pc.fill_null(accounts.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        self.account_names = accounts.dictionary.to_pylist() + [None]  # code -1: no account
        self.descriptions = descriptions  # aligned with the table's rows

    def lookup(self, shas: Sequence[Any]) -> np.ndarray:
        """Row of each sha, -1 where the site has no such commit (the last row of a duplicated sha)."""
        return find(self.sorted, self.order, np.array([_key(s, b"\xff" * 40) for s in shas], dtype="S40"))

    def row(self, sha: str) -> int | None:
        found = int(self.lookup([sha])[0])
        return None if found < 0 else found

    def chunk(self, start: int, stop: int, names: Sequence[str]) -> dict[str, list]:
        """Python lists of `names` for rows start..stop ("description" from the index's own column)."""
        part = self.table.slice(start, stop - start)
        out = {name: part[name].to_pylist() for name in names if name != "description"}
        if "description" in names:
            out["description"] = (
                [None] * (stop - start)
                if self.descriptions is None
                else self.descriptions.slice(start, stop - start).to_pylist()
            )
        return out

    def pick(self, name: str, rows: Any) -> list:
        """Python values of one column for some rows (any order)."""
        return take(self.table[name], np.asarray(rows, dtype=np.int64)).to_pylist()

    def account(self, row: int) -> str | None:
        return self.account_names[int(self.account_codes[row])]

    def accounts(self, rows: np.ndarray) -> list[str | None]:
        names = self.account_names
        return [names[c] for c in self.account_codes[np.asarray(rows, dtype=np.int64)].tolist()]

    def refs(self, rows: np.ndarray) -> dict[int, tuple[str, str | None, str | None]]:
        """(sha, title, account) of each row, for links."""
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        rows = rows[rows >= 0]
        found = zip(self.pick("sha", rows), self.pick("title", rows), self.accounts(rows), strict=True)
        return dict(zip(rows.tolist(), found, strict=True))


def take(column: pa.ChunkedArray | pa.Array, rows: np.ndarray) -> pa.Array:
    """`column[rows]` taken chunk by chunk: a take from a column of many chunks (one per index
    segment) would first concatenate the whole column, on every call."""
    if isinstance(column, pa.Array):
        return column.take(pa.array(rows, pa.int64()))
    if not len(rows):
        return pa.array([], column.type)
    sizes = np.fromiter((len(chunk) for chunk in column.chunks), dtype=np.int64, count=column.num_chunks)
    starts = np.concatenate(([0], np.cumsum(sizes)))
    which = np.searchsorted(starts, rows, side="right") - 1
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(column.num_chunks + 1))
    parts = []
    for k in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
        chosen = rows[order[bounds[k] : bounds[k + 1]]] - starts[k]
        parts.append(column.chunk(k).take(pa.array(chosen, pa.int64())))
    taken = pa.concat_arrays(parts)
    back = np.empty(len(rows), dtype=np.int64)
    back[order] = np.arange(len(rows))
    return taken.take(pa.array(back, pa.int64()))


def csr(source: np.ndarray, target: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and values: the targets of source u are values[ptr[u]:ptr[u+1]], in input order."""
    source = np.asarray(source, dtype=np.int64)
    order = np.argsort(source, kind="stable")
    ptr = np.zeros(n + 1, np.int64)
    if len(source):
        np.cumsum(np.bincount(source, minlength=n), out=ptr[1:])
    return ptr, np.asarray(target, dtype=np.int64)[order]
