"""Prediction calibration: how well each account's predicted bands match what its results measured.

- A *prediction* is the band ``[low, high]`` a contribution's metadata carries (``bands``: what a
  band is, read and parsed; ``git agora push --predict LOW..HIGH`` writes it).
- Over an account's scored results (``scored.scored_mask``) with a prediction: *inside* when the
  measured value lies in the band (within the reproduction tolerance of an end counts as inside);
  the *error* is the measured value minus the band's midpoint (metric units, so its sign reads with
  the direction: with lower-is-better, a positive error is worse than predicted).
- A miss is *short* when the result is worse than the band's worse end and *beat* when it is better
  than its better end. A band meant as a central interval misses on both sides alike, so an account
  is *over-optimistic* when it falls short more often than it beats the band and a one-sided sign test
  on its misses gives p <= alpha (with alpha 0.05 and no beats, five shorts are the fewest that flag).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .bands import Band, band_of
from .frame import Frame

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


def calibrate(
    account: str | None,
    measured: np.ndarray,
    bands: Sequence[Band | None],
    direction: str,
    tolerance: float = 0.0,
    alpha: float = ALPHA,
) -> Calibration:
    """The calibration of results ``measured`` with their ``bands`` (None: no prediction)."""
    has = np.array([b is not None for b in bands], dtype=bool)
    values = np.asarray(measured, dtype=np.float64)[has]
    low = np.array([b[0] for b in bands if b is not None], dtype=np.float64)
    high = np.array([b[1] for b in bands if b is not None], dtype=np.float64)
    above, below = values > high + tolerance, values < low - tolerance
    short, beat = (above, below) if direction == "min" else (below, above)
    n, n_short, n_beat = len(values), int(short.sum()), int(beat.sum())
    p = sign_test(n_short, n_short + n_beat) if n else None
    return Calibration(
        account=account,
        results=len(bands),
        predicted=n,
        inside=n - int(above.sum()) - int(below.sum()),
        short=n_short,
        beat=n_beat,
        inside_share=(n - int(above.sum()) - int(below.sum())) / n if n else None,
        mean_error=float(np.mean(values - (low + high) / 2)) if n else None,
        p_value=p,
        over_optimistic=p is not None and n_short > n_beat and p <= alpha,
    )


def sign_test(successes: int, trials: int) -> float:
    """One-sided: P(X >= successes) for X ~ Binomial(trials, 1/2); 1.0 without trials."""
    if trials == 0:
        return 1.0
    return sum(math.comb(trials, k) for k in range(successes, trials + 1)) / 2**trials


@dataclass(frozen=True)
class FrameCalibration:
    """Per account with a scored result (most predictions first), and everyone together."""

    accounts: tuple[Calibration, ...]
    overall: Calibration

    @property
    def over_optimistic(self) -> tuple[str, ...]:
        return tuple(c.account for c in self.accounts if c.over_optimistic and c.account is not None)


def frame_calibration(frame: Frame, alpha: float = ALPHA) -> FrameCalibration:
    """The calibration of every scored result of ``frame``, per account and together."""
    nodes = np.flatnonzero(frame.scored)
    bands = _bands(frame.table["metadata"].take(pa.array(nodes, pa.int64())))
    accounts = np.asarray(frame.table["account"].take(pa.array(nodes, pa.int64())).to_pylist(), dtype=object)
    measured = frame.metric[nodes]

    def part(who: str | None, mask: np.ndarray) -> Calibration:
        chosen = [b for b, keep in zip(bands, mask) if keep]
        return calibrate(who, measured[mask], chosen, frame.direction, frame.tolerance, alpha)

    per = [part(str(a), accounts == a) for a in sorted(set(accounts.tolist()))]
    per.sort(key=lambda c: (-c.predicted, -c.results, c.account))
    return FrameCalibration(tuple(per), part(None, np.ones(len(nodes), dtype=bool)))


def _bands(metadata: pa.ChunkedArray | pa.Array) -> list[Band | None]:
    """The band of each metadata text; only texts that mention a prediction key are parsed."""
    if len(metadata) == 0:
        return []
    mentions = np.asarray(
        pc.fill_null(pc.match_substring(metadata, '"predict'), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    bands: list[Band | None] = [None] * len(metadata)
    for i in np.flatnonzero(mentions).tolist():
        bands[i] = band_of(metadata[i].as_py())
    return bands
