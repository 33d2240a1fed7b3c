"""A flat picture of the description embeddings: the 2-D principal-component projection the site's
cluster map draws. Pure numpy: rows in, coordinates out.

- The rows are centred; the two directions of largest variance (the top eigenvectors of the centred
  rows' scatter matrix, far cheaper than an SVD of 5,000 rows) are the axes; each axis's sign is fixed
  so that its largest loading is positive, which makes the picture the same on every build.
- ``explained``: the share of the total variance each axis carries (0 for a constant set of rows).
- Fewer than two rows, or rows that are all equal, project to the origin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Projection:
    coordinates: np.ndarray  # (m, 2) float64
    explained: tuple[float, float]


def pca_2d(vectors: np.ndarray) -> Projection:
    """The rows of ``vectors`` (m, d) projected on their first two principal components."""
    x = np.asarray(vectors, dtype=np.float64)
    m = len(x)
    if m < 2 or x.ndim != 2 or x.shape[1] == 0:
        return Projection(np.zeros((m, 2)), (0.0, 0.0))
    centred = x - x.mean(axis=0)
    scatter = centred.T @ centred  # (d, d): an eigendecomposition of it is far cheaper than an SVD of the rows
    total = float(np.trace(scatter))
    if total <= 0:
        return Projection(np.zeros((m, 2)), (0.0, 0.0))
    values, vectors = np.linalg.eigh(scatter)
    top = np.argsort(values)[::-1][:2]
    axes = np.zeros((2, x.shape[1]))
    axes[: len(top)] = vectors[:, top].T
    signs = np.sign(axes[np.arange(2), np.abs(axes).argmax(axis=1)])
    axes = axes * np.where(signs == 0, 1.0, signs)[:, None]
    variance = np.zeros(2)
    variance[: len(top)] = np.clip(values[top], 0, None) / total
    return Projection(centred @ axes.T, (float(variance[0]), float(variance[1])))
