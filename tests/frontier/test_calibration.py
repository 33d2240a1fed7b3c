"""Prediction calibration: bands, hits and misses per account, the sign test, the view and the summary."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from frontier_tables import node, table, verify
from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.bands import as_band, band_of, parse_band
from git_agora.frontier.calibration import _read_all, band_ends, frame_calibration, sign_test
from git_agora.frontier.frame import build_frame
from git_agora.frontier.views import compute_views
from tables import calibrate


@pytest.mark.parametrize(
    "text, band",
    [("2.6..3.0", (2.6, 3.0)), ("-1..-0.5", (-1.0, -0.5)), (" 1e-3 .. 2E-3 ", (0.001, 0.002)), ("3..3", (3.0, 3.0))],
)
def test_bands_parse(text, band):
    assert parse_band(text) == band


@pytest.mark.parametrize(
    "text, says",
    [
        ("3.0..2.6", "low end exceeds"),
        ("2.6-3.0", "not a band"),
        ("2.6..", "not a band"),
        ("abc", "not a band"),
        ("nan..1", "not a band"),
        ("1..1e999", "finite"),
        ("", "not a band"),
    ],
)
def test_bad_bands_are_refused_in_one_line(text, says):
    with pytest.raises(ValueError, match=says) as caught:
        parse_band(text)
    assert "\n" not in str(caught.value)


def test_what_a_band_is():
    assert as_band([1, 2]) == (1.0, 2.0)
    for bad in ([2, 1], [1], [1, 2, 3], ["1", 2], [True, 2], [1, float("inf")], "1..2", None, {"low": 1}):
        assert as_band(bad) is None
    assert band_of('{"prediction": [1, 2]}') == (1.0, 2.0)
    assert band_of({"predicted_band": [1, 2]}) == (1.0, 2.0)  # what the demo wrote before --predict
    assert band_of({"prediction": [1, 2], "predicted_band": [5, 6]}) == (1.0, 2.0)
    assert band_of("not json") is None and band_of("[1, 2]") is None and band_of(None) is None


def test_sign_test():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 5) == pytest.approx(1 / 32)
    assert sign_test(4, 4) == pytest.approx(1 / 16)
    assert sign_test(0, 3) == 1.0
    assert sign_test(6, 7) == pytest.approx(8 / 128)


def test_calibrate_counts_hits_misses_and_the_signed_error():
    measured = np.array([2.5, 3.2, 2.9, 1.0, 9.9])
    bands = [(2.0, 3.0), (2.0, 3.0), (2.0, 3.0), (2.0, 3.0), None]
    lower_is_better = calibrate("ann", measured, bands, "min")
    assert (lower_is_better.results, lower_is_better.predicted, lower_is_better.inside) == (5, 4, 2)
    assert (lower_is_better.short, lower_is_better.beat) == (1, 1)  # 3.2 is worse, 1.0 better than predicted
    assert lower_is_better.inside_share == 0.5
    assert lower_is_better.mean_error == pytest.approx(np.mean([0.0, 0.7, 0.4, -1.5]))
    higher_is_better = calibrate("ann", measured, bands, "max")
    assert (higher_is_better.short, higher_is_better.beat) == (1, 1)
    assert calibrate("ann", np.array([3.0000005]), [(2.0, 3.0)], "min", tolerance=1e-6).inside == 1
    nothing = calibrate("bob", np.array([1.0]), [None], "min")
    assert (nothing.predicted, nothing.inside_share, nothing.mean_error) == (0, None, None)
    assert not nothing.over_optimistic


def hand_built(direction="min"):
    """ann predicts well (3 inside, one miss each way); bob is always worse than his band, 5 times;
    cyd misses short 3 times (too few to call systematic); dan never predicts."""
    worse = 1 if direction == "min" else -1
    rows = [node("setup", "org", tags=("setup",))]
    t = 0

    def result(name, account, value, band=None):
        nonlocal t
        t += 1
        meta = None if band is None else {"prediction": band}
        rows.append(node(name, account, "setup", t=t, metric=value, meta=meta))

    for i, value in enumerate((2.5, 2.9, 2.1, 2.0 + worse * 2, 2.0 - worse * 2)):
        result(f"ann{i}", "ann", value, [2.0, 3.0])
    for i in range(5):
        result(f"bob{i}", "bob", 2.5 + worse * (1 + i / 10), [2.0, 3.0])
    for i in range(3):
        result(f"cyd{i}", "cyd", 2.5 + worse * 1, [2.0, 3.0])
    result("cyd-wip", "cyd", 9.0, [2.0, 3.0])
    rows[-1] = node("cyd-wip", "cyd", "setup", t=t, metric=9.0, tags=("wip",), meta={"prediction": [2.0, 3.0]})
    result("dan0", "dan", 2.5)
    rows.append(verify("v", "ann", "bob0", "confirmed", t=t + 1, metric=2.5, meta={"prediction": [0.0, 0.1]}))
    return build_frame(table(rows), direction=direction, tolerance=1e-9)


@pytest.mark.parametrize("direction", ["min", "max"])
def test_per_account_calibration_on_a_hand_built_project(direction):
    calibrated = frame_calibration(hand_built(direction))
    by = {c.account: c for c in calibrated.accounts}
    assert [c.account for c in calibrated.accounts] == ["ann", "bob", "cyd", "dan"]  # most predictions first
    assert (by["ann"].predicted, by["ann"].inside, by["ann"].short, by["ann"].beat) == (5, 3, 1, 1)
    assert (by["bob"].predicted, by["bob"].inside, by["bob"].short, by["bob"].beat) == (5, 0, 5, 0)
    assert by["cyd"].results == 3  # wip is not a scored result; nor is the verification (ann's)
    assert (by["dan"].results, by["dan"].predicted) == (1, 0)
    assert by["bob"].over_optimistic and by["bob"].p_value == pytest.approx(1 / 32)
    assert not by["ann"].over_optimistic and not by["cyd"].over_optimistic  # cyd: p = 1/8
    sign = 1 if direction == "min" else -1
    assert by["bob"].mean_error == pytest.approx(sign * 1.2)
    assert calibrated.over_optimistic == ("bob",)
    overall = calibrated.overall
    assert (overall.results, overall.predicted, overall.inside, overall.short, overall.beat) == (14, 13, 3, 9, 1)


def test_the_view_and_the_summary_flag_over_optimism():
    f = hand_built()
    view = compute_views(f, names=["calibration"])["calibration"]
    assert view.title == "Prediction calibration" and view.total == 4
    bob = view.rows[1]
    assert bob["account"] == "bob" and bob["inside_share"] == 0 and bob["over_optimistic"] is True
    assert "13 of 14 scored results predicted" in view.note and "over-optimistic: bob" in view.note
    summary = analyze(f.contributions, config=AnalyzeConfig(direction="min", tolerance=1e-9)).to_dict()["summary"]
    assert summary["over_optimistic"] == ["bob"]
    assert summary["calibration"]["predicted"] == 13
    assert any(n.startswith("bob: predictions are systematically over-optimistic: 5 of 5") for n in summary["notes"])


def test_no_prediction_anywhere():
    f = build_frame(table([node("setup", "org", tags=("setup",)), node("a", "ann", "setup", t=1, metric=1.0)]))
    view = compute_views(f, names=["calibration"])["calibration"]
    assert view.rows[0]["predicted"] == 0 and "push --predict" in view.note
    summary = analyze(f.contributions).to_dict()["summary"]
    assert summary["calibration"] is None and summary["over_optimistic"] == []


number = st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.sampled_from([1e400, -1e400]))
prediction = st.one_of(st.none(), st.lists(number, max_size=3), st.text(max_size=3), st.booleans(), number)
metadata = st.dictionaries(st.sampled_from(["prediction", "predicted_band", "note"]), prediction, max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(metadata, max_size=6))
def test_the_fast_reader_agrees_with_the_rule(metas):
    texts = [json.dumps(m) for m in metas] + ['{"x": {"prediction": [1, 2]}}', "{}"]
    low, high = band_ends(pa.array(texts))
    for text, lo, hi in zip(texts, low, high):
        band = band_of(text)
        assert (band is None and np.isnan(lo) and np.isnan(hi)) or band == (lo, hi), text


shaped = st.dictionaries(
    st.sampled_from(["prediction", "predicted_band", "note"]),
    st.one_of(st.none(), st.lists(st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False)), max_size=3)),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(shaped, min_size=1, max_size=6))
def test_arrows_json_reader_reads_well_shaped_predictions_as_the_rule_does(metas):
    texts = [json.dumps(m) for m in metas]
    read = _read_all(texts)
    assert read is not None  # one shape: the fast path runs
    for text, lo, hi in zip(texts, *read):
        band = band_of(text)
        assert (band is None and np.isnan(lo) and np.isnan(hi)) or band == (lo, hi), text
