"""A newcomer never builds on an unchecked claim without being told: `clone` and `checkout --best` say
the status of what they check out and, when the best carries no run record (published without
`push --check`), name the best run-backed result, which `--checked` checks out. analyze, show and the
leaders mark such a claim "unchecked"."""

from __future__ import annotations

import re

import pytest

from agora_testing import agora
from git_agora.demo.run import DemoPlan, found_project


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The demo's task founded (a run-backed baseline), then a claim typed on the command line."""
    base = tmp_path_factory.mktemp("checked")
    plan = DemoPlan.create(base / "project", workers=0, rounds=0, seed=0)
    founder = found_project(plan)
    remote = str(plan.directory / "remote.git")
    agora(base, "clone", remote, "mallory", "--account", "mallory")
    (base / "mallory" / "notes.txt").write_text("nothing measured\n")
    claim = agora(base / "mallory", "push", "-m", "a typed claim", "--tag", "result", "--metric", "bpc=0.5")
    baseline = agora(founder, "log", "--tag", "result", "--json").json()[0]["sha"]
    return base, remote, claim.stdout.split()[1], baseline


def test_clone_says_the_best_is_unchecked_and_names_the_run_backed_one(project):
    base, remote, claim, baseline = project
    out = agora(base, "clone", remote, "newcomer", "--account", "newcomer").stdout
    assert f"checked out  {claim[:12]} a typed claim (the best result, bpc = 0.5; unchecked)" in out
    assert (
        "note         the best is unchecked (no run record: published without `push --check`); the best "
        f"run-backed result is {baseline[:12]} Baseline: order-2 additive smoothing (bpc = 3.04808, unverified): "
        "`git agora checkout --best --checked` checks it out"
    ) in out


def test_clone_checked_takes_the_best_run_backed_result(project):
    base, remote, claim, baseline = project
    done = agora(base, "clone", remote, "careful", "--checked", "--json").json()
    assert done["checked_out"] == baseline and done["status"] == "unverified"
    assert done["best_result"]["sha"] == claim and done["best_result"]["status"] == "unchecked"
    assert agora(base / "careful", "show", "HEAD", "--json").json()["sha"] == baseline


def test_checkout_best_says_the_status_and_checked_takes_the_run_backed_one(project):
    base, remote, claim, baseline = project
    clone = base / "mallory"
    best = agora(clone, "checkout", "--best").stdout
    assert best.startswith(f"checked out {claim[:12]} 'a typed claim' (unchecked) in ")
    assert "`git agora checkout --best --checked` checks it out" in best
    checked = agora(clone, "checkout", "--best", "--checked").stdout
    assert checked.startswith(f"checked out {baseline[:12]} 'Baseline: order-2 additive smoothing' (unverified)")
    assert "has no run record: checked out the best run-backed result instead" in checked
    assert agora(clone, "checkout", "--checked", check=False).returncode == 2


def test_readers_mark_the_unchecked_claim(project):
    base, remote, claim, baseline = project
    clone = base / "mallory"
    summary = agora(clone, "analyze", "--summary").stdout
    assert re.search(r"best bpc = 0\.5 \(lower is better,\s+tolerance 1e-06\),\s+unchecked", summary)
    leaders = agora(clone, "analyze", "--view", "leaders").stdout
    assert re.search(rf"^\s*1\s+{claim[:10]}\s+mallory\s+0\.5\s+unchecked", leaders, re.M)
    assert re.search(rf"^\s*2\s+{baseline[:10]}\s+founder\s+3\.04808\s+unverified", leaders, re.M)
    data = agora(clone, "analyze", "--json").json()
    assert data["summary"]["best"]["checked"] is False
    rows = {r["sha"]: r for r in data["views"]["leaders"]["rows"]}
    assert rows[claim]["checked"] is False and rows[baseline]["checked"] is True
    shown = agora(clone, "show", claim).stdout
    assert "evidence     score 0, 0 children, 0 descendants, unchecked" in shown
    assert "unchecked: no run record (published without `push --check`)" in shown
    assert "unchecked" not in agora(clone, "show", baseline).stdout


def test_the_site_marks_the_unchecked_claim_on_its_page_and_in_the_list(project):
    base, remote, claim, baseline = project
    clone, site = base / "mallory", base / "site"
    agora(clone, "site", str(site))
    listed = "".join(page.read_text() for page in sorted((site / "contributions").glob("*.html")))
    row_of = {
        sha: re.search(rf"<tr>(?:(?!</tr>).)*{sha[:12]}(?:(?!</tr>).)*</tr>", listed, re.S) for sha in (claim, baseline)
    }
    assert row_of[claim] and ">unchecked<" in row_of[claim].group(0), listed[:2000]
    assert row_of[baseline] and ">unverified<" in row_of[baseline].group(0)
