"""Clusters of similar work and how diverse the recent frontier is.

Rules:

- *Clusterable* nodes: valid contributions that are not endorsements or verifications (their texts
  say "confirmed X" and would form one big cluster of their own).
- Clusters are computed only when embeddings (of one model) cover at least ``min_coverage`` (50%) of
  the ``window`` (5,000) most recent clusterable nodes (``recent_clusterable``; older work is never
  clustered, so its vectors do not count); otherwise ``Diversity.available`` is false and says why.
- The *window*: the ``window`` most recent clusterable nodes that have a vector (with every recent
  node embedded, as analyze makes sure, exactly ``recent_clusterable``).
- Single-link clustering: connected components of the graph joining two window nodes whose cosine
  similarity is >= ``threshold`` (0.90). A node's near-duplicates ``rho`` are its neighbours in that
  graph (for nodes outside the window: window nodes at that similarity).
- Diversity over the window, with shares p_i = size_i / window: top-cluster share max p_i,
  entropy H = -sum p_i ln p_i, effective cluster count exp(H), evenness H / ln(count) (null for a
  single cluster).
- A cluster's label is the title of its most central member (highest cosine to the cluster mean).
- Warning: when the largest cluster holds more than ``warn_share`` (a third) of the window and at
  least ``warn_min_size`` nodes; it names the cluster and lists other clusters' best nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .frame import Frame
from .graph import pointer_roots, take_rows

VectorSource = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
Linker = Callable[[str | None, pa.Array, np.ndarray, float, int], tuple[np.ndarray, np.ndarray]]  # as `linked`


@dataclass(frozen=True)
class ClusterParams:
    """Clustering constants; see the module docstring."""

    threshold: float = 0.90
    window: int = 5000
    min_coverage: float = 0.5
    warn_share: float = 1 / 3
    warn_min_size: int = 3
    small_cluster: int = 3  # "thin" clusters: at most this many nodes
    promising_q: float = 0.5  # promising nodes in small clusters: inherited quality at least this
    histogram_bins: int = 10
    block: int = 1024


# --------------------------------------------------------------------------- linear algebra


def single_link(vectors: np.ndarray, threshold: float = 0.90, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Connected components of the graph "cosine >= threshold" over unit-length rows.

    Returns ``(labels, degree)``: labels numbered 0..k-1 by decreasing size (ties: earliest row
    first), and each row's number of neighbours. Blockwise: only the upper triangle is computed,
    ``block`` rows at a time, and edges are merged into a union-find forest block by block.
    """
    m = len(vectors)
    parent = np.arange(m, dtype=np.int64)
    degree = np.zeros(m, dtype=np.int64)
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    for start in range(0, m, block):
        stop = min(start + block, m)
        near = (x[start:stop] @ x[start:].T) >= threshold
        near[:, : stop - start] &= np.triu(np.ones((stop - start, stop - start), dtype=bool), k=1)
        degree[start:stop] += near.sum(axis=1)
        degree[start:] += near.sum(axis=0)
        parent = pointer_roots(parent)
        near &= parent[start:stop, None] != parent[None, start:]  # pairs already joined need no edge
        rows, cols = np.nonzero(near)
        parent = _union(parent, rows + start, cols + start)
    return _relabel(pointer_roots(parent)), degree


def near_duplicates(queries: np.ndarray, vectors: np.ndarray, threshold: float = 0.90) -> np.ndarray:
    """For each query row: how many rows of ``vectors`` have cosine >= threshold with it."""
    if len(queries) == 0 or len(vectors) == 0:
        return np.zeros(len(queries), dtype=np.int64)
    return ((queries @ vectors.T) >= threshold).sum(axis=1).astype(np.int64)


