"""What one run embeds, in which order, and when it stops: pure policy over the index table, no I/O.

- ``first``: the missing vectors the frontier reads (`frontier.needs`: the clustering window and the
  exploit slot's shortlist). Embedded whatever the budget: without them analyze is wrong, not slow.
- ``later``: every other valid contribution without a vector, newest first. A run embeds them only
  while its `EmbedBudget` lasts (5 seconds by default; ``AGORA_EMBED_BUDGET`` sets the seconds, ``0``
  for none, ``inf`` for no limit), so repeated runs complete the cache a slice at a time and none
  spends minutes unasked. `git agora index --embed` plans everything as ``first``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_SECONDS = 5.0
BUDGET_VARIABLE = "AGORA_EMBED_BUDGET"


@dataclass(frozen=True)
class EmbedBudget:
    """How much a run may embed beyond what the frontier needs: ``seconds`` of encoding (checked
    between batches, so a run may overshoot by one batch) and at most ``rows`` rows (None: any)."""

    seconds: float = DEFAULT_SECONDS
    rows: int | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> EmbedBudget:
        """The default, or the seconds ``AGORA_EMBED_BUDGET`` gives; ValueError when it is not a number >= 0."""
        raw = (environ.get(BUDGET_VARIABLE) or "").strip()
        if not raw:
            return cls()
        try:
            seconds = float(raw)
        except ValueError:
            seconds = -1.0
        if not seconds >= 0:  # also NaN
            raise ValueError(f"{BUDGET_VARIABLE}={raw!r}: give seconds (0: none beyond what analyze needs, inf: all)")
        return cls(seconds=seconds)

    @property
    def unlimited(self) -> bool:
        return math.isinf(self.seconds) and self.rows is None

    @property
    def none(self) -> bool:
        return self.seconds <= 0 or self.rows == 0

    def allows(self, rows: int, seconds: float) -> bool:
        """May a run that embedded ``rows`` beyond the needed ones in ``seconds`` start another batch?"""
        return seconds < self.seconds and (self.rows is None or rows < self.rows)

    def describe(self) -> str:
        if self.rows is not None:
            return f"{self.rows:,} rows"
        return "no limit" if math.isinf(self.seconds) else f"{self.seconds:g} s"


@dataclass(frozen=True)
class EmbedPlan:
    """The valid contributions lacking a vector of one model: ``first`` (needed now) and ``later``
    (newest first). ``total``: valid contributions; ``cached``: of them, those with a vector."""

    first: tuple[str, ...]
    later: tuple[str, ...]
    total: int
    cached: int

    @property
    def missing(self) -> int:
        return len(self.first) + len(self.later)


def plan_embedding(
    contributions: pa.Table,
    cached: pa.Array | pa.ChunkedArray | Sequence[str],
    needed: pa.Array | pa.ChunkedArray | Sequence[str] = (),
    everything: bool = False,
    later: bool = True,
) -> EmbedPlan:
    """Split the valid rows of ``contributions`` (sha, valid, timestamp; log_seq when present) that
    ``cached`` (shas with a vector) lacks into the ``needed`` ones and the rest, newest first.
    ``everything``: all of them are ``first``. ``later=False``: a run that embeds only what it needs
    leaves ``later`` empty, and only the needed rows are sorted (a pass over the shas counts the cached
    ones: no list of every missing row is made)."""
    keys = [c for c in ("sha", "timestamp", "log_seq") if c in contributions.column_names]
    if not later and not everything:
        return _first_only(contributions, keys, _strings(cached), _strings(needed))
    valid = contributions.select(keys).filter(pc.fill_null(contributions["valid"], False))
    have = pc.is_in(valid["sha"], value_set=_strings(cached)).to_numpy(zero_copy_only=False)
    missing = valid.filter(pa.array(~np.asarray(have, dtype=bool)))
    order = _newest_first(missing)
    shas = missing["sha"].take(pa.array(order, pa.int64()))
    total, cached_count = valid.num_rows, int(np.count_nonzero(have))
    if everything:
        return EmbedPlan(tuple(shas.to_pylist()), (), total, cached_count)
    now = np.asarray(pc.is_in(shas, value_set=_strings(needed)).to_numpy(zero_copy_only=False), dtype=bool)
    first = shas.filter(pa.array(now)).to_pylist()
    rest = shas.filter(pa.array(~now)).to_pylist()
    return EmbedPlan(tuple(first), tuple(rest), total, cached_count)


def _first_only(contributions: pa.Table, keys: list[str], cached: pa.Array, needed: pa.Array) -> EmbedPlan:
    valid = np.asarray(pc.fill_null(contributions["valid"], False).to_numpy(zero_copy_only=False), dtype=bool)
    have = np.asarray(pc.is_in(contributions["sha"], value_set=cached).to_numpy(zero_copy_only=False), dtype=bool)
    wanted = np.asarray(pc.is_in(contributions["sha"], value_set=needed).to_numpy(zero_copy_only=False), dtype=bool)
    rows = contributions.select(keys).filter(pa.array(valid & ~have & wanted))
    first = rows["sha"].take(pa.array(_newest_first(rows), pa.int64())).to_pylist()
    return EmbedPlan(tuple(first), (), int(valid.sum()), int((valid & have).sum()))


def _newest_first(table: pa.Table) -> np.ndarray:
    keys = [np.asarray(pc.fill_null(table["timestamp"], 0).to_numpy(zero_copy_only=False))]
    if "log_seq" in table.column_names:
        keys.insert(0, np.asarray(pc.fill_null(table["log_seq"], 0).to_numpy(zero_copy_only=False)))
    return np.lexsort(keys)[::-1] if table.num_rows else np.zeros(0, np.int64)


def _strings(values: pa.Array | pa.ChunkedArray | Sequence[str]) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks else pa.array([], pa.string())
    if isinstance(values, pa.Array):
        return values
    return pa.array(list(values), pa.string())
