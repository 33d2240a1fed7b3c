"""The public API typed end to end, driven as a Python caller drives it (beside `mlflow.search_runs` and
`dvc.api`): `import git_agora` on a real project with a bare remote and a CI account, `git_agora.ci(...)`
in process, views' rows as typed objects, `search(..., tags=...)`, the index as an Arrow table; and
mypy --strict on a caller's script, which sees the types only through the `py.typed` marker."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from test_ci_e2e import ci_secret, founded_with_ci, joined, set_choice

import git_agora as agora
from agora_testing import agora as agora_cli
from agora_testing import git, make_clone


@pytest.mark.slow
def test_a_caller_runs_the_ci_and_reads_typed_views_search_and_the_index(tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    alice = founded_with_ci(tmp_path, remote)
    agora_cli(alice, "fetch")
    baseline = agora_cli(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json")
    baseline = baseline.json()["sha"]
    mallory = joined(tmp_path, remote, "mallory", baseline)
    set_choice(mallory, "ORDER", "4")
    inflated = agora_cli(mallory, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=1.5", "--json")
    inflated = inflated.json()["sha"]
    secret, _ = ci_secret(tmp_path)

    project = agora.open_project(make_clone(tmp_path, "ci-job", str(remote), "ci"), account="ci")
    with pytest.raises(agora.AgoraError, match="no key for the CI account"):
        agora.ci(project)
    report = agora.ci(project, agora.Budget(max_evaluations=5), secret=secret)  # what `git agora ci --no-site` does
    assert isinstance(report, agora.CiReport) and report.summary.exit_code == 0, report.to_dict()
    verdicts = {c.target: c.verdict for c in report.checked}
    assert verdicts == {baseline: "confirmed", inflated: "failed"}, verdicts
    assert len(report.witness_records) == 1 and report.site is None

    # the records the CI wrote, read back through their one reader
    failed = next(c.verification for c in report.checked if c.target == inflated)
    assert failed is not None
    run = agora.RunRecord.read(agora.show(project, failed).contribution.metadata)
    assert (
        run is not None
        and run.backed
        and run.era == 3
        and run.sandbox is True
        and run.reason == "contradicts the claim"
    )
    assert run.reproduced is not None and run.reproduced["bpc"] != 1.5 and run.evaluator_sha256 is not None
    witness = agora.WitnessRecord.read(agora.show(project, report.witness_records[0]).contribution.metadata)
    assert witness is not None and {"alice", "mallory"} <= set(witness.tips)

    # views' rows are typed, and their JSON is what `analyze --json` prints
    analysis = agora.analyze(project, embed=False)
    assert isinstance(analysis, agora.AnalyzeResult)
    leaders = analysis.views["leaders"].rows
    assert all(isinstance(row, agora.Row) for row in leaders) and leaders[0].sha == baseline
    assert leaders[0].status == "confirmed" and leaders[0].rank == 1 and leaders[0].checked is True
    assert leaders[0]["sha"] == leaders[0].sha and dict(leaders[0]) == leaders[0].to_dict()
    assert leaders[0].tag is None and "tag" not in leaders[0]  # a field its view does not fill
    printed = json.loads(agora_cli(project.repo.worktree_path, "analyze", "--json").stdout)["views"]
    for name, view in analysis.views.items():
        assert printed[name]["rows"] == [row.to_dict() for row in view.rows], name
        assert [list(row) for row in printed[name]["rows"]] == [list(row.fields) for row in view.rows], name
    shown = agora.show(project, baseline)  # show's evidence is typed too, its JSON as the command prints it
    assert shown.evidence is not None and shown.evidence.status == "confirmed" and shown.evidence.checked is True
    printed_show = json.loads(agora_cli(project.repo.worktree_path, "show", baseline, "--json").stdout)
    assert printed_show["evidence"] == shown.evidence.to_dict() and list(printed_show["evidence"])[-1] == "checked"
    recent = {row.sha: row for row in analysis.views["recent"].rows}
    assert recent[failed].verdict == "failed" and recent[failed].target == inflated

    # search picks or leaves out tags: verdicts and witness records are not ideas
    # (a text with every word of the query is found by keyword, embedded or not; 20 > every contribution)
    verdict_shas = {c.verification for c in report.checked}
    hits = agora.search(project, "verification failed", limit=20, budget=agora.EmbedBudget(seconds=0))
    assert isinstance(hits, agora.SearchResult) and failed in {hit.sha for hit in hits.hits}
    only = agora.search(project, "verification failed", limit=20, tags=["verification"])
    assert failed in {hit.sha for hit in only.hits} and {hit.sha for hit in only.hits} <= verdict_shas
    ideas = agora.search(project, "baseline", limit=20, tags=["-verification", "-witness"])
    assert baseline in {hit.sha for hit in ideas.hits}
    assert not {hit.sha for hit in ideas.hits} & {*verdict_shas, *report.witness_records}
    with pytest.raises(agora.AgoraError, match="give tag names"):
        agora.search(project, "order", tags="result")
    printed_search = agora_cli(
        project.repo.worktree_path,
        "search",
        "baseline",
        "--limit",
        "20",
        "--tag",
        "-verification",
        "--tag=-witness",
        "--json",
    ).json()  # the CLI's --tag is the same filter, a leading - included
    assert [hit["sha"] for hit in printed_search["hits"]] == [hit.sha for hit in ideas.hits]
    shown_text = agora_cli(
        project.repo.worktree_path, "search", "verification", "failed", "--tag", "verification"
    ).stdout
    shown_shas = {line.split()[1] for line in shown_text.splitlines()[1:]}  # each hit: score, sha, metric, ...
    assert failed[:10] in shown_shas and shown_shas <= {sha[:10] for sha in verdict_shas}

    # the index as an Arrow table (and pandas where installed) for analysis
    table = agora.index_table(project, ["sha", "tags", "valid", "run_backed"])
    assert isinstance(table, pa.Table) and table.num_rows == 6  # setup, 2 claims, 2 verdicts, 1 witness record
    backed = {row["sha"]: row["run_backed"] for row in table.to_pylist()}
    assert backed[failed] is True and backed[baseline] is None
    with pytest.raises(agora.AgoraError, match="no index column nope"):
        agora.index_table(project, ["sha", "nope"])
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(agora.AgoraError, match="needs pandas"):
            agora.index_dataframe(project)
    else:
        frame = agora.index_dataframe(project, ["sha", "valid"])
        assert len(frame) == 6 and set(frame["sha"]) == set(backed)


CALLER = """
import git_agora as agora


