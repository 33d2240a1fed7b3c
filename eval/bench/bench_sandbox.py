"""The sandbox's cost per evaluation: `git agora run` on the demo task, sandboxed and `--no-sandbox`,
interleaved round by round in one project (the same tree, the same evaluator, the same minutes).

    python eval/bench/bench_sandbox.py [--rounds 15] [--quick]

Prints the median wall time of each, the overhead (sandboxed - unsandboxed) with its range over the
rounds, and the split of the sandboxed run's own steps (`git agora run --json` durations: build and
score as measured inside git-agora). Target: under 0.3 s of overhead per evaluation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import machine, sh, write_json


def demo_project(base: Path) -> Path:
    from git_agora.demo.run import AGORA_TOML, TASK_FILES

    remote = base / "remote.git"
    sh("git", "init", "-q", "--bare", str(remote))
    clone = base / "founder"
    clone.mkdir()
    sh("git", "init", "-q", cwd=clone)
    sh("git", "remote", "add", "origin", str(remote), cwd=clone)
    sh("git", "config", "agora.account", "founder", cwd=clone)
    task = Path(__file__).resolve().parents[2] / "src" / "git_agora" / "demo" / "task"
    for name in TASK_FILES:
        (clone / name).write_text((task / name).read_text())
    (clone / ".gitignore").write_text("__pycache__/\n")
    (clone / "agora.toml").write_text(AGORA_TOML)
    sh("git", "agora", "init", cwd=clone, extra_env={"XDG_CONFIG_HOME": str(base / "config")})
    return clone


def one_run(clone: Path, sandboxed: bool, quick: bool, config: Path) -> tuple[float, float]:
    """(wall seconds of the whole command, seconds of the evaluation as git-agora timed it)."""
    args = ["git", "agora", "run", "--json"] + ([] if sandboxed else ["--no-sandbox"]) + (["--quick"] if quick else [])
    start = time.perf_counter()
    out = json.loads(sh(*args, cwd=clone, extra_env={"XDG_CONFIG_HOME": str(config)}))
    wall = time.perf_counter() - start
    assert out["ok"] and out["sandbox"] is sandboxed, out
    return wall, out["duration_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="the task's quick evaluation (2,000 characters)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agora-bench-sandbox-") as tmp:
        base = Path(tmp)
        clone = demo_project(base)
        one_run(clone, True, args.quick, base / "config")  # warm the page cache for both
        one_run(clone, False, args.quick, base / "config")
        rows = {"sandbox": [], "no_sandbox": []}
        for i in range(args.rounds):
            order = (True, False) if i % 2 == 0 else (False, True)
            for sandboxed in order:
                rows["sandbox" if sandboxed else "no_sandbox"].append(
                    one_run(clone, sandboxed, args.quick, base / "config")
                )
    walls = {k: [w for w, _ in v] for k, v in rows.items()}
    steps = {k: [d for _, d in v] for k, v in rows.items()}
    overhead = [s - n for s, n in zip(walls["sandbox"], walls["no_sandbox"])]
    result = {
        "machine": machine(),
        "rounds": args.rounds,
        "quick": args.quick,
        "wall_median_s": {k: statistics.median(v) for k, v in walls.items()},
        "steps_median_s": {k: statistics.median(v) for k, v in steps.items()},
        "overhead_median_s": statistics.median(overhead),
        "overhead_range_s": [min(overhead), max(overhead)],
    }
    sandboxed, plain = result["wall_median_s"]["sandbox"], result["wall_median_s"]["no_sandbox"]
    print(f"git agora run ({'quick' if args.quick else 'full'} demo evaluation), {args.rounds} interleaved rounds")
    print(f"  sandboxed     {sandboxed:.3f} s (steps {result['steps_median_s']['sandbox']:.3f} s)")
    print(f"  --no-sandbox  {plain:.3f} s (steps {result['steps_median_s']['no_sandbox']:.3f} s)")
    print(
        f"  overhead      {result['overhead_median_s']:.3f} s per evaluation "
        f"(range {min(overhead):.3f}..{max(overhead):.3f}), {sandboxed / plain:.2f}x; "
        f"target < 0.3 s: {'met' if result['overhead_median_s'] < 0.3 else 'NOT met'}"
    )
    write_json("bench_sandbox", result)


if __name__ == "__main__":
    main()
