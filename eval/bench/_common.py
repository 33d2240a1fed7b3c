"""Shared helpers for the benchmarks: timing, cached generated projects, clones, JSON output."""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT_DIR = ROOT / "bench-out"
WORK_DIR = Path(os.environ.get("AGORA_BENCH_DIR", "/tmp/agora-bench"))
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))

import tracegen  # noqa: E402


def env() -> dict[str, str]:
    """The caller's environment with the venv's `git agora` first on PATH, no account set, and bytecode
    written as an installed package has it (a PYTHONDONTWRITEBYTECODE the caller set would make each
    process compile every module of a tree whose cache is missing or stale: 20-35 ms a post, which an
    A/B of two trees then measures instead of their code)."""
    e = {k: v for k, v in os.environ.items() if k not in ("AGORA_ACCOUNT", "PYTHONDONTWRITEBYTECODE")}
    e["PATH"] = f"{BIN}{os.pathsep}{e.get('PATH', '')}"
    e["GIT_TERMINAL_PROMPT"] = "0"
    return e


def sh(*args: str, cwd: Path | None = None, check: bool = True, extra_env: dict | None = None) -> str:
    proc = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env={**env(), **(extra_env or {})})
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def sample(
    fn: Callable[[], object], repeat: int, setup: Callable[[], object] | None = None, warmup: int = 0
) -> list[float]:
    """Run fn `repeat` times (after `warmup` untimed runs); setup runs untimed before each."""
    times = []
    for i in range(warmup + repeat):
        if setup:
            setup()
        t = timed(fn)
        if i >= warmup:
            times.append(t)
    return times


def stats(times: list[float]) -> dict:
    return {
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "n": len(times),
        "all": [round(t, 4) for t in times],
    }


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of `values`: the order statistics k and n + 1 - k, with
    k the largest rank for which the binomial(n, 1/2) tail keeps the coverage at least `level` (for 20
    values, the 6th and 15th: 95.9%); the whole range when there are too few values for `level`."""
    ordered, n = sorted(values), len(values)
    k = 0
    while k + 1 <= n // 2 and 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n >= level:
        k += 1
    return (ordered[k - 1], ordered[n - k]) if k else (ordered[0], ordered[-1])


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def project(
    contributions: int,
    accounts: int,
    seed: int = 0,
    parents: str = "recent",
    fresh: bool = False,
    commit_graph: bool = False,
) -> Path:
    """A generated origin, cached under WORK_DIR across runs (regenerated when asked or missing)."""
    name = f"origin-{contributions}-{accounts}-{seed}-{parents}{'-cg' if commit_graph else ''}.git"
    path = WORK_DIR / name
    if fresh or not (path / tracegen.STATE_FILE).exists():
        shutil.rmtree(path, ignore_errors=True)
        WORK_DIR.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        tracegen.generate(path, contributions, accounts, seed=seed, parent_mode=parents, commit_graph=commit_graph)
        print(f"  generated {contributions} contributions in {time.perf_counter() - t:.1f} s -> {path}", flush=True)
    return path


def plain_clone(origin: Path, path: Path) -> Path:
    """A clone with every account log under refs/agora/remotes/origin/log/* (fetched by plain git)."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    sh("git", "init", "-q", cwd=path)
    sh("git", "remote", "add", "origin", str(origin), cwd=path)
    sh("git", "fetch", "-q", "--no-tags", "origin", "+refs/agora/log/*:refs/agora/remotes/origin/log/*", cwd=path)
    return path


def index_table(clone: Path):
    """The logical contributions table of a clone's index (its segments merged, in canonical order)."""
    from git_agora.index import store
    from git_agora.ops.indexing import _rules
    from git_agora.project import Project

    p = Project.open(clone)
    return store.load_index(p.repo, _rules(p), update=False).contributions


def machine() -> dict:
    git = sh("git", "--version").strip()
    return {"python": platform.python_version(), "git": git, "cpus": os.cpu_count(), "platform": platform.platform()}


def write_json(name: str, data: dict) -> Path:
    OUT_DIR.mkdir(exist_ok=True)
    path = OUT_DIR / f"{name}.json"
    path.write_text(
        json.dumps({"machine": machine(), "when": time.strftime("%Y-%m-%dT%H:%M:%S"), **data}, indent=1, default=str)
        + "\n"
    )
    return path


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER TARGET"
