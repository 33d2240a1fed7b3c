"""Single-link clusters, diversity numbers and the convergence warning, on hand-made vectors."""

from __future__ import annotations

import math

import numpy as np
from frontier_tables import node, sha, table

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.clusters import near_duplicates, single_link
from tables import direction_vector, vectors_table


def unit_angles(*degrees):
    return np.array([[math.cos(math.radians(d)), math.sin(math.radians(d))] for d in degrees], dtype=np.float32)


def test_single_link_is_transitive_and_counts_neighbours():
    # 0-20 and 20-40 are above 0.90 (cos 20deg = 0.94) but 0-40 is not (0.77): single link joins all three
    labels, degree = single_link(unit_angles(0, 20, 40, 100, 100, 200), threshold=0.90, block=2)
    assert labels[0] == labels[1] == labels[2]
    assert labels[3] == labels[4] != labels[0]
    assert len(set(labels.tolist())) == 3 and labels[0] == 0 and labels[5] == 2  # numbered by size
    assert degree.tolist() == [1, 2, 1, 1, 1, 0]


def test_single_link_block_size_does_not_matter():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 8)).astype(np.float32)
    x[100:200] = x[0] + 0.01 * rng.normal(size=(100, 8))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    a, da = single_link(x, 0.9, block=7)
    b, db = single_link(x, 0.9, block=1024)
    assert (a == b).all() and (da == db).all()
    assert (a[100:200] == a[0]).all()
    assert near_duplicates(x[:1], x, 0.9)[0] == da[0] + 1  # itself included when querying the window


def crowded_project():
    """Most recent work piles into one cluster (0); two other clusters hold a good result each."""
    rows = [node("setup", "org", tags=("setup",))]
    vectors = {"setup": direction_vector(9)}
    for i in range(8):
        rows.append(
            node(f"crowd{i}", f"u{i % 3}", "setup" if i == 0 else f"crowd{i - 1}", t=10 + i, metric=1.0 - 0.001 * i)
        )
        vectors[f"crowd{i}"] = direction_vector(0, i)
    rows.append(node("other1", "solo", "setup", t=5, metric=0.9945))
    vectors["other1"] = direction_vector(3)
    rows.append(node("other2", "solo2", "setup", t=6, metric=0.9955))
    vectors["other2"] = direction_vector(5)
    return table(rows), vectors_table(vectors)


def test_crowded_cluster_warns_and_explore_points_elsewhere():
    contributions, emb = crowded_project()
    result = analyze(contributions, emb, AnalyzeConfig(metric="loss", tolerance=1e-4))
    div = result.diversity
    assert div.available and div.count == 4 and div.sizes == (8, 1, 1, 1)
    crowd = {sha(f"crowd{i}") for i in range(8)}
    assert div.clusters[0].central_sha in crowd and div.clusters[0].label.startswith("crowd")
    assert div.top_share == 8 / 11
    shares = np.array([8, 1, 1, 1]) / 11
    entropy = -(shares * np.log(shares)).sum()
    assert math.isclose(div.effective_count, math.exp(entropy)) and math.isclose(div.evenness, entropy / math.log(4))
    warning = div.warning
    assert warning is not None and warning.cluster == 0 and warning.size == 8
    assert {a["sha"] for a in warning.alternatives} >= {sha("other1"), sha("other2")}
    assert crowd.isdisjoint(a["sha"] for a in warning.alternatives)
    assert result.summary.warning == warning.message
    assert list(result.to_dict()["summary"])[0] == "warning"
    for name in ("explore_known", "explore_novel"):
        suggestions = result.slots[name].suggestions
        assert all(s.sha not in crowd and s.cluster != 0 for s in suggestions)
    assert {s.sha for s in result.slots["explore_known"].suggestions} & {sha("other1"), sha("other2")}
    assert {p["sha"] for p in div.promising_small} >= {sha("other1"), sha("other2")}
    assert sum(div.histogram.counts) == 10


def test_no_warning_when_spread():
    rows = [node("setup", "org", tags=("setup",))] + [
        node(f"r{i}", "a", "setup", t=i, metric=float(i)) for i in range(6)
    ]
    emb = vectors_table({"setup": direction_vector(15), **{f"r{i}": direction_vector(i) for i in range(6)}})
    div = analyze(table(rows), embeddings=emb).diversity
    assert div.available and div.count == 7 and div.warning is None and math.isclose(div.evenness, 1.0)


def test_low_coverage_means_no_clusters():
    contributions, emb = crowded_project()
    few = emb.slice(0, 4)  # 4 of 11 contributions
    result = analyze(contributions, embeddings=few)
    assert not result.diversity.available and "cover" in result.diversity.note
    assert result.diversity.histogram is not None
    assert "follow-on" in result.slots["explore_known"].note
    assert "no clusters" in result.slots["explore_novel"].note


def test_window_keeps_the_most_recent():
    from dataclasses import replace

    contributions, emb = crowded_project()
    config = AnalyzeConfig()
    config = replace(config, clusters=replace(config.clusters, window=5))
    div = analyze(contributions, embeddings=emb, config=config).diversity
    assert div.window == 5 and div.sizes == (5,)  # the five newest are all in the crowd


def test_central_members_sums_each_cluster_as_add_at_does():
    """The cluster means are summed in row order, bit for bit what `np.add.at` gives, so the central
    member (a label and a site's map) does not move with the faster sum."""
    from git_agora.frontier.clusters import central_members

    def by_add_at(vectors, labels, k):
        mean = np.zeros((k, vectors.shape[1]), dtype=np.float64)
        np.add.at(mean, labels, vectors)
        closeness = np.einsum("ij,ij->i", vectors, mean[labels])
        order = np.lexsort((-closeness, labels))
        return order[np.flatnonzero(np.r_[True, labels[order][1:] != labels[order][:-1]])]

    rng = np.random.default_rng(7)
    for _ in range(200):
        n, d, k = int(rng.integers(1, 300)), int(rng.integers(1, 24)), int(rng.integers(1, 40))
        vectors = rng.standard_normal((n, d)).astype(rng.choice([np.float32, np.float64]))
        labels = rng.integers(0, k, n)
        assert np.array_equal(central_members(vectors, labels, k), by_add_at(vectors, labels, k))
