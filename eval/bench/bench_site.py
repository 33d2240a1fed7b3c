"""Benchmark `git agora site` on a 100,000-contribution project with its embeddings cached.

Targets (issue 12): the site builds in under 60 s on 2 cores and no page is over 5 MB (shared scripts
and style sheets apart). The baseline measured in the same run is `git agora analyze --json` on the
same clone: the site does that analysis and then renders a page for every contribution, so the
ratio says what the rendering costs on top.

    python eval/bench/bench_site.py [--size 100000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from _common import BIN, WORK_DIR, plain_clone, project, ratio, sample, sh, stats, verdict, write_json

TARGET_S = 60.0
PAGE_LIMIT = 5_000_000


def prepared_clone(size: int, accounts: int) -> Path:
    """A clone with the index built and every description embedded (the lexical model), once."""
    origin = project(size, accounts)
    clone = WORK_DIR / f"site-clone-{size}"
    if not (clone / ".git" / "agora" / "index" / "embeddings.f32").exists():
        plain_clone(origin, clone)
        sh(str(BIN / "git-agora"), "index", cwd=clone)
        t = time.perf_counter()
        sh(str(BIN / "git-agora"), "analyze", "--model", "hashing", cwd=clone)
        print(f"  embedded {size} descriptions in {time.perf_counter() - t:.1f} s (cached from now on)", flush=True)
    return clone


def page_sizes(site: Path) -> dict:
    sizes = {p.relative_to(site).as_posix(): p.stat().st_size for p in site.rglob("*.html")}
    largest = max(sizes, key=sizes.__getitem__)
    top = sorted(((sizes[name], name) for name in ("index.html", "ratchet.html", "clusters.html")), reverse=True)
    contribution_pages = sorted(size for name, size in sizes.items() if name.startswith("c/"))
    return {
        "pages": len(sizes),
        "total_mb": sum(sizes.values()) / 1e6,
        "largest": largest,
        "largest_mb": sizes[largest] / 1e6,
        "top_pages_mb": {name: size / 1e6 for size, name in top},
        "contribution_page_median_kb": contribution_pages[len(contribution_pages) // 2] / 1e3,
        "contribution_page_max_kb": contribution_pages[-1] / 1e3,
        "assets_kb": sum(p.stat().st_size for p in (site / "assets").iterdir()) / 1e3,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    clone = prepared_clone(args.size, args.accounts)
    git_agora = str(BIN / "git-agora")
    baseline = stats(sample(lambda: sh(git_agora, "analyze", "--json", "--model", "hashing", cwd=clone), args.repeat))
    sites = [WORK_DIR / f"site-out-{n}" for n in range(args.repeat)]
    reports: list[dict] = []

    def clear() -> None:  # untimed: deleting 100,000 files is no part of a build
        shutil.rmtree(sites[len(reports)], ignore_errors=True)

    def build() -> None:
        reports.append(json.loads(sh(git_agora, "site", str(sites[len(reports)]), "--json", cwd=clone)))

    fresh = stats(sample(build, args.repeat, setup=clear))
    rebuild = stats(sample(lambda: sh(git_agora, "site", str(sites[-1]), "--json", cwd=clone), 1))
    sizes = page_sizes(sites[-1])
    report = reports[-1]
    median = fresh["median"]
    print(
        f"{args.size} contributions: site {median:.1f} s ({verdict(median, TARGET_S)}, target {TARGET_S:.0f} s), "
        f"{ratio(median, baseline['median']):.1f}x `analyze --json` ({baseline['median']:.2f} s); "
        f"rebuild of an unchanged project {rebuild['median']:.1f} s",
        flush=True,
    )
    print(
        f"  {sizes['pages']} pages, {sizes['total_mb']:.0f} MB; largest {sizes['largest']} "
        f"{sizes['largest_mb']:.2f} MB ({verdict(sizes['largest_mb'], PAGE_LIMIT / 1e6)}, limit 5 MB; "
        f"shared assets {sizes['assets_kb']:.0f} KB); "
        f"a contribution page {sizes['contribution_page_median_kb']:.1f} KB (median)",
        flush=True,
    )
    print(
        f"  {report['plotted_results']} of {report['scored_results']} scored results plotted, "
        f"{report['mapped_contributions']} on the cluster map, {report['lineage_pages']} lineage pages, "
        f"{report['diffs']} diffs",
        flush=True,
    )
    for note in report["notes"]:
        print(f"  note: {note}", flush=True)
    path = write_json(
        "site",
        {"size": args.size, "site": fresh, "rebuild": rebuild, "analyze": baseline, "pages": sizes, "report": report},
    )
    print(f"wrote {path} (the built sites stay in {WORK_DIR}; deleting 100,000 files takes a while)")
    return 0 if median <= TARGET_S and sizes["largest_mb"] * 1e6 <= PAGE_LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
