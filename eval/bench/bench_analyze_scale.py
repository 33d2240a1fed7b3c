"""Benchmark a warm `git agora analyze --json` at scale (issue 11: < 5 s and < 2 GB at 1,000,000
contributions / 1,000 accounts, no new embeddings), against the code of another source tree in the
same run.

Figures for this tree and for the baseline tree (`--baseline-src`, e.g. a `git worktree`
of the commit before the change), each the whole CLI process (wall time and peak RSS):

- warm: the index is current and every vector the analysis needs is cached (run once before);
- warm again: this tree's follow-on cache (`.git/agora/index/follow_ons.parquet`) is current too;
- +1: one new contribution is appended to the origin (`tracegen.append`) and fetched, and its vector
  computed (by a baseline run, which leaves this tree's follow-on cache one contribution behind); then
  analyze;
- first analyze (issue 11: its peak): the follow-on cache deleted before each run, so n(v) is counted
  in one batch (`frontier.descendants`), baseline and this tree in turn (`--rounds` times), then this
  tree once more with the cache it just wrote (the warm figure of the same run).

The origin is copied first, so the cached generated project is not modified. `--model hashing` keeps
the embedding model out of the figure. `--clone PATH` runs only the first-analyze comparison in an
existing clone with an index and vectors (a copy: the follow-on cache is deleted and rewritten there),
with `AGORA_EMBED_BUDGET=0` and the project's model, so nothing is embedded.

    python eval/bench/bench_analyze_scale.py --size 100000 --accounts 100 --baseline-src /tmp/base/src
    python eval/bench/bench_analyze_scale.py --size 1000000 --accounts 1000 --baseline-src /tmp/base/src
    cp -a /tmp/agora-bench/scale-clone-1000000 /tmp/fo-1m
    python eval/bench/bench_analyze_scale.py --clone /tmp/fo-1m --rounds 2 --baseline-src /tmp/base/src
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import tracegen

from _common import BIN, ROOT, WORK_DIR, env, project, sh, write_json

ANALYZE = "import sys; from git_agora.cli import main; sys.argv = ['git-agora'] + sys.argv[1:]; main()"


def run(src: Path, clone: Path, *args: str, budget: str | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one `git agora ARGS` process run from the source tree `src`
    (`budget`: its `AGORA_EMBED_BUDGET`)."""
    e = {**env(), "PYTHONPATH": str(src), **({"AGORA_EMBED_BUDGET": budget} if budget is not None else {})}
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", ANALYZE, *args], cwd=clone, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode:
        raise RuntimeError(f"git agora {' '.join(args)} failed in {clone}: {err[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def prepared(size: int, accounts: int, model: str) -> tuple[Path, Path]:
    """A private copy of the generated origin and a clone of it with an index and cached vectors."""
    origin = WORK_DIR / f"analyze-scale-origin-{size}.git"
    clone = WORK_DIR / f"analyze-scale-clone-{size}"
    if not (clone / ".git" / "agora" / "index").exists():
        shutil.rmtree(origin, ignore_errors=True)
        shutil.rmtree(clone, ignore_errors=True)
        shutil.copytree(project(size, accounts), origin, symlinks=True)
        clone.mkdir(parents=True)
        sh("git", "init", "-q", cwd=clone)
        sh("git", "remote", "add", "origin", str(origin), cwd=clone)
        t = time.perf_counter()
        sh(str(BIN / "git-agora"), "fetch", cwd=clone)
        print(f"  cloned and indexed {size} contributions in {time.perf_counter() - t:.0f} s", flush=True)
        run(ROOT / "src", clone, "analyze", "--json", "--model", model)  # embeds what analyze needs
    return origin, clone


def pair(label: str, baseline: Path, clone: Path, model: str, rows: list[dict]) -> None:
    """Baseline, then this tree, then this tree again (its follow-on cache now current)."""
    args = ("analyze", "--json", "--model", model)
    old = run(baseline, clone, *args)
    new = run(ROOT / "src", clone, *args)
    again = run(ROOT / "src", clone, *args)
    for name, (s, mb) in ((f"{label}, baseline", old), (f"{label}", new), (f"{label}, cache current", again)):
        rows.append({"case": name, "seconds": s, "peak_mb": mb})
    print(
        f"  {label}: baseline {old[0]:.2f} s / {old[1]:.0f} MB; this tree {new[0]:.2f} s / {new[1]:.0f} MB "
        f"({old[0] / new[0]:.1f}x faster, {old[1] / new[1]:.1f}x less memory); "
        f"again {again[0]:.2f} s / {again[1]:.0f} MB",
        flush=True,
    )


def first_analyze(baseline: Path, clone: Path, args: tuple[str, ...], rounds: int, rows: list[dict]) -> None:
    """Without the follow-on cache: baseline and this tree in turn, then this tree with its cache."""
    cache = clone / ".git" / "agora" / "index" / "follow_ons.parquet"
    old, new = [], []
    for _ in range(rounds):
        for src, into in ((baseline, old), (ROOT / "src", new)):
            cache.unlink(missing_ok=True)
            into.append(run(src, clone, *args, budget="0"))
    warm = run(ROOT / "src", clone, *args, budget="0")
    for name, runs in (("first analyze, baseline", old), ("first analyze", new), ("first analyze, then warm", [warm])):
        rows += [{"case": name, "seconds": s, "peak_mb": mb} for s, mb in runs]
    o_s, o_mb = min(s for s, _ in old), max(mb for _, mb in old)
    n_s, n_mb = min(s for s, _ in new), max(mb for _, mb in new)
    print(
        f"  first analyze (follow-on cache missing, best time / worst peak of {rounds}): baseline {o_s:.2f} s / "
        f"{o_mb:.0f} MB; this tree {n_s:.2f} s / {n_mb:.0f} MB ({o_s / n_s:.1f}x faster, {o_mb / n_mb:.2f}x less "
        f"memory); then warm {warm[0]:.2f} s / {warm[1]:.0f} MB (first/warm peak {n_mb / warm[1]:.2f}x)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--baseline-src", type=Path, required=True, help="src/ of the code to compare with")
    parser.add_argument("--model", default="hashing")
    parser.add_argument("--clone", type=Path, help="only the first-analyze comparison, in this clone")
    parser.add_argument("--rounds", type=int, default=1, help="first-analyze runs of each tree")
    args = parser.parse_args()
    rows: list[dict] = []
    if args.clone:
        print(f"first analyze in {args.clone} (load {os.getloadavg()[0]:.1f})")
        first_analyze(args.baseline_src, args.clone, ("analyze", "--json"), args.rounds, rows)
        print(f"  load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(f"wrote {write_json(f'analyze-first-{args.clone.name}', {'clone': str(args.clone), 'rows': rows})}")
        return 0
    origin, clone = prepared(args.size, args.accounts, args.model)
    print(f"analyze at {args.size} contributions / {args.accounts} accounts (load {os.getloadavg()[0]:.1f})")
    pair("warm", args.baseline_src, clone, args.model, rows)
    tracegen.append(origin, None, n=1)
    sh(str(BIN / "git-agora"), "fetch", cwd=clone)
    run(args.baseline_src, clone, "analyze", "--json", "--model", args.model)  # embeds it: no new vectors below
    pair("after +1 contribution", args.baseline_src, clone, args.model, rows)
    first_analyze(args.baseline_src, clone, ("analyze", "--json", "--model", args.model), args.rounds, rows)
    load = os.getloadavg()
    print(f"  load average after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    path = write_json(f"analyze-scale-{args.size}", {"size": args.size, "accounts": args.accounts, "rows": rows})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