def best_metric(path: str) -> float | None:
    project = agora.open_project(path, account="alice")
    agora.fetch(project)
    rows: tuple[agora.Row, ...] = agora.analyze(project, limit=5).views["leaders"].rows
    hits: tuple[agora.SearchHit, ...] = agora.search(project, "order", tags=["-verification"]).hits
    report: agora.CiReport = agora.ci(project, agora.Budget(max_evaluations=1), secret="key text")
    record = agora.RunRecord.read({"reproduced": {"bpc": 1.0}})
    print(agora.index_table(project, ["sha"]).num_rows, len(hits), report.summary.exit_code)
    return rows[0].metric if rows and record is not None and record.backed else None
"""


def test_a_callers_script_type_checks_strictly(tmp_path):
    """mypy --strict on a caller's script: every name it uses is exported and typed (through py.typed:
    without the marker mypy skips the package), and a wrong use of a typed result is an error."""
    (tmp_path / "caller.py").write_text(textwrap.dedent(CALLER))
    wrong = CALLER.replace("-> float | None:", "-> int:").replace("rows[0].metric if", "rows[0].sha if")
    (tmp_path / "wrong.py").write_text(textwrap.dedent(wrong))

    def mypy(name: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c")]
        return subprocess.run([*command, name], cwd=tmp_path, capture_output=True, text=True, timeout=600)

    good = mypy("caller.py")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = mypy("wrong.py")
    assert bad.returncode == 1 and 'Incompatible return value type (got "str | None", expected "int")' in bad.stdout


def test_shows_evidence_has_a_field_for_every_evidence_column():
    from git_agora.frontier.evidence import EVIDENCE
    from git_agora.ops.history import Evidence

    assert [*EVIDENCE.names[1:], "checked"] == list(Evidence.__dataclass_fields__)
