"""Comparability (`[eval] comparable_on`): leaders measured on different data are flagged, from the
metadata column alone."""

from __future__ import annotations

import json

import pyarrow as pa
from frontier_tables import node, table

from git_agora.config import ConfigError, ProjectConfig
from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.comparable import differences, measured_under


def with_outputs(contributions: pa.Table, outputs: dict[int, dict]) -> pa.Table:
    """Rows `i` get metadata {"check": {"output": outputs[i]}}, as push --check records it."""
    metadata = contributions["metadata"].to_pylist()
    for i, output in outputs.items():
        metadata[i] = json.dumps({"check": {"output": output, "measured": {}}})
    index = contributions.schema.get_field_index("metadata")
    return contributions.set_column(index, "metadata", pa.array(metadata, pa.string()))


def results():
    return table(
        [
            node("setup", "org", tags=("setup",)),
            node("a", "ann", "setup", t=1, metric=2.0),
            node("b", "bob", "a", t=2, metric=1.5),
            node("c", "cid", "a", t=3, metric=1.8),
            node("d", "dan", "a", t=4, metric=1.9),  # claimed without --check: records nothing
        ]
    )


def test_measured_under_reads_check_output_then_a_verifications_output():
    fields = ("data_sha256", "device")
    assert measured_under('{"check": {"output": {"data_sha256": "x", "bpb": 1}}}', fields) == {"data_sha256": "x"}
    assert measured_under({"output": {"device": "cpu"}}, fields) == {"device": "cpu"}
    assert measured_under("not json", fields) == {} and measured_under(None, fields) == {}
    found = differences([{"data_sha256": "x"}, {"data_sha256": "y"}, {"data_sha256": "x"}, {}], fields)
    assert [(d.field, d.values) for d in found] == [("data_sha256", (("x", 2), ("y", 1)))]


def test_analyze_notes_leaders_measured_on_different_data():
    outputs = {1: {"data_sha256": "aaa"}, 2: {"data_sha256": "bbb"}, 3: {"data_sha256": "aaa"}}
    contributions = with_outputs(results(), outputs)
    config = AnalyzeConfig(metric="bpb", comparable_on=("data_sha256",))
    summary = analyze(contributions, config=config).to_dict()["summary"]
    assert summary["incomparable"] == [
        {"field": "data_sha256", "values": [{"value": "aaa", "results": 2}, {"value": "bbb", "results": 1}]}
    ]
    assert any("different data_sha256" in note and "not comparable" in note for note in summary["notes"])

    same = with_outputs(results(), {1: {"data_sha256": "aaa"}, 2: {"data_sha256": "aaa"}})
    assert analyze(same, config=config).summary.incomparable == ()
    unconfigured = analyze(contributions, config=AnalyzeConfig(metric="bpb")).summary  # no comparable_on
    assert unconfigured.incomparable == () and not any("comparable" in n for n in unconfigured.notes)


def test_comparable_on_is_parsed_documented_and_dumped():
    config = ProjectConfig.parse('[eval]\ncommand = "x"\ncomparable_on = ["data_sha256", "data_source"]\n')
    assert config.evaluation.comparable_on == ("data_sha256", "data_source")
    assert ProjectConfig.parse(config.dump()).evaluation.comparable_on == ("data_sha256", "data_source")
    assert ProjectConfig.parse('[eval]\ncommand = "x"\n').evaluation.comparable_on == ()
    assert AnalyzeConfig.from_project(config).comparable_on == ("data_sha256", "data_source")
    try:
        ProjectConfig.parse('[eval]\ncommand = "x"\ncomparable_on = [1]\n')
    except ConfigError as exc:
        assert "comparable_on" in str(exc)
    else:
        raise AssertionError("a non-string field name was accepted")
