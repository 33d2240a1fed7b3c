"""Readers survive any number and any size of text that others publish: metrics at the ends of the
float range, subnormals, -0.0, forged non-finite metrics and a 60 KB title."""

from __future__ import annotations

import json
import time
from pathlib import Path

from agora_testing import agora, forge, git, make_clone, publish_forged_log
from git_agora import open_project
from git_agora.contribution import Contribution
from git_agora.refs.objects import commit_body, write_loose

METRICS = ["1.5", "1.4", "1.3", "1.2", "-1.7e308", "1.7e308", "5e-324", "-0.0"]


def no_nan(text: str):
    """`text` as JSON, refusing NaN and Infinity (not JSON, though Python's json writes them)."""
    return json.loads(text, parse_constant=lambda token: (_ for _ in ()).throw(AssertionError(token)))


def test_metrics_at_the_ends_of_the_float_range_never_break_a_reader(tmp_path, remote, project):
    for value in METRICS:
        (project / "model.py").write_text(f"order = {value!r}\n")
        agora(project, "push", "-m", f"try {value}", "--tag", "result", "--metric", f"bpc={value}")
    (project / "model.py").write_text("order = 9\n")
    agora(
        project,
        "push",
        "-m",
        "predicted",
        "--tag",
        "result",
        "--metric",
        "bpc=-1.7e308",
        "--predict",
        "1.7e308..1.7e308",
    )
    m = make_clone(tmp_path, "m", str(remote), "mallory")  # non-finite metrics exist only as forged commits
    agora(m, "fetch")
    setup = agora(m, "whoami", "--json").json()["setup"]
    forged = [
        forge(m, Contribution("mallory", ("result",), f"claims {v}", (setup,), {"bpc": float(v)}).to_message(), [setup])
        for v in ("nan", "inf", "-inf")
    ]
    publish_forged_log(m, "mallory", forged)
    agora(project, "fetch")

    rejected = {r["sha"]: r["reasons"] for r in agora(project, "log", "--rejected", "--json").json()}
    assert all(any("not finite" in reason for reason in rejected[sha]) for sha in forged)

    data = no_nan(agora(project, "analyze", "--json", "--model", "hashing").stdout)
    histogram = data["diversity"]["histogram"]
    assert (histogram["below"], histogram["above"]) == (2, 1)  # the two -1.7e308 and the 1.7e308
    assert sum(histogram["counts"]) + histogram["below"] + histogram["above"] == data["summary"]["results"] == 9
    assert histogram["edges"][0] == 0.0 and histogram["edges"][-1] == 1.5
    assert data["summary"]["best"]["metric"] == -1.7e308
    calibration = data["views"]["calibration"]
    assert calibration["rows"][0]["mean_error"] is None and "beyond the float range" in calibration["note"]

    text = agora(project, "analyze", "--model", "hashing")
    assert "best bpc = -1.7e+308" in text.stdout and "4.94066e-324" in text.stdout and not text.stderr
    site = agora(project, "site", str(tmp_path / "site"))
    assert not site.stderr.strip() or "Warning" not in site.stderr
    pages = [p.read_text() for p in (tmp_path / "site").rglob("*.html")]
    assert pages and not any("Infinity" in page or "NaN" in page for page in pages)
    assert "1.7e+308" in (tmp_path / "site" / "ratchet.html").read_text().replace("1.7e308", "1.7e+308")

    stats = no_nan(agora(project, "stats", "--json").stdout)
    assert stats["best_value"] == -1.7e308
    assert "-1.7e+308" in agora(project, "stats").stdout
    log = agora(project, "log").stdout
    assert "bpc=-1.7e+308" in log and "bpc=1.7e+308" in log and "bpc=4.94066e-324" in log and "bpc=-0" in log
    for sha in [r["sha"] for r in agora(project, "log", "--json").json()]:
        assert "contribution " + sha in agora(project, "show", sha).stdout
        no_nan(agora(project, "show", sha, "--json").stdout)
        no_nan(agora(project, "lineage", sha, "--json").stdout)
        agora(project, "lineage", sha)


TITLE = " ".join(f"word{i:05d}" for i in range(6700))[:60000].rstrip()  # one line, under the protocol's 64 KiB


def publish_signed(clone: Path, account: str, message: str, parents: list[str]) -> str:
    """A signed contribution written without `git agora post` (which may refuse a long title), published
    in `account`'s log with plain git."""
    writer = open_project(clone)
    writer.enable_signing()
    tree, who, now = writer.repo.commit_info(parents[0]).tree, f"{account} <{account}@agora>", int(time.time())
    body = commit_body(tree, parents, who, now, message)
    sha = write_loose(
        writer.repo.objects_path, "commit", commit_body(tree, parents, who, now, message, writer.repo.signer(body))
    )
    writer.repo.append_to_log(account, [sha])
    git(clone, "push", "-q", "origin", f"refs/agora/log/{account}")
    return sha


def test_a_60kb_title_shows_cut_in_every_reader(tmp_path, remote, project):
    (project / "model.py").write_text("order = 5\n")
    agora(project, "push", "-m", "a result", "--tag", "result", "--metric", "bpc=1.5")
    setup = agora(project, "whoami", "--json").json()["setup"]
    long = publish_signed(project, "alice", Contribution("alice", ("insight",), TITLE, (setup,)).to_message(), [setup])
    (project / "model.py").write_text("order = 4\n")
    built = agora(
        project,
        "push",
        "-m",
        "builds on the long one",
        "--tag",
        "result",
        "--metric",
        "bpc=1.4",
        "--parent",
        long,
        "--json",
    )
    titles = {r["sha"]: r["title"] for r in agora(project, "log", "--json").json()}
    assert titles[long] == TITLE  # valid, and whole in JSON

    analyze = agora(project, "analyze", "--model", "hashing", env={"COLUMNS": "100"}).stdout
    shown = [line for line in analyze.splitlines() if "word00000" in line]
    assert shown and all(line.endswith("…") and len(line) <= 100 for line in shown)
    log = [line for line in agora(project, "log").stdout.splitlines() if "word00000" in line]
    assert len(log) == 1 and log[0].endswith("…") and len(log[0]) < 300
    show = agora(project, "show", built.json()["sha"]).stdout  # not the log's newest: the two may share a second
    parent = next(line for line in show.splitlines() if line.startswith("parent") and "word00000" in line)
    assert parent.endswith("…") and len(parent) < 300
    assert TITLE in agora(project, "show", long).stdout  # the description itself is shown whole
