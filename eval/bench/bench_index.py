"""Index build speed: full rebuild against `git log` on the same clone, one-contribution updates, memory.

    python eval/bench/bench_index.py                 # 1,703 / 10,000 / 100,000 contributions
    python eval/bench/bench_index.py --size 100000   # one size
    python eval/bench/bench_index.py --size 10000 --no-profile --repeat 3

Per size: a generated project (cached under $AGORA_BENCH_DIR, default /tmp/agora-bench) fetched by
plain git into a clone; then
- baseline: `git log --all --date-order -z --format='%H %T %ct %P%n%B'` (the floor the reader uses);
- `update_index(repo, rebuild=True)` in-process, and `git agora index --rebuild` (the CLI, which also
  loads the index afterwards), each as a ratio to the baseline (target at 100,000: at most 2x);
- a phase breakdown of the rebuild (git log walk, parsing in workers, log listing, graph rules,
  finalize, write; the evaluator policy and signatures are left out);
- incremental: append one contribution on the origin, `git fetch`, then time `update_index` alone
  (target at 100,000: under 0.3 s);
- peak memory of a rebuild in a fresh subprocess (ru_maxrss of Python, and of its git children;
  target at 100,000: under 1 GB);
- with profiling (default at the largest size): cProfile top 15 (cumulative) of the rebuild and of the
  incremental update, also written to bench-out/.
Results: bench-out/bench_index.json.

    python eval/bench/bench_index.py --peak CLONE [--rounds 2]

Peak-memory mode, for a large clone that already exists (1,000,000 contributions: generating one takes
an hour; use a scratch copy, e.g. `cp -a $AGORA_BENCH_DIR/scale-clone-1000000 /tmp/peak-1m`, since the
index there is rebuilt): `git agora index --rebuild` (the CLI, as a user runs it) against the `git log`
floor, interleaved round by round, each in its own process tree: wall time, CPU time of the tree and the
peak resident set of its largest process (what `/usr/bin/time -v` reports as max RSS: the main process,
a worker or git, whichever is largest). Targets at 1,000,000: peak < 2 GB, rebuild <= 2x the floor's time.
Results: bench-out/bench_index_peak.json.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    OUT_DIR,
    WORK_DIR,
    env,
    plain_clone,
    project,
    ratio,
    sample,
    sh,
    stats,
    tracegen,
    verdict,
    write_json,
)
from git_agora.index import build, listing, parallel, reader, segments, store
from git_agora.ops.indexing import refresh
from git_agora.project import Project
from git_agora.refs.store import Repository

ACCOUNTS = {1703: 17, 10_000: 40, 100_000: 100}
BASELINE_FORMAT = "%H %T %ct %P%n%B"
REBUILD_TARGET = 2.0
INCREMENTAL_TARGET_S = 0.3
MEMORY_TARGET_MB = 1024


def git_log_baseline(clone: Path) -> None:
    subprocess.run(
        ["git", "log", "--all", "--date-order", "-z", f"--format={BASELINE_FORMAT}"],
        cwd=clone,
        stdout=subprocess.DEVNULL,
        check=True,
    )


def rebuild_in_process(clone: Path) -> None:
    refresh(Project.open(clone), rebuild=True)


def phases(clone: Path) -> dict[str, float]:
    """The rebuild, step by step (mirrors store._advance; private API, for attribution only)."""
    repo = Repository.discover(clone)
    out: dict[str, float] = {}
    t = time.perf_counter()
    tips = store.current_tips(repo)
    config = Project.open(clone).config
    out["tips+config"] = time.perf_counter() - t
    t = time.perf_counter()
    blocks = list(reader.walk_blocks(repo.common_path, sorted(set(tips.values())), []))
    out["git log walk"] = time.perf_counter() - t
    t = time.perf_counter()
    work, links = parallel.parse_all(blocks, config.metric, int(time.time()), lambda links: links)
    out["parse in workers + sort"] = time.perf_counter() - t
    t = time.perf_counter()
    listed = listing.entries_from_walk(repo.common_path, tips, links)
    out["log listing from the walk"] = time.perf_counter() - t
    t = time.perf_counter()
    table, refs = parallel.graph_rows(work, {}, None, listed)
    out["graph rules + table"] = time.perf_counter() - t
    t = time.perf_counter()
    table = build.finalize(table, presorted=True)
    out["finalize"] = time.perf_counter() - t
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        segments.write_segment(Path(tmp), 1, table, refs, 0)
    out["write Parquet"] = time.perf_counter() - t
    out["total"] = sum(out.values())
    return out


def peak_memory(clone: Path) -> dict:
    code = (
        "import resource, sys\n"
        "from git_agora.ops.indexing import refresh\n"
        "from git_agora.project import Project\n"
        f"refresh(Project.open({str(clone)!r}), rebuild=True)\n"
        "s = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "c = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(s, c)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env())
    self_kb, child_kb = map(int, out.stdout.split())
    return {"python_mb": self_kb / 1024, "git_children_mb": child_kb / 1024}


PEAK_TARGET_MB = 2048

# runs a command in its own process tree; prints its wall time, the tree's CPU time and the largest
# resident set any of its processes reached (ru_maxrss of the waited-for children)
MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
    "wall = time.perf_counter() - t\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(wall, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)\n"
)


def measured(command: list[str], cwd: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, *command], cwd=cwd, capture_output=True, text=True, check=True, env=env()
    )
    wall, cpu, peak_mb = map(float, out.stdout.split())
    return {"wall_s": wall, "cpu_s": cpu, "peak_mb": peak_mb}


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def peak_against_floor(clone: Path, rounds: int) -> dict:
    """`git agora index --rebuild` against the `git log` floor on `clone`, interleaved."""
    floor_cmd = ["git", "log", "--all", "--date-order", "-z", f"--format={BASELINE_FORMAT}"]
    agora_cmd = [sys.executable, "-c", "from git_agora.cli import main; main()", "index", "--rebuild"]
    commits = int(sh("git", "rev-list", "--all", "--count", cwd=clone))
    print(f"\n== peak memory: {clone} ({commits} commits), {rounds} round(s)", flush=True)
    runs = []
    for i in range(rounds):
        before = load()
        floor = measured(floor_cmd, clone)
        rebuild = measured(agora_cmd, clone)
        runs.append({"floor": floor, "rebuild": rebuild, "load_before": before, "load_after": load()})
        print(
            f"  round {i + 1} (load {before} -> {load()}): git log floor {floor['wall_s']:.1f} s wall, "
            f"{floor['cpu_s']:.1f} s CPU, peak {floor['peak_mb']:.0f} MB | index --rebuild "
            f"{rebuild['wall_s']:.1f} s wall, {rebuild['cpu_s']:.1f} s CPU, peak {rebuild['peak_mb']:.0f} MB",
            flush=True,
        )
    peak = max(r["rebuild"]["peak_mb"] for r in runs)
    wall = statistics.median(r["rebuild"]["wall_s"] / r["floor"]["wall_s"] for r in runs)
    cpu = statistics.median(r["rebuild"]["cpu_s"] / r["floor"]["cpu_s"] for r in runs)
    floor_peak = max(r["floor"]["peak_mb"] for r in runs)
    print(
        f"  rebuild peak {peak:.0f} MB (floor {floor_peak:.0f} MB, {ratio(peak, floor_peak):.2f}x; target < "
        f"{PEAK_TARGET_MB} MB: {verdict(peak, PEAK_TARGET_MB - 1)}); time {wall:.2f}x the floor's wall, "
        f"{cpu:.2f}x its CPU (target <= {REBUILD_TARGET}x: {verdict(wall, REBUILD_TARGET)})"
    )
    return {
        "clone": str(clone),
        "commits": commits,
        "runs": runs,
        "peak_mb": peak,
        "floor_peak_mb": floor_peak,
        "ratio_wall": wall,
        "ratio_cpu": cpu,
    }


def profile(fn, path: Path, top: int = 15) -> str:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    prof.dump_stats(str(path.with_suffix(".prof")))
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
    text = buf.getvalue()
    path.write_text(text)
    return text


def bench_size(n: int, repeat: int, fresh: bool, do_profile: bool, memory: bool) -> dict:
    accounts = ACCOUNTS.get(n, max(2, min(100, n // 1000)))
    print(f"\n== {n} contributions, {accounts} accounts", flush=True)
    cached = project(n, accounts, fresh=fresh)
    origin = WORK_DIR / f"index-origin-{n}.git"  # a scratch copy: the incremental runs append to it
    shutil.rmtree(origin, ignore_errors=True)
    shutil.copytree(cached, origin, symlinks=True)
    clone = plain_clone(origin, WORK_DIR / f"index-clone-{n}")
    commits = int(sh("git", "rev-list", "--all", "--count", cwd=clone))
    res: dict = {"contributions": n, "accounts": accounts, "commits": commits}

    base = sample(lambda: git_log_baseline(clone), repeat, warmup=1)
    res["git_log_baseline_s"] = stats(base)
    inproc = sample(lambda: rebuild_in_process(clone), repeat, warmup=1)
    res["rebuild_in_process_s"] = stats(inproc)
    cli = sample(lambda: sh("git", "agora", "index", "--rebuild", cwd=clone), repeat)
    res["rebuild_cli_s"] = stats(cli)
    b = res["git_log_baseline_s"]["median"]
    res["ratio_in_process"] = ratio(res["rebuild_in_process_s"]["median"], b)
    res["ratio_cli"] = ratio(res["rebuild_cli_s"]["median"], b)
    print(f"  git log baseline        {b:8.3f} s")
    print(
        f"  rebuild in-process      {res['rebuild_in_process_s']['median']:8.3f} s   "
        f"ratio {res['ratio_in_process']:.2f}x"
        f"  (target <= {REBUILD_TARGET}x at 100k: {verdict(res['ratio_in_process'], REBUILD_TARGET)})"
    )
    print(f"  git agora index --rebuild {res['rebuild_cli_s']['median']:6.3f} s   ratio {res['ratio_cli']:.2f}x")

    res["phases_s"] = phases(clone)
    for name, t in res["phases_s"].items():
        print(f"    {name:<24} {t:7.3f} s")

    # incremental: one new contribution on the origin, fetched by plain git, then update_index alone
    rebuild_in_process(clone)
    kinds = ["result", "insight", "verification", "hypothesis", "result"]

    def setup(i=[0]):  # noqa: B006 - the counter lives across calls on purpose
        tracegen.append(origin, None, n=1, kind=kinds[i[0] % len(kinds)])
        i[0] += 1
        sh("git", "fetch", "-q", "--no-tags", "origin", "+refs/agora/log/*:refs/agora/remotes/origin/log/*", cwd=clone)

    inc = sample(lambda: refresh(Project.open(clone)), max(repeat, 5), setup=setup)
    res["incremental_s"] = stats(inc)
    print(
        f"  incremental update (+1) {res['incremental_s']['median']:8.3f} s   "
        f"(target < {INCREMENTAL_TARGET_S} s: {verdict(res['incremental_s']['median'], INCREMENTAL_TARGET_S)})"
    )
    noop = sample(lambda: refresh(Project.open(clone)), repeat)
    res["noop_update_s"] = stats(noop)
    print(f"  no-op update            {res['noop_update_s']['median']:8.3f} s")
    check = sample(lambda: sh("git", "agora", "index", "--check", cwd=clone, check=False), 1)
    res["index_check_ok"] = "index ok" in sh("git", "agora", "index", "--check", cwd=clone, check=False)
    res["index_check_s"] = check[0]
    print(f"  index --check after the incremental updates: {'ok' if res['index_check_ok'] else 'DIFFERS'}")

    if memory:
        res["peak_memory_rebuild"] = peak_memory(clone)
        mb = res["peak_memory_rebuild"]["python_mb"]
        print(
            f"  peak memory of a rebuild: python {mb:.0f} MB, git children "
            f"{res['peak_memory_rebuild']['git_children_mb']:.0f} MB (target < {MEMORY_TARGET_MB} MB: "
            f"{verdict(mb, MEMORY_TARGET_MB)})"
        )
    if do_profile:
        text = profile(lambda: rebuild_in_process(clone), OUT_DIR / f"profile-index-rebuild-{n}.txt")
        print(f"\n  cProfile, rebuild at {n} (top 15 cumulative):\n{text}")
        setup()
        text = profile(lambda: refresh(Project.open(clone)), OUT_DIR / f"profile-index-incremental-{n}.txt")
        print(f"\n  cProfile, incremental update at {n} (top 15 cumulative):\n{text}")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="index rebuild / incremental / memory benchmark")
    ap.add_argument("--size", type=int, action="append", help="contributions (repeatable; default 1703, 10000, 100000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fresh", action="store_true", help="regenerate the cached projects")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--profile-all", action="store_true", help="profile every size, not only the largest")
    ap.add_argument("--peak", type=Path, metavar="CLONE", help="peak-memory mode on this (scratch) clone")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the peak-memory mode")
    args = ap.parse_args(argv)
    if args.peak:
        print(f"results: {write_json('bench_index_peak', peak_against_floor(args.peak.resolve(), args.rounds))}")
        return 0
    sizes = args.size or [1703, 10_000, 100_000]
    OUT_DIR.mkdir(exist_ok=True)
    results = []
    for n in sizes:
        largest = n == max(sizes)
        results.append(
            bench_size(
                n, args.repeat, args.fresh, not args.no_profile and (largest or args.profile_all), memory=largest
            )
        )
    path = write_json("bench_index", {"results": results})
    print(
        f"\n{'size':>8} {'git log':>8} {'rebuild':>8} {'ratio':>6} {'CLI':>7} {'ratio':>6} {'+1 upd':>7} {'no-op':>7}"
    )
    for r in results:
        print(
            f"{r['contributions']:>8} {r['git_log_baseline_s']['median']:>8.3f} "
            f"{r['rebuild_in_process_s']['median']:>8.3f} "
            f"{r['ratio_in_process']:>5.2f}x {r['rebuild_cli_s']['median']:>7.3f} {r['ratio_cli']:>5.2f}x "
            f"{r['incremental_s']['median']:>7.3f} {r['noop_update_s']['median']:>7.3f}"
        )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
