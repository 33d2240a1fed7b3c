"""`python -m eval.compare.tuning REFERENCE CANDIDATE...`: the tuning rule of `QUESTION-2.md`.

Each argument is a folder a tuning run of the Agora arm wrote (`python -m eval.compare --arms agora
--first-seed 0 --seeds 10 ... --out DIR`), named `LABEL=DIR` or just `DIR`; the first is the reference
(the defaults). Per task, the paired difference of the primary measure (the reported best's true loss)
from the reference on the same seeds, with its 95% t-interval; per candidate, the mean over tasks of
those differences in units of each task's reach (the distance from the optimum that counts as reaching
it: `Task.reach`; the projects' own tolerances are 1e-6 on the deterministic tasks, so they cannot
scale). A candidate qualifies when no task's interval lies above 0 (worse beyond noise); the rule keeps
the qualifying candidate of the lowest mean, and the reference when none is below 0.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from .stats import t_interval
from .tasks import TASKS


@dataclass(frozen=True)
class Candidate:
    label: str
    per_task: dict[str, tuple[float, float, float, float]]  # task -> (mean, paired diff, low, high)
    score: float  # mean paired difference over tasks, in reaches

    @property
    def qualifies(self) -> bool:
        return all(not low > 0 for _, _, low, _ in self.per_task.values())


def read_runs(folder: Path) -> dict[tuple[str, int], float]:
    """(task, seed) -> the Agora run's reported best's true loss."""
    with open(folder / "runs.csv", newline="") as handle:
        return {
            (row["task"], int(row["seed"])): float(row["reported_true"])
            for row in csv.DictReader(handle)
            if row["arm"] == "agora"
        }


def compare(reference: dict[tuple[str, int], float], label: str, runs: dict[tuple[str, int], float]) -> Candidate:
    per_task, scaled = {}, []
    for task in sorted({task for task, _ in reference}):
        seeds = sorted(seed for t, seed in reference if t == task and (t, seed) in runs)
        if not seeds:
            continue
        diffs = [runs[(task, s)] - reference[(task, s)] for s in seeds]
        mean, low, high = t_interval(diffs)
        per_task[task] = (t_interval([runs[(task, s)] for s in seeds])[0], mean, low, high)
        scaled.append(mean / TASKS[task].reach)
    return Candidate(label, per_task, sum(scaled) / len(scaled) if scaled else math.nan)


def choose(candidates: list[Candidate]) -> Candidate | None:
    """The rule: the qualifying candidate of the lowest score, if it is below 0 (better than the reference)."""
    qualifying = [c for c in candidates if c.qualifies and c.score < 0]
    return min(qualifying, key=lambda c: c.score) if qualifying else None


def table(candidates: list[Candidate]) -> str:
    lines = [
        "| setting | task | reported best (true loss) | minus reference (paired) | score (reaches) | qualifies |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in candidates:
        for task, (mean, diff, low, high) in c.per_task.items():
            lines.append(
                f"| {c.label} | {task} | {mean:.4f} | {diff:+.4f} [{low:+.4f}, {high:+.4f}] | {c.score:+.3f} | "
                f"{'yes' if c.qualifies else 'no'} |"
            )
    return "\n".join(lines)


def labelled(argument: str) -> tuple[str, Path]:
    label, sep, folder = argument.partition("=")
    return (label, Path(folder)) if sep else (Path(argument).name, Path(argument))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.compare.tuning", description=__doc__.splitlines()[0])
    parser.add_argument("reference", help="LABEL=DIR or DIR: the defaults' tuning run")
    parser.add_argument("candidates", nargs="+", help="LABEL=DIR or DIR: a candidate setting's tuning run")
    args = parser.parse_args(argv)
    ref_label, ref_folder = labelled(args.reference)
    reference = read_runs(ref_folder)
    candidates = [compare(reference, label, read_runs(folder)) for label, folder in map(labelled, args.candidates)]
    print(table(candidates))
    chosen = choose(candidates)
    kept = chosen.label if chosen else f"{ref_label} (the reference: no candidate qualifies and beats it)"
    print(f"\nchosen: {kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
