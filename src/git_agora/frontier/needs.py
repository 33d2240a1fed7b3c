"""Which contributions' vectors `analyze` reads: what a first analyze embeds before anything else.

Clustering reads the ``window`` most recent clusterable nodes (`clusters.recent_clusterable`); the
explore slots read only those when clusters exist; the exploit slot reads the near-duplicate count of
its best candidates, anywhere in history (`ucb.exploit_shortlist`). Nothing else reads a vector, so
with these embedded an analyze gives the same clusters and slots as with every vector cached.
"""

from __future__ import annotations

import numpy as np

from .clusters import ClusterParams, recent_clusterable
from .frame import Frame
from .ucb import UcbParams, exploit_shortlist


def vectors_needed(frame: Frame, clusters: ClusterParams, ucb: UcbParams) -> np.ndarray:
    """Frame nodes (sorted) whose vectors clustering, the diversity view and the three slots read."""
    window = recent_clusterable(frame, clusters.window)
    return np.union1d(window, exploit_shortlist(frame, ucb) if frame.has_metric else window[:0])