def _union(parent: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Merge the sets of each pair (a[i], b[i]); roots always point to smaller indices (no cycles)."""
    parent = pointer_roots(parent)
    while len(a):
        ra, rb = parent[a], parent[b]
        apart = ra != rb
        a, b, ra, rb = a[apart], b[apart], ra[apart], rb[apart]
        if not len(a):
            break
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
        parent = pointer_roots(parent)
    return parent


def _relabel(roots: np.ndarray) -> np.ndarray:
    if len(roots) == 0:
        return roots
    uniq, first, inverse, counts = np.unique(roots, return_index=True, return_inverse=True, return_counts=True)
    order = np.lexsort((first, -counts))
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return rank[inverse.ravel()]


def central_members(vectors: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Per cluster: the row index of the member closest to the cluster's mean vector."""
    mean = np.zeros((k, vectors.shape[1]), dtype=np.float64)
    if len(labels):  # each cluster's rows summed in row order, as np.add.at sums them (bit for bit), 5x faster
        by_label = np.argsort(labels, kind="stable")
        grouped = labels[by_label]
        starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        mean[grouped[starts]] = np.add.reduceat(vectors[by_label].astype(np.float64), starts, axis=0)
    closeness = np.einsum("ij,ij->i", vectors, mean[labels])
    order = np.lexsort((-closeness, labels))
    first = np.flatnonzero(np.r_[True, labels[order][1:] != labels[order][:-1]])
    return order[first]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Cluster:
    """One cluster of the window: id (0 = largest), size, share of the window, label (central member's
    title), central_sha, and its best scored member (best_sha, best_metric; null without metric)."""

    id: int
    size: int
    share: float
    label: str
    central_sha: str
    best_sha: str | None
    best_metric: float | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ConvergenceWarning:
    """One cluster holds more than a third of recent work. ``alternatives``: other clusters' best
    nodes (rows with sha, title, account, metric, cluster, cluster_size, quality)."""

    cluster: int
    label: str
    size: int
    share: float
    window: int
    message: str
    alternatives: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "alternatives": list(self.alternatives)}


@dataclass(frozen=True)
class Histogram:
    """Counts of scored results per metric bin: ``edges`` has one more entry than ``counts``;
    ``below`` and ``above``: the outliers left out of the bins (``metric_histogram``)."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    below: int = 0
    above: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"edges": list(self.edges), "counts": list(self.counts), "below": self.below, "above": self.above}


@dataclass(frozen=True, eq=False)
class Clustering:
    """Node-level clustering, for UCB: window nodes (frame node ids), their labels and degrees."""

    nodes: np.ndarray
    labels: np.ndarray
    sizes: np.ndarray  # per cluster id
    degree: np.ndarray
    vectors: np.ndarray  # window rows, unit length
    threshold: float
    source: VectorSource  # vectors for any frame nodes: (matrix, present)

    def cluster_of(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Per frame node: cluster id and cluster size (-1 and 0 outside the window)."""
        cluster = np.full(n, -1, dtype=np.int64)
        cluster[self.nodes] = self.labels
        size = np.zeros(n, dtype=np.int64)
        size[self.nodes] = self.sizes[self.labels]
        return cluster, size

    def duplicates(self, nodes: np.ndarray, n: int) -> np.ndarray:
        """Near-duplicate count rho for ``nodes``; -1 where a node has no vector."""
        nodes = np.asarray(nodes, dtype=np.int64)
        position = np.full(n, -1, dtype=np.int64)
        position[self.nodes] = np.arange(len(self.nodes))
        rho = np.full(len(nodes), -1, dtype=np.int64)
        inside = position[nodes] >= 0
        rho[inside] = self.degree[position[nodes[inside]]]
        outside = np.flatnonzero(~inside)
        if len(outside):
            matrix, present = self.source(nodes[outside])
            if present.any():
                rho[outside[present]] = near_duplicates(matrix[present], self.vectors, self.threshold)
        return rho


@dataclass(frozen=True, eq=False)
class Diversity:
    """How spread the recent work is. When ``available`` is false only ``note``, ``coverage`` and
    ``histogram`` are meaningful. ``coverage``: the share of the ``window`` most recent clusterable
    nodes that have a vector. ``sizes``: every cluster size, largest first (cut to 50)."""

    available: bool
    note: str | None
    model: str | None
    coverage: float
    window: int
    threshold: float
    count: int
    sizes: tuple[int, ...]
    top_share: float | None
    effective_count: float | None
    evenness: float | None
    clusters: tuple[Cluster, ...]
    histogram: Histogram | None
    promising_small: tuple[dict[str, Any], ...]
    warning: ConvergenceWarning | None
    clustering: Clustering | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {name: value for name, value in self.__dict__.items() if name != "clustering"}  # fields in order
        return data | {
            "sizes": list(self.sizes),
            "clusters": [c.to_dict() for c in self.clusters],
            "histogram": None if self.histogram is None else self.histogram.to_dict(),
            "promising_small": list(self.promising_small),
            "warning": None if self.warning is None else self.warning.to_dict(),
        }


# --------------------------------------------------------------------------- diversity


def clusterable(frame: Frame) -> np.ndarray:
    """Nodes whose descriptions describe work of their own (``Kind.work``: not endorsements, verifications
    or witness records)."""
    return frame.own_work


