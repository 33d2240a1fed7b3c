"""`python -m eval.compare.confirm`: the confirmatory runs that `QUESTION-11.md` and `QUESTION-12.md` freeze.

    python -m eval.compare.confirm [--question 12] [--out eval/compare/results/confirm-12] [--jobs 2]
    python -m eval.compare.confirm --resume            # go on where a stopped run left off
    python -m eval.compare.confirm --report            # only the tables and plots, from runs.jsonl
    python -m eval.compare.confirm --recheck noisy:agora:SEED ...   # rerun stored runs, compare

Everything that could be chosen after seeing an outcome is fixed here and in the question's file, which
must be committed, unchanged since, before the run starts: the seeds (`seeds_from_commit`: 40 seeds
from a hash of the commit that added the question file, none of them used before), every task and arm,
3 workers x 8 evaluations, the setting `git agora init` writes (no `--ucb`), the margins (each task's
reach), and the level (one-sided 0.05, divided by the 12 comparisons and by the count of questions
asked when the question was frozen: its number). Only which question, how many processes run at once
(`--jobs`) and where the files go can be chosen, and none of them changes a result.

Runs go in seed order (every task and arm of a seed before the next seed), each appended to
`runs.jsonl` as it finishes, so a run stopped part way keeps whole seeds and `--resume` finishes it.
At the end, and with `--report`: `results.md`/`results.csv`/`runs.csv`/`compare-TASK.png` (run.py's
table and plots) and `confirm.md`/`confirm.csv`/`confirm.png`, the non-inferiority test per task and
arm; every table is computed on the seeds where all four arms of the task finished (a partial run
says so in every file; runs.jsonl keeps every finished community).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import stats
from .arms import ARMS, LABELS
from .community import found_template, run_community
from .report import REFERENCE
from .run import ROOT, prepare, write_report
from .tasks import TASKS

HERE = Path(__file__).resolve().parent
QUESTIONS = (11, 12)  # the confirmatory questions; each one's number is the count of questions asked with it
SEEDS_PER_TASK = 40
SEED_LOW, SEED_SPAN = 1_000_000, 9_000_000  # every seed used before this question is below 10,000
WORKERS, BUDGET = 3, 8
ALPHA = 0.05  # one-sided, for the whole family below
COMPARED = tuple(a for a in ARMS if a != REFERENCE)
COMPARISONS = len(TASKS) * len(COMPARED)  # 4 tasks x 3 arms
MARGINS = {name: task.reach for name, task in TASKS.items()}  # demo 0.001, noisy 0.01, deceptive 0.05, wide 0.02


def seeds_from_commit(sha: str, count: int) -> list[int]:
    """The seed rule: seed i is SEED_LOW + (the first 8 bytes of sha256("SHA/i"), big-endian) mod
    SEED_SPAN, for i = 0, 1, ..., a seed already drawn skipped, until `count` seeds. A function of the
    freezing commit's name and the count only: no outcome can move it, and a longer list starts with a
    shorter one."""
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise ValueError(f"not a full commit name: {sha!r}")
    seeds: list[int] = []
    i = 0
    while len(seeds) < count:
        digest = hashlib.sha256(f"{sha}/{i}".encode()).digest()
        seed = SEED_LOW + int.from_bytes(digest[:8], "big") % SEED_SPAN
        if seed not in seeds:
            seeds.append(seed)
        i += 1
    return seeds


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout.strip()


def question_file(number: int) -> Path:
    """`QUESTION-N.md`: the question asked as the N-th (`QUESTION.md` was the first)."""
    return HERE / f"QUESTION-{number}.md"


def level_of(number: int) -> float:
    """The one-sided level of each test of question `number`: ALPHA over every comparison of every
    question asked so far (it is the number-th), so each further question makes the test harder."""
    return stats.corrected_level(ALPHA, COMPARISONS, number)


def freezing_commit(question: Path, root: Path = ROOT) -> str:
    """The commit that added the question file. Refuses a question that is not committed, or changed since
    (in a later commit or in the work tree): the seeds and the rule must be those frozen."""
    relative = str(question.resolve().relative_to(root.resolve()))
    history = _git(root, "log", "--format=%H", "--", relative).split()
    if not history:
        raise SystemExit(f"{relative} is not committed: commit the question before the run")
    if len(history) > 1:
        raise SystemExit(f"{relative} changed after it was frozen ({len(history)} commits touch it)")
    if _git(root, "status", "--porcelain", "--", relative):
        raise SystemExit(f"{relative} differs from its frozen commit: restore it")
    return history[0]


def check_code_committed(root: Path = ROOT) -> str:
    """HEAD, when the code the run uses is committed (a rerun of the command must reproduce the run)."""
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no", "--", "src", "eval", "pyproject.toml")
    if any(line.endswith(".py") or line.endswith(".toml") for line in dirty.splitlines()):
        raise SystemExit("uncommitted changes to the code in src/ or eval/: commit them before the run")
    return _git(root, "rev-parse", "HEAD")


@dataclass(frozen=True)
class Row:
    """One task and arm of the confirmatory table."""

    task: str
    arm: str
    seeds: int
    arm_mean: float  # the arm's reported best (true loss), mean over the seeds
    agora_mean: float
    test: stats.NonInferiority

    def as_dict(self) -> dict[str, Any]:
        t = self.test
        return {
            "task": self.task,
            "arm": self.arm,
            "seeds": self.seeds,
            "arm_reported_true": self.arm_mean,
            "agora_reported_true": self.agora_mean,
            "agora_minus_arm": t.mean,
            "sd": t.sd,
            "level": t.level,
            "critical_t": t.critical,
            "upper_bound": t.upper,
            "margin": t.margin,
            "non_inferior": t.non_inferior,
        }


def complete_seeds(records: list[dict[str, Any]], task: str) -> list[int]:
    """The seeds where every arm of `task` finished (only these pair)."""
    done: dict[int, set[str]] = {}
    for r in records:
        if r["task"] == task:
            done.setdefault(r["seed"], set()).add(r["arm"])
    return sorted(seed for seed, arms in done.items() if arms >= set(ARMS))


def confirm_rows(records: list[dict[str, Any]], level: float, margins: dict[str, float] = MARGINS) -> list[Row]:
    """The non-inferiority test per task and compared arm, over the task's complete seeds."""
    rows = []
    for task in [t for t in TASKS if any(r["task"] == t for r in records)]:
        seeds = set(complete_seeds(records, task))
        if len(seeds) < 2:
            continue
        value = {(r["arm"], r["seed"]): r["reported_true"] for r in records if r["task"] == task}
        order = sorted(seeds)
        agora = [value[(REFERENCE, s)] for s in order]
        for arm in COMPARED:
            other = [value[(arm, s)] for s in order]
            test = stats.non_inferiority([a - o for a, o in zip(agora, other)], margins[task], level)
            rows.append(Row(task, arm, len(order), sum(other) / len(other), sum(agora) / len(agora), test))
    return rows


