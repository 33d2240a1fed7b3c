"""`python -m eval.compare.order_diagnostic OUT.csv [--tasks wide noisy] [--seeds 10]`: how much of the
central planner's lead comes from the order of the task's knob list.

The planner hands out knobs round-robin over the task's list, and the synthetic tasks list their knobs
heaviest first. This runs, on the tuning seeds only (0..), the planner with the list as written, the
planner with the list shuffled per seed (`random.Random(f"order/{seed}")`), 3 workers x 8 evaluations
each, and writes one row per run (task, arm, order, seed, the reported best's true loss); compare it with
the Agora arm's tuning run of the same seeds.
A diagnostic for `QUESTION-3.md`, not part of any frozen question.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import community
from .community import found_template, run_community
from .run import environment
from .tasks import TASKS

VARIANTS = (("planner", "list"), ("planner", "shuffled"))
AS_WRITTEN = dict(TASKS)  # a pool process runs many jobs: each starts from the lists as written


def knobs_in_order(task_name: str, order: str, seed: int) -> None:
    """In this process: the task's knob list as written (``list``) or in the seed's shuffled order."""
    knobs = list(AS_WRITTEN[task_name].knobs)
    if order == "shuffled":
        random.Random(f"order/{seed}").shuffle(knobs)
    community.TASKS[task_name] = dataclasses.replace(AS_WRITTEN[task_name], knobs=tuple(knobs))


def one_run(task: str, arm: str, order: str, seed: int, template: dict, work: str) -> dict:
    knobs_in_order(task, order, seed)
    record = run_community(task, arm, seed, 3, 8, template, Path(work))
    return {"task": task, "arm": arm, "order": order, "seed": seed, "reported_true": record["reported_true"]}


def main(argv: list[str] | None = None) -> int:
    name = "python -m eval.compare.order_diagnostic"
    parser = argparse.ArgumentParser(prog=name, description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the CSV to write")
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=["wide", "noisy"])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (the tuning seeds)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="order-diagnostic-"))
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")
    os.environ["PATH"] = environment()["PATH"]
    templates = {t: found_template(TASKS[t], work / f"template-{t}") for t in args.tasks}
    runs = [(t, a, o, s) for s in range(args.seeds) for t in args.tasks for a, o in VARIANTS]
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(one_run, t, a, o, s, templates[t], str(work / f"{t}-{a}-{o}-{s}")) for t, a, o, s in runs
        ]
        rows = []
        for number, future in enumerate(futures, 1):
            rows.append(future.result())
            print(f"[{number}/{len(runs)}] {rows[-1]}", file=sys.stderr, flush=True)
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
