"""The site in a real headless Chromium (Debian's `chromium`, driven by Playwright): the demo project,
the paper-scale trace and a project whose descriptions try to inject scripts.

Browser missing: the tests skip, except under `.ci/run` (AGORA_REQUIRE_BROWSER=1), which installs it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import git_agora as agora
from site_projects import (
    CHROMIUM_ARGS,
    SCRIPT,
    Watched,
    browser_or_skip,
    demo_project,
    hostile_project,
    isolated_env,
    paper_project,
    served,
)

pytestmark = pytest.mark.slow

TOP_PAGES = ("index.html", "ratchet.html", "clusters.html", "contributors.html", "lineage/index.html")


@pytest.fixture(scope="module")
def browser():
    sync_playwright, executable = browser_or_skip()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


def build(clone: Path, site: Path) -> dict:
    project = agora.open_project(clone)
    report = agora.build_site(project, site)
    stats = agora.stats(project)
    return {"clone": clone, "site": site, "report": report, "stats": stats, "project": project}


@pytest.fixture(scope="module")
def demo(tmp_path_factory, home):
    base = tmp_path_factory.mktemp("demo")
    with isolated_env(home):
        yield build(demo_project(base), base / "site")


@pytest.fixture(scope="module")
def paper(tmp_path_factory, home):
    base = tmp_path_factory.mktemp("paper")
    with isolated_env(home):
        yield build(paper_project(base), base / "site")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, home):
    base = tmp_path_factory.mktemp("hostile")
    with isolated_env(home):
        project = hostile_project(base)
        built = build(project.clone, base / "site")
        built["results"] = project.results
        yield built


@pytest.fixture(params=["demo", "paper"])
def built(request):
    return request.getfixturevalue(request.param)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watched = Watched(context)
    yield watched
    context.close()


def pages_of(site: Path, sample: int | None = None) -> list[str]:
    """The top pages, the list, and (a sample of) the lineage and contribution pages."""
    names = [*TOP_PAGES, "contributions/1.html"]
    lineages = sorted(p.relative_to(site).as_posix() for p in (site / "lineage").glob("*.html"))
    contributions = sorted(p.relative_to(site).as_posix() for p in (site / "c").glob("*/*.html"))
    if sample is not None:
        lineages = lineages[:: max(1, len(lineages) // sample)]
        contributions = contributions[:: max(1, len(contributions) // sample)]
    return names + lineages + contributions


def test_every_page_loads_without_errors_or_failed_requests(built, page):
    site = built["site"]
    sample = None if built["report"].contribution_pages < 200 else 25
    with served(built["clone"], site) as base:
        for name in pages_of(site, sample):
            page.visit(base + name)
    assert not page.problems, page.problems
    assert not page.dialogs


def test_pages_work_from_file_urls(demo, page):
    site = demo["site"]
    for name in pages_of(site, 5):
        page.visit((site / name).as_uri())
    assert not page.problems, page.problems
    shown = page.visit((site / "ratchet.html").as_uri())
    assert shown.locator('#plot [data-kind="scored"]').count() == demo["stats"].scored_results


def test_ratchet_plot_has_one_point_per_scored_result(built, page):
    stats = built["stats"]
    shown = page.visit((built["site"] / "ratchet.html").as_uri())
    points = shown.locator('#plot [data-kind="scored"]')
    assert stats.scored_results > 0
    assert points.count() == stats.scored_results
    shas = shown.eval_on_selector_all('#plot [data-kind="scored"]', "els => els.map(e => e.dataset.sha)")
    assert len(set(shas)) == stats.scored_results
    assert shown.locator("#plot .best").count() == stats.new_bests
    assert shown.locator("#plot path.step").count() == 1
    assert not page.problems, page.problems


def test_clicking_a_point_opens_its_contribution_page(built, page):
    ratchet = (built["site"] / "ratchet.html").as_uri()
    first = page.visit(ratchet).locator('#plot [data-kind="scored"]').first.get_attribute("data-sha")
    for sha in (built["stats"].best_sha, first):
        shown = page.visit(ratchet)
        shown.locator(f'#plot [data-sha="{sha}"]').dispatch_event("click")
        shown.wait_for_url(re.compile(rf"/c/{sha[:2]}/{sha}\.html$"))
        assert shown.locator("dl.facts code").first.inner_text() == sha
    assert not page.problems, page.problems


def test_hovering_a_point_shows_title_account_and_sha(demo, page):
    best = agora.show(demo["project"], demo["stats"].best_sha).contribution
    shown = page.visit((demo["site"] / "ratchet.html").as_uri())
    shown.locator(f'#plot [data-sha="{best.sha}"]').hover(force=True)
    tip = shown.locator(".tip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert best.title[:40] in text and best.account in text and best.sha[:12] in text


def test_lineage_of_the_best_shows_its_milestones(built, page):
    stats = built["stats"]
    lineage = agora.lineage(built["project"], stats.best_sha)
    milestones = [m.sha for m in lineage.milestones]
    assert milestones
    shown = page.visit((built["site"] / "lineage" / f"{stats.best_sha}.html").as_uri())
    rows = shown.eval_on_selector_all("tr[data-milestone]", "els => els.map(e => e.dataset.milestone)")
    assert rows == milestones
    drawn = shown.eval_on_selector_all("#plot [data-milestone]", "els => els.map(e => e.dataset.sha)")
    assert drawn == milestones
    assert shown.locator(f'#plot .target[data-sha="{stats.best_sha}"]').count() == 1
    assert shown.locator("#plot circle").count() == lineage.size
    assert shown.locator("#plot .edge").count() == lineage.edges
    assert shown.locator("#plot .edge.cross").count() == lineage.cross_account_edges
    assert shown.locator("#plot .reproduced").count() == len(lineage.reproduced)
    assert not page.problems, page.problems


def test_the_overview_leads_with_the_warning_and_links_the_best(demo, page):
    shown = page.visit((demo["site"] / "index.html").as_uri())
    summary = agora.analyze(demo["project"], embed=False).summary
    first = shown.locator("main > *").first
    if summary.warning:
        assert "warning" in (first.get_attribute("class") or "")
    assert shown.locator("section.slot").count() == 3
    assert shown.locator("table.leaders tbody tr").count() == min(100, summary.results)
    shown.locator("p.best a").first.click()
    assert page.page.url.endswith(f"{summary.best.sha}.html")


def test_cluster_map_draws_the_window(demo, page):
    shown = page.visit((demo["site"] / "clusters.html").as_uri())
    assert shown.locator("#plot circle").count() == demo["report"].mapped_contributions > 0
    assert not page.problems, page.problems


def test_injected_descriptions_do_not_execute(hostile, page):
    site = hostile["site"]
    with served(hostile["clone"], site) as base:
        names = pages_of(site) + [f"_diff/{hostile['results']['unscored']}.html"]
        for name in names:
            shown = page.visit(base + name)
            assert shown.evaluate("typeof window.__pwned") == "undefined", name
            assert shown.locator("img, main svg svg").count() == 0, name
    assert not page.dialogs and not page.problems, (page.dialogs, page.problems)
    sha = hostile["results"]["baseline"]
    shown = page.visit((site / "c" / sha[:2] / f"{sha}.html").as_uri())
    assert SCRIPT in shown.locator("pre.description").inner_text()  # shown as text, whole
    shown = page.visit((site / "ratchet.html").as_uri())
    shown.locator(f'#plot [data-sha="{hostile["results"]["better"]}"]').hover(force=True)
    assert "</script>" in shown.locator(".tip").inner_text()
    assert shown.evaluate("typeof window.__pwned") == "undefined"


def test_cluster_map_says_why_without_embeddings(hostile, page):
    shown = page.visit((hostile["site"] / "clusters.html").as_uri())
    assert "embeddings cover 0%" in shown.locator("#no-map").inner_text()
    assert shown.locator("#plot").count() == 0


def test_diffs_load_on_demand_under_serve(hostile, page):
    sha = hostile["results"]["unscored"]
    with served(hostile["clone"], hostile["site"]) as base:
        shown = page.visit(f"{base}c/{sha[:2]}/{sha}.html")
        shown.locator("a.ondemand").click()
        shown.wait_for_url(re.compile(rf"/_diff/{sha}\.html$"))
        assert "+order = 4" in shown.locator("pre.diff").inner_text()
    static = page.visit((hostile["site"] / "c" / sha[:2] / f"{sha}.html").as_uri())
    assert static.locator("a.ondemand").is_hidden()  # no server behind a file: the link would fail
    assert not page.problems, page.problems


def test_an_unverified_new_best_is_hollow_as_the_legend_says(tmp_path, home, page):
    """The ratchet's legend says filled means verified: the new-best mark of the founded project's
    unverified baseline is drawn hollow (before: filled gold whatever its status)."""
    from git_agora.demo.run import DemoPlan, found_project

    with isolated_env(home):
        plan = DemoPlan.create(tmp_path / "project", workers=0, rounds=0, seed=0)
        built = build(found_project(plan), tmp_path / "site")
    shown = page.visit((built["site"] / "ratchet.html").as_uri())
    best = shown.locator("#plot .best")
    assert best.count() == 1 and "s-u" in (best.get_attribute("class") or "")
    opacity = best.evaluate("e => parseFloat(getComputedStyle(e).fillOpacity)")
    assert opacity < 0.5, opacity
    assert not page.problems, page.problems
