"""The scaling table: what each command a participant runs costs at 10k, 100k and 1M contributions,
wall time and peak memory, each against its plain-git baseline measured in the same run.

    python eval/bench/bench_scale.py --size 10000 --size 100000
    python eval/bench/bench_scale.py --size 1000000          # about 25 minutes on 2 cores, 6 GB of disk

Accounts: 40 at 10k, 100 at 100k, 1,000 at 1M (`--accounts` overrides). Per size, on a scratch copy
of the generated origin (`_common.project`, cached under $AGORA_BENCH_DIR):

- first fetch: `git init` + `git agora fetch` in a fresh clone, against a plain `git fetch` of the same
  refs into another fresh repository plus the full rebuild below (target: at most 1.3x);
- rebuild: `git agora index --rebuild`, against `git log` printing the fields the index reads (the
  floor; target at most 2.0x);
- fetch +1: one contribution appended to the origin, then `git agora fetch`, against a plain `git fetch`
  of the same refs into a plain clone plus `python -c pass` (targets: at most 0.5 s and 1.5x); also
  when the contribution is a new account's first, built on an old contribution;
- analyze: the first `git agora analyze --json` in the clone (it embeds what the frontier needs and 5 s
  more), then warm with no new embeddings (`AGORA_EMBED_BUDGET=0`; target at 1M: under 5 s and 2 GB);
  search (no new embeddings either); show; log; status; lineage; stats; claim --list; index --check;
  index --export; site (with --site: a page per contribution, 6.4 GB at 1M);
- post: `git agora post` of a light insight to the origin, against `git commit --allow-empty && git
  push` to a plain bare repository (target at most 3x); and against the same commit and push from a
  worktree of the clone into its origin, which is what plain git pays in that project (its push walks
  from every remote ref, as the post's does, and the remote checks connectivity against all of them).

Every command runs as its own process; its peak memory is the largest resident set of the process
and the children it waited for (`wait4`'s rusage, what `/usr/bin/time` reports). Results:
bench-out/bench_scale.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _common import WORK_DIR, env, project, tracegen, write_json

ACCOUNTS = {10_000: 40, 100_000: 100, 1_000_000: 1000}
LOG_REFSPEC = "+refs/agora/log/*:refs/agora/remotes/origin/log/*"
FLOOR_FORMAT = "%H %T %ct %P%n%B"
IDENT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
PEAK_MARK = "__peak_kb "
QUERY = "transfer the attention layers from a smaller donor with a learning rate warmup"


@dataclass
class Run:
    seconds: float
    peak_mb: float
    output: str


def run(*args: str, cwd: Path | None = None, extra_env: dict | None = None) -> Run:
    """Run a command under `/usr/bin/time`: its wall time, and the peak resident set of it and the
    children it waited for (the largest one's, as rusage reports it)."""
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", f"{PEAK_MARK}%M", *args],
        cwd=cwd,
        capture_output=True,
        env={**env(), **IDENT, **(extra_env or {})},
    )
    seconds = time.perf_counter() - start
    err = proc.stderr.decode(errors="replace")
    if proc.returncode:
        raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {err[-500:]}")
    peak_kb = int(err.rsplit(PEAK_MARK, 1)[1].split()[0])
    return Run(seconds, peak_kb / 1024, proc.stdout.decode(errors="replace"))


def measured(fn, repeat: int = 1) -> dict:
    runs = [fn() for _ in range(repeat)]
    seconds = [r.seconds for r in runs]
    return {
        "s": statistics.median(seconds),
        "all_s": [round(s, 3) for s in seconds],
        "peak_mb": max(r.peak_mb for r in runs),
    }


