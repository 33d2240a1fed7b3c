"""Index update of +1 contribution, in process, before and after the segmented index, in the same run.

    python eval/bench/bench_segments.py                          # 10,000 and 100,000 contributions
    python eval/bench/bench_segments.py --size 1000000 --rounds 20
    python eval/bench/bench_segments.py --baseline-rev 2ea22ad   # the code to compare with (default:
                                                                 # the merge base with main)

Per size: a generated project (cached under $AGORA_BENCH_DIR), one plain clone per implementation, each
indexed once. Then, round after round, one new contribution is appended to the origin, and each
implementation (a long-lived worker process with its own source tree on sys.path) fetches it by plain
`git fetch` and times `ops.indexing.refresh` alone: both see the same commits, interleaved, on the same
machine state. Also timed: loading the whole contributions table, and the columns `git agora log`
reads. Ratios: after / before per size, and the after figure at each size against the smallest size.
Results: bench-out/bench_segments.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, WORK_DIR, env, plain_clone, project, ratio, sh, tracegen, write_json

ACCOUNTS = {10_000: 40, 100_000: 100, 1_000_000: 1000}
LOG_COLUMNS = ["sha", "account", "timestamp", "title", "tags", "metrics", "parents", "target", "verdict", "reasons"]

WORKER = r"""
import json, sys, time
from git_agora.ops import indexing
from git_agora.project import Project
from git_agora.index import store
clone = sys.argv[1]
for line in sys.stdin:
    cmd = line.split()
    t = time.perf_counter()
    extra = {}
    if cmd[0] == "rebuild":
        indexing.refresh(Project.open(clone), rebuild=True)
    elif cmd[0] == "update":
        report = indexing.refresh(Project.open(clone))
        extra["new_rows"] = report.new_rows
    elif cmd[0] == "load":
        p = Project.open(clone)
        columns = cmd[1].split(",") if len(cmd) > 1 else None
        t = time.perf_counter()
        kwargs = {"columns": columns} if columns and "columns" in store.load_index.__code__.co_varnames else {}
        table = store.load_index(p.repo, indexing._rules(p), update=False, **kwargs).contributions
        extra["rows"] = table.num_rows
    print(json.dumps({"s": time.perf_counter() - t, **extra}), flush=True)
"""


class Worker:
    def __init__(self, src: Path, clone: Path):
        e = env()
        e["PYTHONPATH"] = str(src)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(clone)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=e,
            cwd=clone,
        )

    def ask(self, command: str) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker died on {command!r}")
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()


def baseline_source(rev: str, into: Path) -> Path:
    """The `src/` tree of `rev`, exported from this repository."""
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def fetch(clone: Path) -> None:
    sh("git", "fetch", "-q", "--no-tags", "origin", "+refs/agora/log/*:refs/agora/remotes/origin/log/*", cwd=clone)


def summary(times: list[float]) -> dict:
    return {
        "median": statistics.median(times),
        "mean": statistics.fmean(times),
        "max": max(times),
        "all": [round(t, 4) for t in times],
    }


def bench_size(n: int, rounds: int, sources: dict[str, Path], fresh: bool) -> dict:
    accounts = ACCOUNTS.get(n, max(2, min(1000, n // 1000)))
    print(f"\n== {n} contributions, {accounts} accounts", flush=True)
    cached = project(n, accounts, fresh=fresh)
    origin = WORK_DIR / f"segments-origin-{n}.git"  # a scratch copy: the rounds append to it
    shutil.rmtree(origin, ignore_errors=True)
    shutil.copytree(cached, origin, symlinks=True)
    workers = {}
    for name, src in sources.items():
        clone = plain_clone(origin, WORK_DIR / f"segments-clone-{n}-{name}")
        workers[name] = Worker(src, clone)
        built = workers[name].ask("rebuild")
        print(f"  {name:<6} rebuild {built['s']:7.2f} s", flush=True)
    times: dict[str, list[float]] = {name: [] for name in sources}
    kinds = ["result", "insight", "verification", "hypothesis", "result"]
    for i in range(rounds):
        tracegen.append(origin, None, n=1, kind=kinds[i % len(kinds)])
        for name, worker in workers.items():
            fetch(WORK_DIR / f"segments-clone-{n}-{name}")
            answer = worker.ask("update")
            assert answer["new_rows"] == 1, answer
            times[name].append(answer["s"])
    res: dict = {"contributions": n, "accounts": accounts, "rounds": rounds}
    for name, worker in workers.items():
        res[name] = {
            "update_s": summary(times[name]),
            "load_all_s": min(worker.ask("load")["s"] for _ in range(3)),
            "load_log_columns_s": min(worker.ask("load " + ",".join(LOG_COLUMNS))["s"] for _ in range(3)),
        }
        worker.close()
        clone = WORK_DIR / f"segments-clone-{n}-{name}"
        manifest = clone / ".git" / "agora" / "index" / "manifest.json"
        if manifest.exists():
            res[name]["segments"] = len(json.loads(manifest.read_text())["segments"])
    if "before" in res:
        res["update_ratio_after_before"] = ratio(
            res["after"]["update_s"]["median"], res["before"]["update_s"]["median"]
        )
    for name in sources:
        r = res[name]
        print(
            f"  {name:<6} +1 update median {r['update_s']['median'] * 1000:7.1f} ms  mean "
            f"{r['update_s']['mean'] * 1000:7.1f} ms  max {r['update_s']['max'] * 1000:7.1f} ms   load all "
            f"{r['load_all_s']:6.3f} s   load log columns {r['load_log_columns_s']:6.3f} s"
            + (f"   segments {r['segments']}" if "segments" in r else ""),
            flush=True,
        )
    if "update_ratio_after_before" in res:
        print(f"  after / before (median +1 update): {res['update_ratio_after_before']:.2f}x")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="+1 index update before and after the segmented index")
    ap.add_argument("--size", type=int, action="append", help="contributions (repeatable; default 10000, 100000)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--baseline-rev", help="the code to compare with (default: merge-base HEAD main)")
    ap.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    ap.add_argument("--fresh", action="store_true", help="regenerate the cached projects")
    args = ap.parse_args(argv)
    sizes = args.size or [10_000, 100_000]
    with tempfile.TemporaryDirectory(prefix="agora-baseline-") as tmp:
        sources = {}
        if not args.no_baseline:
            rev = args.baseline_rev or sh("git", "merge-base", "HEAD", "main", cwd=ROOT).strip()
            sources["before"] = baseline_source(rev, Path(tmp))
            print(f"before: {rev}")
        sources["after"] = ROOT / "src"
        results = [bench_size(n, args.rounds, sources, args.fresh) for n in sizes]
    smallest = results[0]["after"]["update_s"]["median"]
    for r in results:
        r["after_vs_smallest"] = ratio(r["after"]["update_s"]["median"], smallest)
    path = write_json("bench_segments", {"results": results, "baseline_rev": args.baseline_rev})
    print(f"\n{'size':>9} {'before ms':>10} {'after ms':>9} {'after/before':>13} {'after vs smallest':>18}")
    for r in results:
        before = r.get("before", {}).get("update_s", {}).get("median")
        print(
            f"{r['contributions']:>9} {before * 1000 if before else float('nan'):>10.1f} "
            f"{r['after']['update_s']['median'] * 1000:>9.1f} "
            f"{r.get('update_ratio_after_before', float('nan')):>12.2f}x {r['after_vs_smallest']:>17.2f}x"
        )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
