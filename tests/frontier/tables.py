"""Small hand-made tables for the frontier view/cluster/UCB tests (rows come from conftest's helpers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
from frontier_tables import sha

from git_agora.frontier.calibration import ALPHA, Calibration, grouped
from git_agora.frontier.embeddings import rows_table

MODEL = "test-vectors"


def direction_vector(cluster: int, member: int = 0, dim: int = 16, spread: float = 0.05) -> list[float]:
    """A unit vector near axis ``cluster``: members of one cluster have cosine > 0.99 with each other,
    vectors of different clusters are orthogonal enough (cosine ~ 0)."""
    v = np.zeros(dim)
    v[cluster % dim] = 1.0
    v[(cluster + 1 + member) % dim] += spread * (1 + member % 3)
    return list(v / np.linalg.norm(v))


def vectors_table(vectors: Mapping[str, Sequence[float]], model: str = MODEL) -> pa.Table:
    """An EMBEDDINGS table keyed by the shas of row names."""
    return rows_table([sha(name) for name in vectors], model, np.asarray(list(vectors.values()), np.float32))


def calibrate(account, measured, bands, direction: str, tolerance: float = 0.0, alpha: float = ALPHA) -> Calibration:
    """One group's calibration of results ``measured`` with their ``bands`` (None: no prediction), through
    the path the view takes (`calibration.grouped`, `Grouped.calibration`)."""
    ends = np.array([b if b is not None else (np.nan, np.nan) for b in bands], np.float64).reshape(-1, 2)
    measured = np.asarray(measured, np.float64)
    one = grouped(np.zeros(len(ends), np.int64), 1, measured, ends[:, 0], ends[:, 1], direction, tolerance)
    return one.calibration(0, account, alpha)