def recent_clusterable(frame: Frame, window: int) -> np.ndarray:
    """The ``window`` most recent clusterable nodes, newest first: the nodes clustering reads vectors of."""
    return frame.newest_first(np.flatnonzero(clusterable(frame)), window)


def metric_histogram(frame: Frame, bins: int = 10) -> Histogram | None:
    """Histogram of the scored values (null when nothing is scored), robust to any float.

    The bins span the values inside Tukey's outer fences, [Q1 - 3 IQR, Q3 + 3 IQR] (quartiles taken
    as values of the data, never interpolated); the values outside are counted apart as ``below`` and
    ``above``, so one result at -1.7e308 neither hides the others in one bin nor breaks the bins. The
    ``bins`` equal bins run from the smallest to the largest value inside (edges interpolated without
    overflow; edges that round to the same float merge); all values equal: one bin of zero width.
    ``sum(counts) + below + above`` is the number of scored results."""
    values = frame.metric[frame.scored]
    values = values[~np.isnan(values)]  # unsorted: the quartiles are selections, the bins need no order
    if len(values) == 0:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        q1 = float(np.percentile(values, 25, method="lower"))
        q3 = float(np.percentile(values, 75, method="higher"))
        iqr = q3 - q1  # inf when it overflows: then no value is an outlier
        low, high = q1 - 3 * iqr, q3 + 3 * iqr
    inside = values[(values >= low) & (values <= high) & np.isfinite(values)]
    below, above = int((values < low).sum()), int((values > high).sum())
    if len(inside) == 0:  # only infinities (a scored value never is one): nothing to bin
        return Histogram((), (), below, above)
    edges = bin_edges(float(inside.min()), float(inside.max()), bins)
    positions = np.searchsorted(edges, inside, side="right") - 1
    counts = np.bincount(np.minimum(positions, len(edges) - 2), minlength=len(edges) - 1)
    return Histogram(tuple(float(e) for e in edges), tuple(int(c) for c in counts), below, above)


def bin_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """``bins`` equal bins from ``lo`` to ``hi`` (finite): ``lo (1 - t) + hi t``, which never
    overflows (``hi - lo`` may); edges that round to one float merge; ``lo == hi``: one bin."""
    if lo == hi:
        return np.array([lo, hi])
    t = np.linspace(0.0, 1.0, bins + 1)
    edges = np.unique(lo * (1 - t) + hi * t)
    edges[0], edges[-1] = lo, hi
    return edges


def linked(
    model: str | None, shas: pa.Array, vectors: np.ndarray, threshold: float, block: int
) -> tuple[np.ndarray, np.ndarray]:
    """`single_link` of the rows of ``vectors`` (``model``'s vectors of the contributions ``shas``): a
    `Linker`."""
    return single_link(vectors, threshold, block)


def diversity(
    frame: Frame,
    has_vector: np.ndarray,
    source: VectorSource,
    params: ClusterParams = ClusterParams(),
    model: str | None = None,
    limit: int = 10,
    link: Linker = linked,
) -> Diversity:
    """Cluster the window and summarise it (module docstring). ``has_vector``: per frame node;
    ``source(nodes)`` returns their unit vectors and presence, as ``VectorIndex.vectors`` does.
    ``link(model, shas, vectors, threshold, block)``: `single_link`'s answer for the window (`linked`;
    a caller may keep answers, as `ops.link_cache` does)."""
    pool = clusterable(frame)
    recent = recent_clusterable(frame, params.window)
    total = len(recent)
    coverage = int(has_vector[recent].sum()) / total if total else 0.0
    histogram = metric_histogram(frame, params.histogram_bins)
    if total == 0 or coverage < params.min_coverage:
        why = (
            "no contributions to cluster yet"
            if total == 0
            else (
                f"embeddings cover {coverage:.0%} of the {total} most recent contributions "
                f"(< {params.min_coverage:.0%}): "
                "no clusters; run `git agora analyze` with embeddings enabled to compute them"
            )
        )
        return _unavailable(why, model, coverage, params, histogram)
    nodes = frame.newest_first(np.flatnonzero(pool & has_vector), params.window)
    vectors, _ = source(nodes)
    window = take_rows(frame.table["sha"], nodes)
    labels, degree = link(model, window, vectors, params.threshold, params.block)
    sizes = np.bincount(labels)
    clustering = Clustering(nodes, labels, sizes, degree, vectors, params.threshold, source)
    shares = sizes / len(nodes)
    entropy = float(-(shares * np.log(shares)).sum())
    clusters = _describe(frame, clustering, limit)
    warning = _warning(frame, clustering, clusters, params, limit)
    return Diversity(
        available=True,
        note=None,
        model=model,
        coverage=coverage,
        window=len(nodes),
        threshold=params.threshold,
        count=len(sizes),
        sizes=tuple(int(s) for s in sizes[:50]),
        top_share=float(shares[0]),
        effective_count=float(np.exp(entropy)),
        evenness=float(entropy / np.log(len(sizes))) if len(sizes) > 1 else None,
        clusters=clusters,
        histogram=histogram,
        promising_small=_promising_small(frame, clustering, params, limit),
        warning=warning,
        clustering=clustering,
    )


