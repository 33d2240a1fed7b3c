"""What a four-agent launch on Slurm costs over the local one: submission to first contribution.

Starts the tests' real single-node Slurm (`tests/slurm.py`: munged, slurmctld, slurmd on 127.0.0.1,
`sched_interval=1`), founds one project on the demo's task in a bare remote, then launches four
scripted agents (one round each) again and again on it, local supervisor and Slurm interleaved round
by round on the same machine and the same remote. For each launch, from just before `git agora launch`:

- `launch`: the command's own wall time (four clones and keys prepared, then the supervisor started or
  four `sbatch` calls made; both return once the agents are started or submitted);
- `first`: until the first of the four agents' account logs appears on the remote (its first result);
- `all`: until all four have one;
- Slurm only, `started`: until the last of the four jobs started (its StartTime from scontrol, in
  whole seconds, so this one is +-1 s).

Each launch then runs to its end before the next starts. Needs root (the cluster's daemons) and Debian's
`slurm-wlm` and `munge`. Writes `bench-out/launch_slurm.json`.

    python eval/bench/bench_launch_slurm.py [--rounds 3] [--agents 4]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from importlib.resources import files
from pathlib import Path

from _common import ROOT, WORK_DIR, sh, stats, write_json

sys.path.insert(0, str(ROOT / "tests"))

import slurm  # noqa: E402  (the tests' cluster: start, stop)

POLL = 0.05


def found(remote: Path) -> Path:
    from git_agora.demo.run import AGORA_TOML, TASK_FILES

    sh("git", "init", "-q", "--bare", str(remote))
    clone = remote.parent / "founder"
    clone.mkdir()
    sh("git", "init", "-q", cwd=clone)
    sh("git", "remote", "add", "origin", str(remote), cwd=clone)
    sh("git", "config", "agora.account", "founder", cwd=clone)
    for name in TASK_FILES:
        shutil.copyfile(str(files("git_agora") / "demo" / "task" / name), clone / name)
    (clone / ".gitignore").write_text("__pycache__/\n")
    (clone / "agora.toml").write_text(AGORA_TOML)
    sh("git", "agora", "init", cwd=clone)
    return clone


def logs_on(remote: Path, prefix: str) -> int:
    out = sh("git", "for-each-ref", "--format=%(refname)", f"refs/agora/log/{prefix}-*", cwd=remote)
    return len(out.split())


def one_launch(remote: Path, where: Path, scheduler: str, agents: int, prefix: str) -> dict:
    argv = ["git", "agora", "launch", "--agents", str(agents), "--scripted", "--rounds", "1"]
    argv += ["--budget-minutes", "15", "--prefix", prefix, "--dir", str(where), "--json"]
    if scheduler == "slurm":
        argv += ["--scheduler", "slurm", "--node-local-ok"]
    argv.append(str(remote))
    began = time.monotonic()
    wall_began = time.time()
    sh(*argv)
    launched = time.monotonic() - began
    first = everyone = None
    while everyone is None:
        count = logs_on(remote, prefix)
        now = time.monotonic() - began
        if count and first is None:
            first = now
        if count >= agents:
            everyone = now
        elif now > 600:
            raise RuntimeError(f"{scheduler}: only {count} of {agents} agents published within 600 s")
        time.sleep(POLL)
    while True:  # to its end, so that the next launch has the machine to itself
        shown = json.loads(sh("git", "agora", "launch", "status", "--dir", str(where), "--json"))
        if not shown["supervisor_running"]:
            break
        time.sleep(0.5)
    bad = [a["name"] for a in shown["agents"] if a["state"] != "finished"]
    if bad:
        raise RuntimeError(f"{scheduler}: agents {bad} did not finish: {shown}")
    row = {"scheduler": scheduler, "launch": launched, "first": first, "all": everyone}
    if scheduler == "slurm":
        starts = [float(a["started_at"]) for a in shown["agents"] if a.get("started_at")]
        row["started"] = max(starts) - wall_began if len(starts) == agents else None
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agents", type=int, default=4)
    args = parser.parse_args()
    if os.getuid() != 0 or slurm._missing():
        print("needs root and slurm-wlm + munge installed (the tests' single-node cluster)", file=sys.stderr)
        return 2
    work = WORK_DIR / f"launch-slurm-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cluster = slurm.start(work / "cluster")
    os.environ.update(cluster.env)
    rows = []
    try:
        remote = work / "remote.git"
        found(remote)
        for n in range(args.rounds):
            order = ("local", "slurm") if n % 2 == 0 else ("slurm", "local")
            for scheduler in order:
                prefix = f"{scheduler[0]}{n}"
                row = one_launch(remote, work / f"{prefix}-agents", scheduler, args.agents, prefix) | {"round": n}
                rows.append(row)
                shown = ", ".join(f"{k} {v:.2f} s" for k, v in row.items() if isinstance(v, float))
                print(f"round {n + 1} {scheduler}: {shown}", flush=True)
    finally:
        slurm.stop(cluster)
    summary = {}
    for scheduler in ("local", "slurm"):
        mine = [r for r in rows if r["scheduler"] == scheduler]
        summary[scheduler] = {k: stats([r[k] for r in mine]) for k in ("launch", "first", "all")}
        if scheduler == "slurm":
            summary[scheduler]["started"] = stats([r["started"] for r in mine if r["started"] is not None])
    print(f"\n{args.agents} scripted agents, 1 round each, {args.rounds} launches per scheduler (medians, s):")
    print(f"{'':10}{'local':>10}{'slurm':>10}{'slurm - local':>16}")
    for key in ("launch", "first", "all"):
        local, on = summary["local"][key]["median"], summary["slurm"][key]["median"]
        print(f"{key:10}{local:>10.2f}{on:>10.2f}{on - local:>+16.2f}")
    paired = {}
    for key in ("first", "all"):
        local = {r["round"]: r[key] for r in rows if r["scheduler"] == "local"}
        paired[key] = stats([r[key] - local[r["round"]] for r in rows if r["scheduler"] == "slurm"])
        print(f"{key}, slurm - local within each round: median {paired[key]['median']:+.2f} s, {paired[key]['all']}")
    summary["paired"] = paired
    print(f"slurm: all four jobs started by {summary['slurm']['started']['median']:.2f} s (StartTime, +-1 s)")
    path = write_json("launch_slurm", {"agents": args.agents, "rounds": rows, "summary": summary})
    print(f"wrote {path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
