"""Fetch latency of one new contribution into a clone of a large project, against plain `git fetch`.

    python eval/bench/bench_fetch.py                       # 100,000 contributions, 100 accounts, recent + uniform
    python eval/bench/bench_fetch.py --size 10000 --modes recent --repeat 5
    python eval/bench/bench_fetch.py --size 1000000 --accounts 1000 --modes new-account --no-commit-graph

For each parent mode (`recent`: the new contribution builds on recent work; `uniform`: its parents are
drawn from all history, the deep-parent case the design notes warn about; `new-account`: each round a
new account's first contribution on an old contribution, the case that made every reader walk the
whole graph):

- origin: a generated project (cached under $AGORA_BENCH_DIR); clone: `git init` + `git agora fetch`;
- baseline: a plain repository with the same history as 100 branches (refs/heads/<account>), cloned by
  plain `git fetch`; each round one branch gets one new commit on its tip, and `git fetch` brings it;
- each round appends one result to the origin (tracegen.append), then times `git agora fetch` (the CLI:
  fetch + index update) and the baseline `git fetch`; the ratio of medians is the headline (target at
  most 1.5x);
- breakdown rounds, in-process: `refs.sync.fetch` (git fetch + ref bookkeeping), `Project.find_setup`
  (what `git agora fetch` runs before updating the index), `update_index`; and the bare
  `git fetch` of the agora refspec alone, to separate transport from Python;
- the bare `git fetch` of the agora refspec is what `refs.sync.fetch` ran before it probed the moved
  refs (`refs/boundary.py`): the old behaviour, measured in the same run;
- with a thousand accounts the plain baseline is itself noisy: a client sends its tips newest first
  and gives up after 256 unanswered haves, so a commit on a branch whose tip is not among the newest
  ~500 makes the server walk the graph (42-234 s against 0.4-2 s at a million, docs/hosting.md);
- then the same after `git commit-graph write --reachable` on both sides (origin and clone, and on the
  baseline's two repositories).
Results: bench-out/bench_fetch.json.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import WORK_DIR, project, ratio, sample, sh, stats, timed, tracegen, verdict, write_json
from git_agora.ops.indexing import refresh
from git_agora.project import Project
from git_agora.refs import sync

TARGET = 1.5
AGORA_REFSPEC = "+refs/agora/log/*:refs/agora/remotes/origin/log/*"
IDENT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


class Baseline:
    """A plain repository with the same commits as 100 branches, and a clone of it."""

    def __init__(self, agora_origin: Path, name: str):
        self.origin = WORK_DIR / f"{name}-plain-origin.git"
        self.clone = WORK_DIR / f"{name}-plain-clone"
        shutil.rmtree(self.origin, ignore_errors=True)
        sh("git", "clone", "-q", "--mirror", str(agora_origin), str(self.origin))
        refs = sh("git", "for-each-ref", "--format=%(objectname) %(refname)", "refs/agora/log/", cwd=self.origin)
        commands = []
        for line in refs.splitlines():
            sha, ref = line.split(" ", 1)
            commands += [f"create refs/heads/{ref.rsplit('/', 1)[1]} {sha}", f"delete {ref} {sha}"]
        subprocess.run(
            ["git", "update-ref", "--stdin"], cwd=self.origin, input="\n".join(commands) + "\n", text=True, check=True
        )
        self.branches = [c.split()[1] for c in commands if c.startswith("create")]
        shutil.rmtree(self.clone, ignore_errors=True)
        self.clone.mkdir(parents=True)
        sh("git", "init", "-q", cwd=self.clone)
        sh("git", "remote", "add", "origin", str(self.origin), cwd=self.clone)
        self.initial_fetch_s = timed(lambda: sh("git", "fetch", "-q", "origin", cwd=self.clone))
        self.rng = random.Random(1)

    def new_commit(self) -> None:
        branch = self.rng.choice(self.branches)
        tip = sh("git", "rev-parse", branch, cwd=self.origin).strip()
        new = sh(
            "git", "commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", "one more", cwd=self.origin, extra_env=IDENT
        ).strip()
        sh("git", "update-ref", branch, new, tip, cwd=self.origin)

    def fetch(self) -> None:
        sh("git", "fetch", "-q", "origin", cwd=self.clone)

    def commit_graphs(self) -> None:
        for repo in (self.origin, self.clone):
            sh("git", "commit-graph", "write", "--reachable", cwd=repo)


def agora_clone(origin: Path, path: Path) -> tuple[Path, float]:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    sh("git", "init", "-q", cwd=path)
    sh("git", "remote", "add", "origin", str(origin), cwd=path)
    return path, timed(lambda: sh("git", "agora", "fetch", cwd=path))


def series(origin: Path, clone: Path, base: Baseline, mode: str, repeat: int) -> dict:
    newcomers = iter(range(10**6))

    def append():
        if mode == "new-account":  # a new account's first contribution, on any old contribution
            tracegen.append(origin, f"newcomer{next(newcomers)}", n=1, parent_mode="uniform", kind="result")
        else:
            tracegen.append(origin, None, n=1, parent_mode=mode, kind="result")

    out: dict = {}
    out["agora_fetch_cli_s"] = stats(sample(lambda: sh("git", "agora", "fetch", cwd=clone), repeat, setup=append))
    out["git_fetch_baseline_s"] = stats(sample(base.fetch, repeat, setup=base.new_commit))
    out["ratio"] = ratio(out["agora_fetch_cli_s"]["median"], out["git_fetch_baseline_s"]["median"])
    out["python_start_s"] = stats(sample(lambda: sh(sys.executable, "-c", "pass"), repeat))
    floor = out["git_fetch_baseline_s"]["median"] + out["python_start_s"]["median"]
    out["ratio_with_python_start"] = ratio(out["agora_fetch_cli_s"]["median"], floor)
    # breakdown, in-process (no interpreter start-up)
    parts: dict[str, list[float]] = {
        "sync.fetch": [],
        "find_setup": [],
        "refresh (index update)": [],
        "in-process total": [],
    }
    for _ in range(repeat):
        append()
        project_ = Project.open(clone)
        t0 = time.perf_counter()
        sync.fetch(project_.repo, "origin")
        t1 = time.perf_counter()
        project_.find_setup()
        t2 = time.perf_counter()
        refresh(project_)
        t3 = time.perf_counter()
        for key, value in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
            parts[key].append(value)
    out["breakdown_s"] = {k: stats(v) for k, v in parts.items()}

    def git_only():
        sh("git", "fetch", "-q", "--no-tags", "--no-write-fetch-head", "origin", AGORA_REFSPEC, cwd=clone)

    out["git_fetch_agora_refspec_s"] = stats(sample(git_only, repeat, setup=append))
    refresh(Project.open(clone))  # leave the clone's index current
    return out


def report(label: str, r: dict) -> None:
    med = lambda d: d["median"]  # noqa: E731
    print(f"  [{label}]")
    print(f"    git agora fetch (CLI)        {med(r['agora_fetch_cli_s']):7.3f} s")
    print(
        f"    git fetch, plain 100 branches {med(r['git_fetch_baseline_s']):6.3f} s   ratio {r['ratio']:.2f}x "
        f"(target <= {TARGET}x: {verdict(r['ratio'], TARGET)})"
    )
    print(
        f"    + python -c pass             {med(r['python_start_s']):7.3f} s   "
        f"ratio {r['ratio_with_python_start']:.2f}x "
        f"(issue 11: <= 0.5 s and <= {TARGET}x of git fetch + python start)"
    )
    print(f"    git fetch of the agora refspec alone {med(r['git_fetch_agora_refspec_s']):.3f} s")
    for k, v in r["breakdown_s"].items():
        print(f"      in-process {k:<18} {med(v):7.3f} s  (max {v['max']:.3f})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="fetch benchmark")
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--accounts", type=int, default=100)
    ap.add_argument("--modes", nargs="+", default=["recent", "uniform"], choices=["recent", "uniform", "new-account"])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--no-commit-graph", action="store_true", help="skip the second series with commit-graphs")
    args = ap.parse_args(argv)
    results = {}
    for mode in args.modes:
        print(f"\n== {args.size} contributions, {args.accounts} accounts, parents {mode}", flush=True)
        parents = "uniform" if mode == "new-account" else mode
        cached = project(args.size, args.accounts, parents=parents, fresh=args.fresh)
        origin = WORK_DIR / f"fetch-origin-{args.size}-{mode}.git"
        shutil.rmtree(origin, ignore_errors=True)
        shutil.copytree(cached, origin, symlinks=True)
        clone, initial = agora_clone(origin, WORK_DIR / f"fetch-clone-{args.size}-{mode}")
        print(f"  initial git agora fetch (all {args.size}): {initial:.2f} s", flush=True)
        base = Baseline(origin, f"fetch-{args.size}-{mode}")
        print(f"  initial plain git fetch (same history, 100 branches): {base.initial_fetch_s:.2f} s", flush=True)
        res: dict = {"initial_agora_fetch_s": initial, "initial_plain_fetch_s": base.initial_fetch_s}
        res["no_commit_graph"] = series(origin, clone, base, mode, args.repeat)
        report("no commit-graph", res["no_commit_graph"])
        if not args.no_commit_graph:
            t = time.perf_counter()
            for repo in (origin, clone):
                sh("git", "commit-graph", "write", "--reachable", cwd=repo)
            res["commit_graph_write_s"] = time.perf_counter() - t
            base.commit_graphs()
            res["commit_graph"] = series(origin, clone, base, mode, args.repeat)
            report(f"commit-graph on both sides (written in {res['commit_graph_write_s']:.1f} s)", res["commit_graph"])
        results[mode] = res
    path = write_json("bench_fetch", {"size": args.size, "accounts": args.accounts, "results": results})
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