def _unavailable(
    note: str, model: str | None, coverage: float, params: ClusterParams, histogram: Histogram | None
) -> Diversity:
    return Diversity(
        False, note, model, coverage, 0, params.threshold, 0, (), None, None, None, (), histogram, (), None
    )


def _best_per_cluster(frame: Frame, clustering: Clustering, by_quality: bool) -> np.ndarray:
    """Per cluster: the node with the best metric (or, with ``by_quality``, highest inherited quality
    among parent candidates), -1 when none qualifies."""
    nodes, labels = clustering.nodes, clustering.labels
    best = np.full(len(clustering.sizes), -1, dtype=np.int64)
    if by_quality:
        keep = frame.buildable[nodes]
        key = (frame.timestamp[nodes], frame.q_inherited[nodes])
    else:
        keep = frame.scored[nodes]
        key = (frame.timestamp[nodes], -frame.loss()[nodes])
    order = np.lexsort(key)[::-1]  # best first
    order = order[keep[order]]
    chosen_labels, first = np.unique(labels[order], return_index=True)
    best[chosen_labels] = nodes[order[first]]
    return best


def _describe(frame: Frame, clustering: Clustering, limit: int) -> tuple[Cluster, ...]:
    k = min(len(clustering.sizes), max(limit, 1))
    central = clustering.nodes[central_members(clustering.vectors, clustering.labels, len(clustering.sizes))]
    best = _best_per_cluster(frame, clustering, by_quality=False)
    shas = frame.table["sha"]
    titles = frame.table["title"]
    out = []
    for c in range(k):
        b = int(best[c])
        out.append(
            Cluster(
                id=c,
                size=int(clustering.sizes[c]),
                share=float(clustering.sizes[c] / len(clustering.nodes)),
                label=titles[int(central[c])].as_py() or "",
                central_sha=shas[int(central[c])].as_py(),
                best_sha=None if b < 0 else shas[b].as_py(),
                best_metric=None if b < 0 else float(frame.metric[b]),
            )
        )
    return tuple(out)


def _node_rows(frame: Frame, nodes: np.ndarray, clustering: Clustering) -> tuple[dict[str, Any], ...]:
    cluster, size = clustering.cluster_of(frame.n)
    return frame.rows(nodes, cluster=cluster[nodes], cluster_size=size[nodes], quality=frame.q_inherited[nodes])


def _warning(
    frame: Frame, clustering: Clustering, clusters: tuple[Cluster, ...], params: ClusterParams, limit: int
) -> ConvergenceWarning | None:
    top = clusters[0]
    if top.share <= params.warn_share or top.size < params.warn_min_size:
        return None
    best = _best_per_cluster(frame, clustering, by_quality=True)[1:]
    best = best[best >= 0]
    best = best[np.lexsort((-frame.timestamp[best], -frame.q_inherited[best]))][: min(limit, 5)]
    message = (
        f"convergence: cluster {top.id} ('{top.label}') holds {top.share:.0%} of the "
        f"{len(clustering.nodes)} most recent contributions ({top.size}); "
        + (
            "consider the alternatives from other clusters"
            if len(best)
            else "there is no other cluster yet: try something different"
        )
    )
    return ConvergenceWarning(
        top.id, top.label, top.size, top.share, len(clustering.nodes), message, _node_rows(frame, best, clustering)
    )


def _promising_small(
    frame: Frame, clustering: Clustering, params: ClusterParams, limit: int
) -> tuple[dict[str, Any], ...]:
    nodes = clustering.nodes
    size = clustering.sizes[clustering.labels]
    q = frame.q_inherited[nodes]
    keep = (size <= params.small_cluster) & frame.buildable[nodes] & (q >= params.promising_q) & frame.has_metric
    chosen = nodes[keep]
    chosen = chosen[np.lexsort((-frame.timestamp[chosen], -frame.q_inherited[chosen]))][:limit]
    return _node_rows(frame, chosen, clustering)