def fresh_repo(path: Path, origin: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    run("git", "init", "-q", cwd=path)
    run("git", "remote", "add", "origin", str(origin), cwd=path)
    return path


def bench_size(n: int, accounts: int, repeat: int, reuse: bool = False, site: bool = False) -> dict:
    print(f"\n== {n:,} contributions, {accounts} accounts", flush=True)
    origin = WORK_DIR / f"scale-origin-{n}.git"
    clone, plain = WORK_DIR / f"scale-clone-{n}", WORK_DIR / f"scale-plain-{n}"
    reuse = reuse and (clone / ".git" / "agora" / "index").is_dir() and plain.is_dir()
    if not reuse:
        cached = project(n, accounts)
        shutil.rmtree(origin, ignore_errors=True)
        shutil.copytree(cached, origin, symlinks=True)
    res: dict = {"contributions": n, "accounts": accounts, "reused_clone": reuse}

    def show(name: str, value: dict, baseline: dict | None = None, note: str = "") -> None:
        res[name] = value if baseline is None else {**value, "baseline": baseline, "ratio": value["s"] / baseline["s"]}
        extra = f"  baseline {baseline['s']:.3f} s  ratio {value['s'] / baseline['s']:.2f}x" if baseline else ""
        print(f"  {name:<22} {value['s']:9.3f} s {value['peak_mb']:7.0f} MB{extra} {note}", flush=True)

    if not reuse:  # --reuse: the clone of an earlier run, for the commands after the first fetch
        fresh_repo(plain, origin)
        plain_fetch = measured(lambda: run("git", "fetch", "-q", "--no-tags", "origin", LOG_REFSPEC, cwd=plain))
        fresh_repo(clone, origin)
        first = measured(lambda: run("git", "agora", "fetch", cwd=clone))
        git_log = ("git", "log", "--all", "--date-order", "-z", f"--format={FLOOR_FORMAT}")
        floor = measured(lambda: run(*git_log, cwd=clone))
        rebuild = measured(lambda: run("git", "agora", "index", "--rebuild", cwd=clone))
        show("git log floor", floor)
        show("index --rebuild", rebuild, floor, "(target <= 2.0x)")
        combined = {"s": plain_fetch["s"] + rebuild["s"], "peak_mb": max(plain_fetch["peak_mb"], rebuild["peak_mb"])}
        show("plain git fetch", plain_fetch)
        show("first fetch", first, combined, "(baseline: plain fetch + rebuild; target <= 1.3x)")

    python = measured(lambda: run(sys.executable, "-c", "pass"), repeat)
    newcomers = iter(range(10**6))
    for mode in ("recent", "new-account"):

        def one_new(mode: str = mode) -> Run:
            if mode == "new-account":
                tracegen.append(origin, f"newcomer{next(newcomers)}", n=1, parent_mode="uniform", kind="result")
            else:
                tracegen.append(origin, None, n=1, kind="result")
            return run("git", "agora", "fetch", cwd=clone)

        def plain_one() -> Run:
            tracegen.append(origin, None, n=1, kind="result")
            return run("git", "fetch", "-q", "--no-tags", "origin", LOG_REFSPEC, cwd=plain)

        agora = measured(one_new, repeat)
        base = measured(plain_one, repeat)
        baseline = {"s": base["s"] + python["s"], "peak_mb": base["peak_mb"]}
        show(f"fetch +1 ({mode})", agora, baseline, "(baseline: plain fetch + python -c pass; <= 0.5 s, 1.5x)")

    show("analyze, first", measured(lambda: run("git", "agora", "analyze", "--json", cwd=clone)))
    no_new = {"AGORA_EMBED_BUDGET": "0"}  # warm: no new embeddings (each run would embed 5 s more)
    show(
        "analyze, warm", measured(lambda: run("git", "agora", "analyze", "--json", cwd=clone, extra_env=no_new), repeat)
    )
    show(
        "search", measured(lambda: run("git", "agora", "search", QUERY, "--json", cwd=clone, extra_env=no_new), repeat)
    )
    sha = newest_contribution(clone)
    show("show", measured(lambda: run("git", "agora", "show", sha, "--json", cwd=clone), repeat))
    show("log --limit 20", measured(lambda: run("git", "agora", "log", "--limit", "20", cwd=clone), repeat))
    show("lineage", measured(lambda: run("git", "agora", "lineage", sha, "--json", cwd=clone)))
    show("stats --json", measured(lambda: run("git", "agora", "stats", "--json", cwd=clone)))
    show("claim --list", measured(lambda: run("git", "agora", "claim", "--list", "--json", cwd=clone)))
    show("index --check", measured(lambda: run("git", "agora", "index", "--check", cwd=clone)))
    exported = WORK_DIR / f"scale-export-{n}"
    show("index --export", measured(lambda: run("git", "agora", "index", "--export", str(exported), cwd=clone)))
    shutil.rmtree(exported, ignore_errors=True)
    if site:  # a page per contribution: 6.4 GB and minutes at 1M
        pages = WORK_DIR / f"scale-site-{n}"
        shutil.rmtree(pages, ignore_errors=True)
        show("site", measured(lambda: run("git", "agora", "site", str(pages), cwd=clone)))
        shutil.rmtree(pages, ignore_errors=True)
    run("git", "config", "agora.account", "scale-poster", cwd=clone)
    show("status", measured(lambda: run("git", "agora", "status", cwd=clone), repeat))

    run("git", "config", "agora.account", f"scale-poster-{time.time_ns()}", cwd=clone)  # a new account each run
    run("git", "agora", "post", "-m", "warm-up insight", "--tag", "insight", cwd=clone)  # makes the key once
    counter = iter(range(10**6))
    post = measured(
        lambda: run("git", "agora", "post", "-m", f"insight {next(counter)}", "--tag", "insight", cwd=clone), repeat
    )
    show("post", post, plain_post(n, repeat), "(baseline: git commit --allow-empty && git push; <= 3x)")
    show("post, in this clone", post, plain_post_in_clone(clone, repeat), "(baseline: the same, from this clone)")
    return res


def newest_contribution(clone: Path) -> str:
    listed = json.loads(run("git", "agora", "log", "--limit", "1", "--json", cwd=clone).output)
    return (listed["contributions"] if isinstance(listed, dict) else listed)[0]["sha"]


def plain_post(n: int, repeat: int) -> dict:
    bare = WORK_DIR / f"scale-post-{n}.git"
    work = WORK_DIR / f"scale-post-{n}-work"
    for path in (bare, work):
        shutil.rmtree(path, ignore_errors=True)
    run("git", "init", "-q", "--bare", str(bare))
    run("git", "clone", "-q", str(bare), str(work))
    run("git", "commit", "-q", "--allow-empty", "-m", "first", cwd=work)
    run("git", "push", "-q", "origin", "HEAD", cwd=work)

    def once() -> Run:
        commit = run("git", "commit", "-q", "--allow-empty", "-m", "x", cwd=work)
        push = run("git", "push", "-q", "origin", "HEAD", cwd=work)
        return Run(commit.seconds + push.seconds, max(commit.peak_mb, push.peak_mb), "")

    return measured(once, repeat)


def plain_post_in_clone(clone: Path, repeat: int) -> dict:
    """`git commit --allow-empty && git push` from a worktree of `clone` into its origin: plain git with
    the project's objects and remote refs, whose push (like a post's) gives pack-objects every remote
    ref it has as a negative, and whose remote checks connectivity against every ref it holds."""
    work = WORK_DIR / f"{clone.name}-plain-worktree"
    branch = f"refs/heads/bench-plain-{clone.name}"
    shutil.rmtree(work, ignore_errors=True)  # a worktree an interrupted run left
    run("git", "worktree", "prune", cwd=clone)
    setup = run("git", "config", "agora.setup", cwd=clone).output.strip()
    run("git", "worktree", "add", "-q", "--detach", str(work), setup, cwd=clone)

    def once() -> Run:
        commit = run("git", "commit", "-q", "--allow-empty", "-m", "x", cwd=work)
        push = run("git", "push", "-q", "origin", f"HEAD:{branch}", cwd=work)
        return Run(commit.seconds + push.seconds, max(commit.peak_mb, push.peak_mb), "")

    try:
        once()  # the first push sends the branch's history
        return measured(once, repeat)
    finally:
        run("git", "push", "-q", "origin", f":{branch}", cwd=work)
        run("git", "worktree", "remove", "--force", str(work), cwd=clone)


def markdown(results: list[dict]) -> str:
    rows = [k for k in results[0] if isinstance(results[0][k], dict)]
    head = "| command | " + " | ".join(f"{r['contributions']:,}" for r in results) + " |"
    lines = [head, "| --- |" + " --- |" * len(results)]
    for row in rows:
        cells = []
        for r in results:
            v = r.get(row)
            if v is None:
                cells.append("")
                continue
            cell = f"{v['s']:.2f} s, {v['peak_mb']:.0f} MB"
            if "ratio" in v:
                cell += f" ({v['ratio']:.2f}x of {v['baseline']['s']:.2f} s)"
            cells.append(cell)
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="per-command time and peak memory at several project sizes")
    ap.add_argument("--size", type=int, action="append", help="contributions (repeatable; default 10000, 100000)")
    ap.add_argument("--accounts", type=int, help="accounts (default: 40 at 10k, 100 at 100k, 1000 at 1M)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--site", action="store_true", help="also `git agora site` (6.4 GB of pages at 1M)")
    ap.add_argument("--reuse", action="store_true", help="keep the clone of an earlier run (skip first fetch, rebuild)")
    args = ap.parse_args(argv)
    results = []
    for n in args.size or [10_000, 100_000]:
        accounts = args.accounts or ACCOUNTS.get(n, max(2, min(1000, n // 1000)))
        results.append(bench_size(n, accounts, args.repeat, args.reuse, args.site))
    load = os.getloadavg()
    path = write_json("bench_scale", {"load_average": load, "results": results})
    print(f"\nload average at the end: {load[0]:.1f}\n\n{markdown(results)}\n\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
