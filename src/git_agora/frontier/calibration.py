"""Prediction calibration: how well each account's predicted bands match what its results measured.

- A *prediction* is the band ``[low, high]`` a contribution's metadata carries (``bands``: what a
  band is, read and parsed; ``git agora push --predict LOW..HIGH`` writes it).
- Over an account's scored results (``scored.scored_mask``) with a prediction: *inside* when the
  measured value lies in the band (within the reproduction tolerance of an end counts as inside);
  the *error* is the measured value minus the band's midpoint (metric units, so its sign reads with
  the direction: with lower-is-better, a positive error is worse than predicted). The mean error
  is computed without overflow for any finite floats, and is null when it lies beyond their range.
- A miss is *short* when the result is worse than the band's worse end and *beat* when it is better
  than its better end. A band meant as a central interval misses on both sides alike, so an account
  is *over-optimistic* when it falls short more often than it beats the band and a one-sided sign test
  on its misses gives p <= alpha (with alpha 0.05 and no beats, five shorts are the fewest that flag).
"""

from __future__ import annotations

import io
import math
import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from .bands import KEYS, Band, band_of
from .frame import Frame
from .graph import take_rows

ALPHA = 0.05


@dataclass(frozen=True)
class Calibration:
    """One account's (or, with account None, everyone's) calibration; see the module docstring."""

    account: str | None
    results: int  # scored results
    predicted: int  # of them, with a prediction
    inside: int
    short: int  # worse than the band's worse end
    beat: int  # better than the band's better end
    inside_share: float | None
    mean_error: float | None  # measured - band midpoint, metric units
    p_value: float | None  # one-sided sign test: P(at least `short` of the misses are short)
    over_optimistic: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Grouped:
    """Per group: counts and the sum of errors (``grouped``)."""

    results: np.ndarray
    predicted: np.ndarray
    inside: np.ndarray
    short: np.ndarray
    beat: np.ndarray
    error_mean: np.ndarray  # nan where nothing was predicted or the mean is beyond the float range

    def calibration(self, group: int, account: str | None, alpha: float = ALPHA) -> Calibration:
        n, short, beat = int(self.predicted[group]), int(self.short[group]), int(self.beat[group])
        p = sign_test(short, short + beat) if n else None
        return Calibration(
            account=account,
            results=int(self.results[group]),
            predicted=n,
            inside=int(self.inside[group]),
            short=short,
            beat=beat,
            inside_share=int(self.inside[group]) / n if n else None,
            mean_error=float(self.error_mean[group]) if n and math.isfinite(self.error_mean[group]) else None,
            p_value=p,
            over_optimistic=p is not None and short > beat and p <= alpha,
        )