def verdicts(rows: list[Row]) -> dict[str, bool]:
    """Per task: confirmed when Agora is non-inferior to every compared arm."""
    out: dict[str, bool] = {}
    for row in rows:
        out[row.task] = out.get(row.task, True) and row.test.non_inferior
    return out


def verdict_text(ok: bool, complete: bool) -> str:
    """A task's decision; a partial run decides nothing (`QUESTION-11.md`, `QUESTION-12.md`)."""
    outcome = "confirmed" if ok else "not confirmed"
    return outcome if complete else f"no decision: a partial run (on these seeds: {outcome})"


def markdown(rows: list[Row], note: str, complete: bool = True) -> str:
    lines = [
        "| task | arm | seeds | arm's reported best | Agora's | Agora minus arm (mean) | sd | corrected upper bound "
        "| margin | Agora no worse by more than the margin |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        t = row.test
        lines.append(
            f"| {row.task} | {LABELS[row.arm]} | {row.seeds} | {row.arm_mean:.4f} | {row.agora_mean:.4f} "
            f"| {t.mean:+.4f} | {t.sd:.4f} | {t.upper:+.4f} | {t.margin:g} | {'yes' if t.non_inferior else 'no'} |"
        )
    lines.append("")
    lines += [f"- **{task}: {verdict_text(ok, complete)}**" for task, ok in verdicts(rows).items()]
    return "\n".join(lines) + "\n\n" + note


def plot(path: Path, rows: list[Row]) -> None:
    """One panel per task: per arm, the mean excess of Agora (dot) up to its corrected upper bound (bar),
    and the margin (dashed): a bar that ends left of the line is non-inferior."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r.task for r in rows))
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.6 * len(tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        mine = [r for r in rows if r.task == task]
        for k, row in enumerate(mine):
            color = "#2ca02c" if row.test.non_inferior else "#d62728"
            ax.plot([row.test.mean, row.test.upper], [k, k], color=color, linewidth=3)
            ax.plot([row.test.mean], [k], "o", color=color)
        ax.axvline(mine[0].test.margin, linestyle="--", color="black", label="margin")
        ax.axvline(0.0, color="#999999", linewidth=0.8)
        ax.set_yticks(range(len(mine)), [LABELS[r.arm] for r in mine])
        ax.set_title(f"{task} ({mine[0].seeds} seeds)")
        ax.set_xlabel("Agora minus arm: mean .. corrected upper bound")
    axes[0][0].legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_confirm(out: Path, records: list[dict[str, Any]], note: str, number: int, complete: bool = True) -> list[Row]:
    rows = confirm_rows(records, level_of(number))
    (out / "confirm.md").write_text(markdown(rows, note, complete))
    with open(out / "confirm.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0].as_dict()) if rows else ["task"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: f"{v:.6g}" if isinstance(v, float) else v for k, v in row.as_dict().items()})
    if rows:
        plot(out / "confirm.png", rows)
    return rows


def read_runs(path: Path) -> list[dict[str, Any]]:
    """The records of runs.jsonl (a line cut short by a stop is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def describe(number: int, freeze: str, seeds: list[int], head: str, done: int, planned: int, timing: str) -> str:
    level = level_of(number)
    state = "complete" if done == planned else f"PARTIAL: {done} of {planned} community runs finished"
    return (
        f"{state}. Question {question_file(number).name}, frozen in commit {freeze}; code at {head}. "
        f"Seeds: {len(seeds)} per task, sha256('{freeze}/i') rule ({seeds[0]}, {seeds[1]}, ... {seeds[-1]}). "
        f"{WORKERS} workers x {BUDGET} evaluations, every task and arm, [ucb] as git agora init writes it. "
        f"Non-inferiority per task and arm: Agora minus the arm's reported best (true loss), one-sided level "
        f"{ALPHA} / ({COMPARISONS} comparisons x {number} questions) = {level:.3g}; margins (each task's "
        f"reach): {', '.join(f'{t} {m:g}' for t, m in MARGINS.items())}. "
        f"{timing}\n"
        f"Command: `python -m eval.compare.confirm` (then `--resume` if it stopped)\n"
    )


def recheck(out: Path, keys: list[str]) -> int:
    """Rerun stored runs (TASK:ARM:SEED) with the same templates' setting and compare them value by value."""
    stored = {(r["task"], r["arm"], r["seed"]): r for r in read_runs(out / "runs.jsonl")}
    work = ROOT / "bench-out" / "confirm-recheck"
    prepare(work)
    _environment(work)
    differ = 0
    templates: dict[str, dict] = {}
    for key in keys:
        task, arm, seed_text = (key.split(":") + ["", ""])[:3]
        if (task, arm, int(seed_text or -1)) not in stored:
            raise SystemExit(f"--recheck {key}: no such run in {out / 'runs.jsonl'}")
        old = stored[(task, arm, int(seed_text))]
        if task not in templates:
            templates[task] = found_template(TASKS[task], work / f"template-{task}", {})
        new = run_community(task, arm, int(seed_text), WORKERS, BUDGET, templates[task], work / key.replace(":", "-"))
        same = [(a["choices"], a["measured"], a["slot"]) for a in old["ledger"]] == [
            (b["choices"], b["measured"], b["slot"]) for b in new["ledger"]
        ] and old["reported_true"] == new["reported_true"]
        differ += not same
        verdict = "identical" if same else "DIFFERS"
        print(f"{key}: {verdict} (reported {old['reported_true']} then {new['reported_true']})")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if differ else 0


def _environment(work: Path) -> None:
    from git_agora.demo.run import environment

    os.environ["XDG_CONFIG_HOME"] = str(work / "config")  # the accounts' signing keys: not the user's
    os.environ.pop("AGORA_ACCOUNT", None)
    os.environ["PATH"] = environment()["PATH"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.compare.confirm", description=__doc__.splitlines()[0])
    parser.add_argument("--question", type=int, choices=QUESTIONS, default=QUESTIONS[-1], help="which question")
    parser.add_argument("--out", type=Path, help="output folder (default: eval/compare/results/confirm-N)")
    parser.add_argument("--jobs", type=int, default=2, help="community runs at once (processes)")
    parser.add_argument("--resume", action="store_true", help="keep runs.jsonl's runs and do only the others")
    parser.add_argument("--report", action="store_true", help="only write the tables and plots from runs.jsonl")
    parser.add_argument("--recheck", nargs="+", metavar="TASK:ARM:SEED", help="rerun stored runs and compare")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    question = args.question
    out = (args.out or HERE / "results" / f"confirm-{question}").resolve()
    if args.recheck:
        return recheck(out, args.recheck)
    freeze = freezing_commit(question_file(question))
    seeds = seeds_from_commit(freeze, SEEDS_PER_TASK)
    planned = [(task, arm, seed) for seed in seeds for task in TASKS for arm in ARMS]
    path = out / "runs.jsonl"
    if args.report:
        records = read_runs(path)
        head = code_at(records)
        timing = f"{sum(r['wall_s'] for r in records):.0f} s of community rounds in all (summed over runs)."
        note = describe(question, freeze, seeds, head, len(records), len(planned), timing)
        return report(out, records, note, question, len(records) == len(planned))
    head = check_code_committed()
    out.mkdir(parents=True, exist_ok=True)
    records = read_runs(path) if args.resume else []
    if not args.resume and path.exists() and records:
        raise SystemExit(f"{path} holds runs: --resume to go on, or choose another --out")
    have = {(r["task"], r["arm"], r["seed"]) for r in records}
    todo = [run for run in planned if run not in have]
    work = ROOT / "bench-out" / "confirm-work"
    prepare(work)
    _environment(work)
    started = time.perf_counter()
    templates = {name: found_template(TASKS[name], work / f"template-{name}", {}) for name in TASKS}
    with (
        open(path, "a") as sink,
        ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool,
    ):
        futures = [
            pool.submit(run_community, t, a, s, WORKERS, BUDGET, templates[t], work / f"{t}-{a}-{s}")
            for t, a, s in todo
        ]
        for finished, future in enumerate(as_completed(futures), 1):
            record = future.result()
            record["code"] = head
            sink.write(json.dumps(record) + "\n")
            sink.flush()
            print(
                f"[{len(have) + finished}/{len(planned)}] {record['task']:<9} {record['arm']:<9} "
                f"seed {record['seed']}: reported {record['reported_true']:.4f} (true), "
                f"{len(record['errors'])} errors, {record['wall_s']:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    records = read_runs(path)
    wall = time.perf_counter() - started
    shutil.rmtree(work, ignore_errors=True)
    timing = f"This invocation: {wall:.0f} s wall with --jobs {args.jobs} on {os.cpu_count()} cores."
    note = describe(question, freeze, seeds, code_at(records), len(records), len(planned), timing)
    return report(out, records, note, question, len(records) == len(planned))


def code_at(records: list[dict[str, Any]]) -> str:
    """The commits whose code ran the records, in the order they first ran, each with its count of runs
    when a resumed run used more than one (`--recheck` compares a stored run with a rerun on today's)."""
    counts: dict[str, int] = {}
    for record in records:
        code = record.get("code", "?")
        counts[code] = counts.get(code, 0) + 1
    if len(counts) <= 1:
        return next(iter(counts), "?")
    return ", ".join(f"{code} ({count} run{'' if count == 1 else 's'})" for code, count in counts.items())


def report(out: Path, records: list[dict[str, Any]], note: str, number: int, finished: bool) -> int:
    if not records:
        raise SystemExit(f"no runs in {out / 'runs.jsonl'}")
    complete = {(task, seed) for task in TASKS for seed in complete_seeds(records, task)}
    records = [r for r in records if (r["task"], r["seed"]) in complete]  # the tables pair whole seeds only
    if not records:
        raise SystemExit("no seed has every arm of a task finished yet")
    order = {seed: i for i, seed in enumerate(dict.fromkeys(r["seed"] for r in records))}
    records.sort(key=lambda r: (list(TASKS).index(r["task"]), ARMS.index(r["arm"]), order[r["seed"]]))
    write_report(out, records, note)
    rows = write_confirm(out, records, note, number, finished)
    for task, ok in verdicts(rows).items():
        print(f"{task}: {verdict_text(ok, finished)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
