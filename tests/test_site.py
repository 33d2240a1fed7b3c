"""`git agora site` without a browser: what the pages hold, escaping, bad input, rebuilds, sampling."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pexpect
import pytest

import git_agora as agora
from agora_testing import agora as run_agora
from agora_testing import git, make_clone
from git_agora.frontier.projection import pca_2d
from git_agora.refs.diffs import diffs
from git_agora.web.html import Markup, esc, json_data
from site_projects import (
    ATTRIBUTE,
    BREAKOUT,
    HOSTILE_FILE,
    IMG,
    SCRIPT,
    hostile_project,
    isolated_env,
    load_tracegen,
    paper_project,
)

PAGES = ("index.html", "ratchet.html", "clusters.html", "contributors.html", "lineage/index.html")


def html_files(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    with isolated_env(base / "home"):
        project = hostile_project(base)
        site = base / "site"
        report = agora.build_site(agora.open_project(project.clone), site)
    return project, site, report


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    base = tmp_path_factory.mktemp("paper")
    with isolated_env(base / "home"):
        clone = paper_project(base)
        agora.build_site(agora.open_project(clone), base / "site")
    return clone, base / "site"


def site_digest(site: Path) -> dict[str, str]:
    """A digest of every page, by top folder ("." for the top pages; the overview without its build
    time; the assets, copied as they are, left out)."""
    groups: dict[str, Any] = {}
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        relative = path.relative_to(site).as_posix()
        folder = relative.split("/")[0] if "/" in relative else "."
        if folder == "assets":
            continue
        data = path.read_bytes()
        if relative == "index.html":
            data = re.sub(rb" on \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"", data)
        digest = groups.setdefault(folder, hashlib.sha256())
        digest.update(relative.encode() + b"\0" + hashlib.sha256(data).digest())
    return {folder: digest.hexdigest() for folder, digest in groups.items()}


# --------------------------------------------------------------------------- pure parts


def test_the_badge_says_the_best_and_whether_it_holds_up():
    from git_agora.web.badge import badge

    def said(*args) -> tuple[str, str]:
        shown = badge(*args)
        assert set(shown) == {"schemaVersion", "label", "message", "color"} and shown["schemaVersion"] == 1
        assert shown["label"] == "agora"
        return shown["message"], shown["color"]

    assert said(1.234, "confirmed", 2, 0) == ("best 1.234 confirmed", "brightgreen")
    assert said(1.234, "partial", 1, 0) == ("best 1.234 partial", "yellowgreen")
    assert said(1.234, "confirmed", 2, 3) == ("best 1.234 confirmed, 3 failed", "orange")
    assert said(2.5, "unverified", 1, 0) == ("best 2.5 unverified", "yellow")
    assert said(2.5, "contested", 0, 0, 1) == ("best 2.5 contested", "orange")
    assert said(0.000123456789, "unverified", 0, 0) == ("best 0.000123457, nothing verified", "yellow")
    assert said(None, None, 0, 3) == ("3 failed", "red")
    assert said(None, None, 0, 0) == ("no results yet", "lightgrey")
    assert said(1.0, "unverified", 0, 1)[0] == "best 1 unverified, 1 failed"  # a caught claim is a verdict


def test_esc_and_json_data_leave_no_markup():
    assert esc(SCRIPT) == "&lt;script&gt;window.__pwned = &quot;script&quot;; alert(&quot;script&quot;)&lt;/script&gt;"
    assert esc(Markup("<b>ok</b>")) == "<b>ok</b>" and esc(None) == ""
    data = json_data({"title": BREAKOUT, "x": [1.5, None]})
    assert "<" not in data and ">" not in data and "&" not in data
    assert json.loads(data) == {"title": BREAKOUT, "x": [1.5, None]}


def test_pca_projection_is_deterministic_and_safe_on_degenerate_input():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(200, 16)) * np.r_[5.0, 2.0, np.ones(14) * 0.1]
    first, again = pca_2d(vectors), pca_2d(vectors[::-1])
    assert first.coordinates.shape == (200, 2)
    assert first.explained[0] > first.explained[1] > 0 and sum(first.explained) <= 1
    np.testing.assert_allclose(first.coordinates, again.coordinates[::-1], atol=1e-9)
    assert first.coordinates[:, 0].std() > 2 * first.coordinates[:, 1].std()  # the axes follow the spread
    for degenerate in (np.zeros((0, 4)), np.ones((1, 4)), np.ones((5, 4))):
        out = pca_2d(degenerate)
        assert out.coordinates.shape == (len(degenerate), 2) and not out.coordinates.any()


def test_bulk_diffs_match_git_diff(tmp_path):
    git(tmp_path, "init", "-q", "r")
    repo = tmp_path / "r"
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "root")
    root = git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.txt").write_text("two\n")
    (repo / HOSTILE_FILE).write_text("x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "second")
    second = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "commit", "-q", "--allow-empty", "-m", "empty")
    empty = git(repo, "rev-parse", "HEAD").strip()
    found = list(diffs(repo, [(root, None), (second, root), (empty, second)], max_bytes=10_000))
    assert [d.sha for d in found] == [root, second, empty]
    assert [(f.status, f.path) for f in found[0].files] == [("A", "a.txt")]
    assert {(f.status, f.path) for f in found[1].files} == {("M", "a.txt"), ("A", HOSTILE_FILE)}
    assert found[1].patch == git(repo, "diff", "--no-color", "--no-renames", root, second)
    assert found[2].files == () and not found[2].patch
    cut = list(diffs(repo, [(second, root)], max_bytes=40))[0]
    assert cut.truncated > 0 and len(cut.patch.encode()) <= 40
    assert list(diffs(repo, [(second, root)], patch=False))[0].patch is None


# --------------------------------------------------------------------------- the built site


def test_every_page_is_built_and_links_resolve(hostile):
    project, site, report = hostile
    for name in PAGES:
        assert (site / name).is_file(), name
    assert report.contribution_pages == len(project.results) + 1  # and the setup
    assert report.scored_results == 2 and report.plotted_results == 2
    assert report.lineage_pages == 2 and report.diffs == 1  # the baseline keeps the setup's tree
    for sha in project.results.values():
        assert (site / "c" / sha[:2] / f"{sha}.html").is_file()
    overview = (site / "index.html").read_text()
    assert "Unverified results" in overview and "Scored under an earlier evaluator" not in overview  # only with rows
    for page in html_files(site):
        for href in re.findall(r'(?:href|src)="([^"#?]+)"', page.read_text()):
            if href.startswith(("data:", "http")) or "/_diff/" in href:
                continue
            assert (page.parent / href).resolve().exists(), f"{page.relative_to(site)} links to missing {href}"


def test_user_text_is_escaped_on_every_page(hostile):
    project, site, _ = hostile
    hostile_markup = ("<script>window", "<img src=x", "<svg onload", "<!--")
    for page in html_files(site):
        text = page.read_text()
        for markup in hostile_markup:
            assert markup not in text, f"{page.relative_to(site)} holds {markup!r} unescaped"
        assert len(re.findall(r"<script\b", text)) == len(re.findall(r"<script (?:type|src)=", text))
    sha = project.results["baseline"]
    baseline = (site / "c" / sha[:2] / f"{sha}.html").read_text()
    assert esc(SCRIPT) in baseline and esc(IMG) in baseline and esc(ATTRIBUTE) in baseline


def test_contribution_page_holds_verdicts_trailers_diff_and_checkout(hostile):
    project, site, _ = hostile
    better = project.results["better"]
    text = (site / "c" / better[:2] / f"{better}.html").read_text()
    assert f"git agora checkout {better}" in text
    assert "Agora-Tag: result" in text and "Agora-Metric: bpc=2" in text and "Agora-Meta:" in text
    assert 'class="badge ok">confirmed' in text  # verified by alice
    assert re.search(r"claimed bpc</th>.*<td class='num'>2</td><td class='num'>2</td>", text, re.S)
    assert esc(HOSTILE_FILE) in text and "-order = 2" in text and "+order = 5" in text
    assert f'href="../../lineage/{better}.html"' in text
    unscored = project.results["unscored"]
    text = (site / "c" / unscored[:2] / f"{unscored}.html").read_text()
    assert "Show the diff" in text and f"_diff/{unscored}.html" in text and "-order = 5" not in text
    verification = project.results["verification"]
    text = (site / "c" / verification[:2] / f"{verification}.html").read_text()
    assert "<h2>Verifies</h2>" in text and better in text


def test_cluster_map_says_why_without_cached_embeddings(hostile):
    _, site, report = hostile
    text = (site / "clusters.html").read_text()
    assert 'id="no-map"' in text and "embeddings cover 0%" in text and "git agora analyze" in text
    assert report.mapped_contributions == 0


def test_rebuild_keeps_unchanged_pages_and_removes_stale_ones(hostile, tmp_path):
    project, site, _ = hostile
    copy = tmp_path / "site"
    subprocess.run(["cp", "-a", str(site), str(copy)], check=True)
    stale = copy / "c" / "00" / ("0" * 40 + ".html")
    stale.parent.mkdir(exist_ok=True)
    stale.write_text("old")
    insight = project.results["insight"]
    page = copy / "c" / insight[:2] / f"{insight}.html"
    before = page.stat().st_mtime_ns
    with isolated_env(tmp_path / "home"):
        agora.analyze(agora.open_project(project.clone), model="hashing")  # now the map has vectors
        report = agora.build_site(agora.open_project(project.clone), copy)
    assert not stale.exists() and page.stat().st_mtime_ns == before
    assert report.mapped_contributions > 0 and 'id="no-map"' not in (copy / "clusters.html").read_text()


def test_a_folder_that_holds_something_else_is_refused(hostile, tmp_path):
    project, _, _ = hostile
    (tmp_path / "mine.txt").write_text("keep me")
    with isolated_env(tmp_path / "home"), pytest.raises(agora.AgoraError, match="not empty"):
        agora.build_site(agora.open_project(project.clone), tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_the_site_writes_its_badge_as_a_shields_endpoint(tmp_path):
    """badge.json beside the pages, as this reader counts the verdicts: nothing verified, then the best
    confirmed by the CI and a false claim failed."""
    from test_ci_pins_e2e import bare, claim, founded, joined, keypair, verdict

    remote = bare(tmp_path)
    ci_key, _ = keypair(tmp_path, "ci")
    alice = founded(tmp_path, remote, ci_key.with_suffix(".pub"))
    site = tmp_path / "site"

    def shown() -> dict[str, Any]:
        run_agora(alice, "fetch")
        run_agora(alice, "site", str(site))
        return json.loads((site / "badge.json").read_text())

    assert shown() == {"schemaVersion": 1, "label": "agora", "message": "no results yet", "color": "lightgrey"}
    setup = run_agora(alice, "whoami", "--json").json()["setup"]
    bob = joined(tmp_path, remote, "bob")
    good, bad = claim(bob, setup, 2.0, "good"), claim(bob, setup, 1.0, "too good")
    assert shown()["message"] == "best 1, nothing verified"
    ci = joined(tmp_path, remote, "ci", ci_key)
    verdict(ci, good, "confirmed", 2.0)
    assert shown() == {"schemaVersion": 1, "label": "agora", "message": "best 1 unverified", "color": "yellow"}
    verdict(ci, bad, "failed", 3.0)
    assert shown() == {"schemaVersion": 1, "label": "agora", "message": "best 2 confirmed, 1 failed", "color": "orange"}
    assert "badge.json" not in {p.name for p in html_files(site)}


def test_empty_project(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "f.txt").write_text("x\n")
    run_agora(a, "init", "--metric", "bpc")
    data = run_agora(a, "site", str(tmp_path / "site"), "--json").json()
    run_agora(a, "site", "public")  # inside the clone: it ignores itself, so no push would take it
    assert "public" not in git(a, "status", "--porcelain", "--untracked-files=all")
    assert data["contribution_pages"] == 1 and data["scored_results"] == 0 and data["lineage_pages"] == 0
    assert "No scored result yet" in (tmp_path / "site" / "ratchet.html").read_text()
    assert "no map" in (tmp_path / "site" / "clusters.html").read_text().lower()
    assert "no scored result yet" in (tmp_path / "site" / "lineage" / "index.html").read_text()


def test_project_without_a_metric(tmp_path):
    with isolated_env(tmp_path / "home"):
        project = hostile_project(tmp_path, metric=False)
        report = agora.build_site(agora.open_project(project.clone), tmp_path / "site")
    assert report.scored_results == 0 and report.contribution_pages == 2
    assert "names no primary metric" in (tmp_path / "site" / "ratchet.html").read_text()


def test_sampling_keeps_new_bests_then_verified_then_the_rest():
    from git_agora.ops.site_data import _sample

    nodes = np.arange(100) * 10
    best = np.zeros(100, bool)
    best[[3, 50, 97]] = True
    verified = np.zeros(100, bool)
    verified[::2] = True
    assert list(_sample(nodes, best, verified, 2)) == [30, 970]  # not even the new bests fit: an even sample
    kept = _sample(nodes, best, verified, 30)
    assert len(kept) == 30 and set(nodes[best]) <= set(kept) and list(kept) == sorted(kept)
    assert set(kept) - set(nodes[best]) <= set(nodes[verified])  # verified before the others
    kept = _sample(nodes, best, verified, 60)
    assert len(kept) == 60 and set(nodes[verified]) | set(nodes[best]) <= set(kept)


def test_large_projects_are_sampled_with_a_note(tmp_path, monkeypatch):
    from git_agora.ops import site_data

    monkeypatch.setattr(site_data, "MAX_POINTS", 40)
    monkeypatch.setattr(site_data, "LINEAGE_ALL_UP_TO", 10)
    monkeypatch.setattr(site_data, "LINEAGE_PAGES", 4)
    monkeypatch.setattr(site_data, "LINEAGE_NODES", 5)
    load_tracegen().generate(tmp_path / "origin.git", 300, 5, seed=1)
    clone = make_clone(tmp_path, "c", str(tmp_path / "origin.git"), "reader")
    project = agora.open_project(clone)
    agora.fetch(project)
    report = agora.build_site(project, tmp_path / "site")
    stats = agora.stats(project)
    assert report.scored_results == stats.scored_results > 40
    assert report.plotted_results <= 40 < report.scored_results and report.lineage_pages == 4
    assert any("ratchet plot" in n for n in report.notes) and any("lineage pages" in n for n in report.notes)
    ratchet = (tmp_path / "site" / "ratchet.html").read_text()
    assert "results drawn" in ratchet
    data = json.loads(re.search(r'id="page-data">(.*?)</script>', ratchet).group(1))
    assert sum(data["b"]) == stats.new_bests  # every new best is kept
    best = (tmp_path / "site" / "lineage" / f"{stats.best_sha}.html").read_text()
    assert "the graph draws 5 of them" in best
    other = next(r for r in agora.log(project, tags=["result"], limit=300) if r.sha != stats.best_sha)
    text = (tmp_path / "site" / "c" / other.sha[:2] / f"{other.sha}.html").read_text()
    assert "git agora lineage SHA" in text or "Lineage of this result" in text


def test_serve_answers_pages_and_on_demand_diffs(hostile):
    from git_agora.ops.site_server import site_server

    project, site, _ = hostile
    server = site_server(agora.open_project(project.clone), site, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert "Leaderboard" in urllib.request.urlopen(base + "index.html").read().decode()
        unscored = project.results["unscored"]
        diff = urllib.request.urlopen(f"{base}_diff/{unscored}.html").read().decode()
        assert "-order = 5" in diff and "+order = 4" in diff and "<script>window" not in diff
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(f"{base}_diff/{'0' * 40}.html")
        better = project.results["better"]
        prebuilt = site / "lineage" / f"{better}.html"
        text = prebuilt.read_text()
        prebuilt.unlink()  # as if the build had left it out: the server draws it on demand
        try:
            assert urllib.request.urlopen(f"{base}lineage/{better}.html").read().decode() == text
        finally:
            prebuilt.write_text(text)
    finally:
        server.shutdown()
        server.server_close()


def test_cli_serve_prints_its_address_and_serves(project, tmp_path):
    proc = subprocess.Popen(
        ["git", "agora", "site", str(tmp_path / "site"), "--serve", "--port", "0"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("serving "):
                break
        url = lines[-1].split()[1]
        assert url.startswith("http://127.0.0.1:"), lines
        assert "wrote" in "".join(lines)
        assert "Ratchet" in urllib.request.urlopen(url + "ratchet.html").read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_documented_ci_script_publishes_to_a_folder_and_a_branch(project, remote, tmp_path):
    docs = Path(__file__).parents[1].joinpath("docs/site.md").read_text()
    script = re.search(r"### A plain shell script.*?```bash\n(.*?)```", docs, re.S).group(1)
    (tmp_path / "publish-site.sh").write_text(script)
    env = {**os.environ, "AGORA_SITE_WORK": str(tmp_path / "work")}
    www = tmp_path / "www"
    pages = tmp_path / "pages.git"
    git(tmp_path, "init", "-q", "--bare", str(pages))
    for dest in ([str(www)], ["--pages", str(pages)]):
        done = subprocess.run(
            ["bash", str(tmp_path / "publish-site.sh"), str(remote), *dest],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "index ok" in done.stdout and f"published the site of {remote}" in done.stdout
    assert (www / "index.html").is_file() and (www / "assets" / "site.js").is_file()
    files = git(pages, "ls-tree", "-r", "--name-only", "pages").split()
    assert "index.html" in files and "ratchet.html" in files and "assets/site.js" in files


def test_the_convergence_warning_leads_the_overview_and_the_cluster_map(project, tmp_path):
    for n in range(6):
        run_agora(project, "post", "-m", f"tune the learning rate schedule, try {n}", "--tag", "insight")
    run_agora(project, "post", "-m", "something else entirely: a bigger vocabulary", "--tag", "insight")
    warning = run_agora(project, "analyze", "--json", "--model", "hashing").json()["summary"]["warning"]
    assert warning and warning.startswith("convergence")
    run_agora(project, "site", str(tmp_path / "site"))
    for name in ("index.html", "clusters.html"):
        main = (tmp_path / "site" / name).read_text().split("<main>", 1)[1]
        assert main.startswith('<p class="warning" role="alert"><strong>Warning</strong> convergence'), name


# --------------------------------------------------------------------------- at scale: same pages, bounded memory


GOLDEN = Path(__file__).parent / "data" / "site_paper_digest.json"


def test_the_paper_trace_site_is_byte_for_byte_the_one_the_list_based_builder_wrote(paper):
    """tests/data/site_paper_digest.json was made from the site of the paper trace (seed 0, the hashing
    model) built by the builder that held every column as Python lists (commit 18bb7a7), before the
    pages were made from Arrow columns a chunk at a time. A page that changes on purpose changes it:
    rebuild the digest with `site_digest` and say why in the commit."""
    _, site = paper
    assert site_digest(site) == json.loads(GOLDEN.read_text())


def test_pages_do_not_depend_on_the_chunk_size(paper, hostile, tmp_path, monkeypatch):
    from git_agora.ops import site_pages

    for clone in (paper[0], hostile[0].clone):
        with isolated_env(tmp_path / "home"):
            whole = tmp_path / f"{clone.name}-whole"
            agora.build_site(agora.open_project(clone), whole)
            with monkeypatch.context() as small:
                small.setattr(site_pages, "CHUNK_ROWS", 2)  # chunk edges between parents, children, verdicts
                small.setattr(site_pages, "LIST_BLOCK", 1)
                agora.build_site(agora.open_project(clone), tmp_path / clone.name)
        assert site_digest(tmp_path / clone.name) == site_digest(whole)


def test_rows_find_shas_and_never_match_a_malformed_one():
    import pyarrow as pa

    from git_agora.ops.site_rows import Rows, csr

    shas = ["b" * 40, "a" * 40, "c" * 40, "a" * 40]  # a duplicate: the last row wins, as a dict would
    table = pa.table(
        {"sha": shas, "title": ["t1", None, "t3", "t4"], "account": ["x", None, "y", "x"], "parents": [[]] * 4}
    )
    rows = Rows(table, None)
    assert rows.lookup(["a" * 40, "c" * 40, "d" * 40, "a" * 39, "é" * 40, "a" * 41]).tolist() == [3, 2, -1, -1, -1, -1]
    assert rows.row("b" * 40) == 0 and rows.row("0" * 40) is None
    assert rows.refs(np.array([3, 1, 1, -1])) == {1: ("a" * 40, None, None), 3: ("a" * 40, "t4", "x")}
    assert rows.chunk(1, 3, ["sha", "description"]) == {"sha": ["a" * 40, "c" * 40], "description": [None, None]}
    ptr, kids = csr(np.array([2, 0, 2, 1]), np.array([10, 11, 12, 13]), 4)
    assert ptr.tolist() == [0, 1, 2, 4, 4] and kids.tolist() == [11, 13, 10, 12]
    odd = Rows(pa.table({"sha": ["short", "a" * 40], "title": ["s", "a"], "account": ["x", "y"]}), None)
    assert odd.lookup(["short", "a" * 40]).tolist() == [-1, 1]  # a sha that is not 40 characters never matches


def test_site_shows_progress_on_a_terminal_and_nothing_under_json(paper, tmp_path):
    clone, _ = paper
    env = {**os.environ, "COLUMNS": "120", "HOME": str(tmp_path)}
    shown = {}
    for args in (("site", str(tmp_path / "a")), ("site", str(tmp_path / "b"), "--json")):
        child = pexpect.spawn("git", ["agora", *args], cwd=str(clone), env=env, encoding="utf-8", timeout=300)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, child.before
        shown[args[-1]] = child.before
    terminal, quiet = shown[str(tmp_path / "a")], shown["--json"]
    assert "site: contribution pages" in terminal and "/s" in terminal, terminal[-2000:]
    assert "site:" not in quiet and json.loads(quiet)["contribution_pages"] == 1703


def test_descriptions_follow_the_analysis_rows_whatever_the_index_order():
    import pyarrow as pa

    from git_agora.ops.site_contributions import descriptions

    table = pa.table({"sha": ["a" * 40, "b" * 40, "c" * 40]})
    same = pa.table({"sha": ["a" * 40, "b" * 40, "c" * 40], "description": ["A", "B", None]})
    assert descriptions(table, same).to_pylist() == ["A", "B", None]
    other = pa.chunked_array([["c" * 40], ["d" * 40, "a" * 40]])  # another order, one sha missing, one extra
    index = pa.table({"sha": other, "description": pa.chunked_array([["C"], ["D", "A"]])})
    assert descriptions(table, index).to_pylist() == ["A", None, "C"]