def grouped(
    group: np.ndarray,
    groups: int,
    measured: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    direction: str,
    tolerance: float = 0.0,
) -> Grouped:
    """Counts per group (``group``: each result's group in [0, groups)); ``low``/``high`` are nan where
    a result carries no prediction."""
    has = ~np.isnan(low)
    above = has & (measured > np.where(has, high, 0) + tolerance)
    below = has & (measured < np.where(has, low, 0) - tolerance)
    short, beat = (above, below) if direction == "min" else (below, above)
    predicted = np.bincount(group[has], minlength=groups)
    # measured - midpoint, averaged in halves over each group: finite for any finite floats (a whole
    # error may overflow: -1.7e308 measured against a band at 1.7e308)
    half_error = np.where(has, measured / 2 - np.where(has, low, 0) / 4 - np.where(has, high, 0) / 4, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        error_mean = 2 * np.bincount(group, weights=half_error / np.maximum(predicted[group], 1), minlength=groups)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(group[mask], minlength=groups)

    return Grouped(
        results=np.bincount(group, minlength=groups),
        predicted=predicted,
        inside=count(has & ~above & ~below),
        short=count(short),
        beat=count(beat),
        error_mean=np.where(predicted > 0, error_mean, np.nan),
    )


def sign_test(successes: int, trials: int) -> float:
    """One-sided: P(X >= successes) for X ~ Binomial(trials, 1/2); 1.0 without trials. Exact up to
    1,000 trials, then the normal approximation (with continuity correction)."""
    if trials == 0:
        return 1.0
    if trials > 1000:
        z = (successes - 0.5 - trials / 2) / math.sqrt(trials / 4)
        return 0.5 * math.erfc(z / math.sqrt(2))
    return sum(math.comb(trials, k) for k in range(successes, trials + 1)) / 2**trials


@dataclass(frozen=True)
class FrameCalibration:
    """Per account with a scored result (most predictions first), and everyone together."""

    accounts: tuple[Calibration, ...]
    overall: Calibration

    @property
    def over_optimistic(self) -> tuple[str, ...]:
        return tuple(c.account for c in self.accounts if c.over_optimistic and c.account is not None)


_CALIBRATED: weakref.WeakKeyDictionary[Frame, dict[float, FrameCalibration]] = weakref.WeakKeyDictionary()


def frame_calibration(frame: Frame, alpha: float = ALPHA) -> FrameCalibration:
    """The calibration of every scored result of ``frame``, per account and together (computed once
    per frame and ``alpha``: the summary and the calibration view read the same)."""
    known = _CALIBRATED.setdefault(frame, {})
    if alpha not in known:
        known[alpha] = _frame_calibration(frame, alpha)
    return known[alpha]


def _frame_calibration(frame: Frame, alpha: float) -> FrameCalibration:
    scored = np.flatnonzero(frame.scored)
    metadata = frame.table["metadata"]
    mentions = np.asarray(pc.fill_null(pc.match_substring(metadata, '"predict'), False).to_numpy(zero_copy_only=False))
    low, high = np.full(len(scored), np.nan), np.full(len(scored), np.nan)
    predicted = np.flatnonzero(mentions[scored])  # only these texts are read (`band_ends` reads no other)
    if len(predicted):
        low[predicted], high[predicted] = band_ends(take_rows(metadata, scored[predicted]))
    measured = frame.metric[scored]
    code, names = frame.graph.account[scored], frame.graph.account_names
    per = grouped(code, len(names), measured, low, high, frame.direction, frame.tolerance)
    calibrations = [per.calibration(k, names[k], alpha) for k in np.flatnonzero(per.results).tolist()]
    calibrations.sort(key=lambda c: (-c.predicted, -c.results, c.account or ""))
    together = grouped(np.zeros(len(code), np.int64), 1, measured, low, high, frame.direction, frame.tolerance)
    return FrameCalibration(tuple(calibrations), together.calibration(0, None, alpha))


def _ends(bands: Sequence[Band | None]) -> tuple[np.ndarray, np.ndarray]:
    ends = np.array([b if b is not None else (np.nan, np.nan) for b in bands], dtype=np.float64).reshape(-1, 2)
    return ends[:, 0], ends[:, 1]


def band_ends(metadata: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Low and high ends of the band each metadata text carries (``band_of``), nan where none. Only
    texts that mention a prediction key are parsed: all at once by Arrow's JSON reader when their
    predictions have one shape, else one by one."""
    low, high = np.full(len(metadata), np.nan), np.full(len(metadata), np.nan)
    if len(metadata) == 0:
        return low, high
    mentions = pc.fill_null(pc.match_substring(metadata, '"predict'), False)
    where = np.flatnonzero(np.asarray(mentions.to_numpy(zero_copy_only=False), dtype=bool))
    texts = metadata.filter(mentions).to_pylist()
    read = _read_all(texts)
    low[where], high[where] = read if read is not None else _ends([band_of(text) for text in texts])
    return low, high


def _read_all(texts: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """``band_of`` of every text, as ends, through one Arrow JSON read; None when a text does not fit."""

    if not texts or any("\n" in text for text in texts):
        return None
    listed = pa.list_(pa.float64())
    options = pj.ParseOptions(
        explicit_schema=pa.schema([(key, listed) for key in KEYS]), unexpected_field_behavior="ignore"
    )
    try:
        table = pj.read_json(io.BytesIO("\n".join(texts).encode()), pj.ReadOptions(use_threads=False), options)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_rows != len(texts):
        return None
    first = table[KEYS[0]]
    chosen = pc.if_else(pc.is_valid(first), first, table[KEYS[1]]).combine_chunks()
    pairs = np.asarray(pc.fill_null(pc.equal(pc.list_value_length(chosen), 2), False), dtype=bool)
    low, high = np.full(len(texts), np.nan), np.full(len(texts), np.nan)
    two = chosen.filter(pa.array(pairs))
    ends = [np.asarray(pc.fill_null(pc.list_element(two, i), np.nan), dtype=np.float64) for i in (0, 1)]
    good = np.isfinite(ends[0]) & np.isfinite(ends[1]) & (ends[0] <= ends[1])
    rows = np.flatnonzero(pairs)[good]
    low[rows], high[rows] = ends[0][good], ends[1][good]
    return low, high
