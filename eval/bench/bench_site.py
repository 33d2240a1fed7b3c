"""Benchmark `git agora site` on a 100,000-contribution project with its embeddings cached.

Targets (issue 12): the site builds in under 60 s on 2 cores and no page is over 5 MB (shared scripts
and style sheets apart). The baseline measured in the same run is `git agora analyze --json` on the
same clone: the site does that analysis and then renders a page for every contribution, so the
ratio says what the rendering costs on top.

    python eval/bench/bench_site.py [--size 100000] [--repeat 2]

With `--baseline-src DIR` (the src/ of another tree, e.g. `git archive 18bb7a7 src | tar -x -C
/tmp/old`), it compares instead that code with this tree in the same run, baseline first, then this
tree, `--repeat` times: each build a whole `git agora site --json` process (wall time, CPU time and
peak RSS from wait4), into a fresh folder deleted untimed; below `--same-up-to` contributions the two
sites must be byte for byte the same (the overview's build time apart). `--clone PATH` builds from an
existing clone (only read: its index must be current), for example the 1M benchmark clone:

    python eval/bench/bench_site.py --size 100000 --baseline-src /tmp/old/src
    python eval/bench/bench_site.py --clone /tmp/agora-bench/scale-clone-1000000 --baseline-src /tmp/old/src --repeat 1
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import BIN, ROOT, WORK_DIR, env, plain_clone, project, ratio, sample, sh, stats, verdict, write_json

SITE = "import sys; from git_agora.cli import main; sys.argv = ['git-agora'] + sys.argv[1:]; main()"

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


def build(src: Path, clone: Path, out: Path) -> dict:
    """One `git agora site OUT --json` process run from the source tree `src`: wall and CPU seconds,
    peak RSS (MB) and its report."""
    shutil.rmtree(out, ignore_errors=True)
    log = out.with_name(out.name + ".out")
    with open(log, "wb") as stdout, open(log.with_suffix(".err"), "wb") as stderr:
        t = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", SITE, "site", str(out), "--json"],
            cwd=clone, env={**env(), "PYTHONPATH": str(src)}, stdout=stdout, stderr=stderr,
        )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"git agora site failed in {clone}: {log.with_suffix('.err').read_text()[-2000:]}")
    out_text = log.read_text()
    cpu = usage.ru_utime + usage.ru_stime
    return {"seconds": seconds, "cpu_s": cpu, "peak_mb": usage.ru_maxrss / 1024, "report": json.loads(out_text)}


def same_site(a: Path, b: Path) -> list[str]:
    """The files that differ between two sites (the overview's build time apart)."""
    differ = []
    for folder, _, names in os.walk(a):
        for name in names:
            left = Path(folder) / name
            right = b / left.relative_to(a)
            if not right.exists():
                differ.append(str(left.relative_to(a)))
            elif name == "index.html" and left.parent == a:
                stamp = re.compile(rb" on \d{4}-\d\d-\d\d \d\d:\d\d UTC")
                if stamp.sub(b"", left.read_bytes()) != stamp.sub(b"", right.read_bytes()):
                    differ.append("index.html")
            elif not filecmp.cmp(left, right, shallow=False):
                differ.append(str(left.relative_to(a)))
    count = sum(len(names) for _, _, names in os.walk(b))
    if count != sum(len(names) for _, _, names in os.walk(a)):
        differ.append(f"file counts differ ({count} in {b})")
    return differ


def compare(args: argparse.Namespace) -> int:
    clone = args.clone or prepared_clone(args.size, args.accounts)
    sides = {"baseline": args.baseline_src, "this tree": ROOT / "src"}
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    load = []
    for n in range(args.repeat):
        for name, src in sides.items():
            out = WORK_DIR / f"site-compare-{name.replace(' ', '-')}"
            load.append(os.getloadavg()[0])
            runs[name].append(build(src, clone, out))
            r = runs[name][-1]
            print(
                f"  {name} #{n + 1}: {r['seconds']:.1f} s wall, {r['cpu_s']:.1f} s CPU, {r['peak_mb']:.0f} MB peak "
                f"(load {load[-1]:.1f})",
                flush=True,
            )
            if r["report"]["contribution_pages"] > args.same_up_to:
                shutil.rmtree(out, ignore_errors=True)  # at 1M a site is 6 GB: one on disk at a time
    pages = runs["this tree"][-1]["report"]["contribution_pages"]
    differ: list[str] = []
    if pages <= args.same_up_to:
        differ = same_site(*(WORK_DIR / f"site-compare-{name.replace(' ', '-')}" for name in sides))
        print(f"  same pages: {'yes' if not differ else 'NO: ' + ', '.join(differ[:5])}", flush=True)
    old, new = (min(runs[name], key=lambda r: r["cpu_s"]) for name in sides)
    print(
        f"{pages} contributions: this tree {new['seconds']:.1f} s wall / {new['cpu_s']:.1f} s CPU / "
        f"{new['peak_mb']:.0f} MB peak; baseline {old['seconds']:.1f} s / {old['cpu_s']:.1f} s CPU / "
        f"{old['peak_mb']:.0f} MB: {ratio(old['cpu_s'], new['cpu_s']):.2f}x less CPU, "
        f"{ratio(old['peak_mb'], new['peak_mb']):.2f}x less memory (peak < 2 GB: "
        f"{verdict(new['peak_mb'], 2000)}); load {min(load):.1f}-{max(load):.1f}",
        flush=True,
    )
    path = write_json("site-compare", {"clone": str(clone), "runs": runs, "load": load, "differ": differ})
    print(f"wrote {path}")
    return 0 if not differ and new["peak_mb"] < 2000 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--baseline-src", type=Path, help="src/ of the code to compare with (see above)")
    parser.add_argument("--clone", type=Path, help="an existing clone with a current index (only read)")
    parser.add_argument("--same-up-to", type=int, default=200_000, help="compare the sites' bytes up to this size")
    args = parser.parse_args()
    if args.baseline_src:
        return compare(args)
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
