"""Small hand-made tables for the frontier view/cluster/UCB tests (rows come from conftest's helpers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
from frontier_tables import sha

from git_agora.frontier.embeddings import embeddings_table

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
    return embeddings_table({sha(name): list(v) for name, v in vectors.items()}, model)
