"""`needs.vectors_needed`: with only those vectors cached, analyze gives the clusters and slots it gives
with every vector cached, so a first analyze can embed them first and leave the rest for later."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from frontier_tables import random_table

from git_agora.frontier.analyze import AnalyzeConfig, analyze, frame_for
from git_agora.frontier.clusters import ClusterParams, recent_clusterable
from git_agora.frontier.embeddings import rows_table
from git_agora.frontier.needs import vectors_needed


def near_duplicate_vectors(n: int, seed: int = 0) -> np.ndarray:
    """Vectors in a few tight directions, so that clusters and near-duplicate counts are not trivial."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, 16))
    vectors = centres[rng.integers(0, 12, n)] + 0.15 * rng.standard_normal((n, 16))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_the_needed_vectors_give_the_same_clusters_and_slots_as_all_of_them():
    contributions = random_table(900, seed=3)
    config = AnalyzeConfig(metric="loss", clusters=ClusterParams(window=120))
    frame = frame_for(contributions, config)
    shas = frame.table["sha"].to_pylist()
    vectors = near_duplicate_vectors(len(shas))
    needed = vectors_needed(frame, config.clusters, config.ucb)
    assert 120 <= len(needed) < len(shas) // 2  # the window and the exploit shortlist, not the project
    assert set(recent_clusterable(frame, 120).tolist()) <= set(needed.tolist())
    every = analyze(contributions, embeddings=rows_table(shas, "m", vectors), config=config).to_dict()
    part = rows_table([shas[i] for i in needed], "m", vectors[needed])
    first = analyze(contributions, embeddings=part, config=config).to_dict()
    assert first["slots"] == every["slots"]
    assert first["diversity"] == every["diversity"] and every["diversity"]["available"]
    window = recent_clusterable(frame, 120)
    only_window = rows_table([shas[i] for i in window], "m", vectors[window])
    assert analyze(contributions, embeddings=only_window, config=config).to_dict()["slots"] != every["slots"]
    # the exploit slot ranks leaders from anywhere in history by their near-duplicates: hence its shortlist


def test_coverage_counts_the_recent_window_only():
    contributions = random_table(400, seed=4)
    config = AnalyzeConfig(metric="loss", clusters=ClusterParams(window=50))
    frame = frame_for(contributions, config)
    shas = frame.table["sha"].to_pylist()
    recent = recent_clusterable(frame, 50)
    vectors = near_duplicate_vectors(len(shas))
    part = rows_table([shas[i] for i in recent], "m", vectors[recent])  # 50 of 400: 100% of the window
    diversity = analyze(contributions, embeddings=part, config=config).diversity
    assert diversity.available and diversity.coverage == 1.0 and diversity.window == 50
    older = np.setdiff1d(np.arange(len(shas)), recent)[:200]
    stale = rows_table([shas[i] for i in older], "m", vectors[older])  # many vectors, none recent
    diversity = analyze(contributions, embeddings=stale, config=replace(config)).diversity
    assert not diversity.available and "50 most recent" in diversity.note
