"""Metrics of any finite float (±1.7e308, subnormals, -0.0): the histogram, UCB's bunching and the
calibration never overflow into a crash, an inf or a NaN."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from frontier_tables import node, table

from git_agora.frontier.analyze import analyze
from git_agora.frontier.frame import build_frame
from git_agora.frontier.ucb import UcbParams, exploration_constant
from tables import calibrate

EXTREMES = [1.0, 1.1, 1.2, 1.3, -1.7e308, 1.7e308, 5e-324, -0.0]


def rows_with(values, **kw):
    setup = node("setup", "org", tags=("setup",))
    return [setup] + [node(f"r{i}", "alice", "setup", t=i + 1, metric=v, **kw) for i, v in enumerate(values)]


def test_the_histogram_bins_the_bulk_and_counts_the_outliers_apart():
    result = analyze(table(rows_with(EXTREMES)))
    histogram = result.diversity.histogram.to_dict()
    assert (histogram["below"], histogram["above"]) == (1, 1)  # -1.7e308 and 1.7e308, not the bulk's
    assert sum(histogram["counts"]) + histogram["below"] + histogram["above"] == len(EXTREMES)
    edges = histogram["edges"]
    assert edges[0] == 0.0 and edges[-1] == 1.3 and len(edges) == len(histogram["counts"]) + 1 == 11
    assert all(math.isfinite(e) for e in edges) and edges == sorted(edges)
    json.dumps(result.to_dict(), allow_nan=False, default=str)  # no inf or NaN anywhere in analyze's answer


def test_bin_edges_span_the_whole_float_range_without_overflow():
    from git_agora.frontier.clusters import bin_edges

    edges = bin_edges(-1.7e308, 1.7e308, 10)
    assert len(edges) == 11 and np.isfinite(edges).all() and (np.diff(edges / 2) > 0).all()
    assert list(bin_edges(0.0, 5e-324, 10)) == [0.0, 5e-324]  # edges that round to one float merge
    assert list(bin_edges(2.0, 2.0, 10)) == [2.0, 2.0]


def test_only_extremes_still_make_a_histogram():
    histogram = analyze(table(rows_with([-1.7e308, 1.7e308, -1.7e308, 1.7e308]))).diversity.histogram
    assert histogram.edges[0] == -1.7e308 and histogram.edges[-1] == 1.7e308
    assert sum(histogram.counts) == 4 and histogram.below == histogram.above == 0


def test_bunching_is_not_fooled_by_an_interquartile_range_that_overflows():
    """Without a tolerance the bunching width is a tenth of the IQR: interpolating between -1.7e308 and
    1.7e308 gave -inf, an infinite width, and everyone "bunched at the best" (C at its maximum)."""
    rows = rows_with([-1.7e308, 1.7e308, 1.7e308, 1.7e308])
    c, bunching = exploration_constant(build_frame(table(rows), direction="min", tolerance=0.0), UcbParams())
    assert bunching == 0.0 and c == UcbParams().c0  # the others lie 3.4e308 away from the best


def test_calibration_mean_error_never_overflows():
    top = (1.7e308, 1.7e308)
    far = calibrate("ann", np.array([-1.7e308, -1.7e308]), [top, top], "min")
    assert far.predicted == 2 and far.mean_error is None  # -3.4e308: beyond the float range
    near = calibrate("ann", np.array([1.7e308, 1.6e308]), [top, top], "min")
    assert math.isclose(near.mean_error, -0.05e308)
    json.dumps(far.to_dict(), allow_nan=False)
    rows = rows_with([-1.7e308, 1.0], meta={"prediction": [1.7e308, 1.7e308]})  # the note says it in words
    assert "mean error beyond the float range" in analyze(table(rows)).to_dict()["views"]["calibration"]["note"]


def sorted_histogram(values: np.ndarray, bins: int = 10):
    """The histogram as it was computed by sorting every value first (the reference)."""
    from git_agora.frontier.clusters import Histogram, bin_edges

    values = np.sort(values[~np.isnan(values)])
    with np.errstate(over="ignore", invalid="ignore"):
        q1 = float(np.percentile(values, 25, method="lower"))
        q3 = float(np.percentile(values, 75, method="higher"))
        low, high = q1 - 3 * (q3 - q1), q3 + 3 * (q3 - q1)
    inside = values[(values >= low) & (values <= high) & np.isfinite(values)]
    below, above = int((values < low).sum()), int((values > high).sum())
    edges = bin_edges(float(inside[0]), float(inside[-1]), bins)
    counts = np.bincount(
        np.minimum(np.searchsorted(edges, inside, side="right") - 1, len(edges) - 2), minlength=len(edges) - 1
    )
    return Histogram(tuple(float(e) for e in edges), tuple(int(c) for c in counts), below, above)


@pytest.mark.parametrize("seed", range(25))
def test_the_histogram_reads_the_values_in_any_order_as_sorting_them_would(seed):
    from types import SimpleNamespace

    from git_agora.frontier.clusters import metric_histogram

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    values = np.round(rng.normal(3.0, 1.0, n), int(rng.integers(0, 3)))  # ties, often
    picks = rng.random(n)
    values[picks < 0.05] = np.nan
    values[picks > 0.97] = rng.choice(EXTREMES, int((picks > 0.97).sum()))
    if np.isnan(values).all():
        values[0] = 1.0
    frame = SimpleNamespace(metric=values, scored=rng.random(n) < 0.9)
    frame.scored[int(np.flatnonzero(~np.isnan(values))[0])] = True
    assert metric_histogram(frame) == sorted_histogram(values[frame.scored])
