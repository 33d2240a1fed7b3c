"""A flat picture of the description embeddings: the 2-D principal-component projection the site's
cluster map draws. Pure numpy: rows in, coordinates out.

- The rows are centred; the two directions of largest variance (an SVD of the centred rows) are the
  axes; each axis's sign is fixed so that its largest loading is positive, which makes the picture
  the same on every build of the same vectors.
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
    _, singular, axes = np.linalg.svd(centred, full_matrices=False)
    total = float((singular**2).sum())
    if total <= 0:
        return Projection(np.zeros((m, 2)), (0.0, 0.0))
    axes = axes[:2]
    if len(axes) < 2:
        axes = np.vstack([axes, np.zeros((2 - len(axes), x.shape[1]))])
    signs = np.sign(axes[np.arange(2), np.abs(axes).argmax(axis=1)])
    axes = axes * np.where(signs == 0, 1.0, signs)[:, None]
    variance = np.r_[singular[:2] ** 2, np.zeros(2)][:2] / total
    return Projection(centred @ axes.T, (float(variance[0]), float(variance[1])))
