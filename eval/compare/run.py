"""The matched comparison of collaboration protocols (the paper's Appendix C) on a suite of tasks.

    python -m eval.compare [--out bench-out/compare] [--tasks ...] [--seeds 3] [--workers 3] [--budget 6]
    python eval/compare/run.py ...          (the same)

Founds each task's project once, then runs every arm with every seed: the same scripted workers, task,
budget (evaluations per worker) and seeds; only the way a worker chooses its next step differs
(`arms.py`). Writes results.md (a table per task), results.csv (per task and arm), runs.csv and runs.json
(per community run) and compare-TASK.png into the output folder. See eval/compare/README.md,
eval/compare/QUESTION.md and docs/compare.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `eval.compare` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.compare import report  # noqa: E402
from eval.compare.arms import ARMS  # noqa: E402
from eval.compare.community import found_template, run_community  # noqa: E402
from eval.compare.tasks import TASKS  # noqa: E402
from git_agora.demo.run import environment  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MARKER = ".compare-work"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m eval.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "compare", help="output folder")
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--seeds", type=int, default=3, help="seeds per arm and task (N from --first-seed)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=3, help="workers per community")
    parser.add_argument(
        "--budget", type=int, default=6, help="evaluations per worker: results, replicates and verifications"
    )
    parser.add_argument(
        "--ucb",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an [ucb] setting of every founded project (repeat; e.g. format=2, replicate_within=1.0)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="community runs at once (processes)")
    parser.add_argument("--keep", action="store_true", help="keep every run's remote and clones in OUT/work")
    parser.add_argument("--from-runs", type=Path, help="only rewrite the table and plot from a runs.json")
    args = parser.parse_args(argv)
    for name in ("seeds", "workers", "budget", "jobs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.workers > 12:
        parser.error("--workers must be at most 12 (the demo's accounts)")
    return args


def ucb_settings(pairs: list[str]) -> dict:
    """`KEY=VALUE` pairs as `[ucb]` settings (values read as TOML: numbers, true/false; otherwise a
    string), checked as a project would check them."""
    from git_agora.frontier.ucb import UcbParams

    settings: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--ucb {pair}: expected KEY=VALUE")
        try:
            settings[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            settings[key.strip()] = value.strip()
    try:
        UcbParams.from_mapping(settings)
    except ValueError as exc:
        raise SystemExit(f"--ucb: {exc}") from None
    return settings


def prepare(work: Path) -> None:
    """A fresh work folder; refuse one this harness did not make."""
    if work.exists() and any(work.iterdir()):
        if not (work / MARKER).exists():
            raise SystemExit(f"{work} is not empty and was not made by this harness: choose another --out")
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    (work / MARKER).write_text("made by eval/compare; safe to delete\n")


VERDICT_RULES = {  # which rule decided whose verdicts count (docs/protocol.md section 6, `[verdicts] format`)
    1: "flat standing: any established account confirms others; a contested best still leads",
    2: "ranked standing: the founder outranks the workers it confirmed; a contested result does not lead",
}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    out = args.out.resolve()
    if args.from_runs:
        out.mkdir(parents=True, exist_ok=True)
        saved = json.loads(args.from_runs.read_text())
        write_report(out, saved["runs"], saved["note"])
        return 0
    work = out / "work"
    prepare(work)
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")  # the accounts' signing keys: not the user's
    os.environ.pop("AGORA_ACCOUNT", None)
    os.environ["PATH"] = environment()["PATH"]  # the evaluator's python3 is this one
    started = time.perf_counter()
    ucb = ucb_settings(args.ucb)
    templates = {name: found_template(TASKS[name], work / f"template-{name}", ucb) for name in args.tasks}
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    runs = [(task, arm, seed) for seed in seeds for task in args.tasks for arm in args.arms]
    records = []
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(
                run_community,
                task,
                arm,
                seed,
                args.workers,
                args.budget,
                templates[task],
                work / f"{task}-{arm}-{seed}",
                args.keep,
            )
            for task, arm, seed in runs
        ]
        for future in as_completed(futures):
            record = future.result()
            records.append(record)
            save_runs(out, templates, f"partial: {len(records)} of {len(runs)} runs done\n", records)
            print(
                f"[{len(records)}/{len(runs)}] {record['task']:<9} {record['arm']:<9} seed {record['seed']}: "
                f"reported {record['reported_true']:.4f} (true), {record['evaluations']} evaluations, "
                f"{len(record['errors'])} errors, {record['wall_s']:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    records.sort(key=lambda r: (args.tasks.index(r["task"]), ARMS.index(r["arm"]), r["seed"]))
    total = time.perf_counter() - started
    command = "python -m eval.compare " + " ".join(argv if argv is not None else sys.argv[1:])
    settings = ", ".join(f"{k} = {v}" for k, v in ucb.items()) or "as git agora init writes them (no --ucb)"
    formats = sorted({t["verdicts_format"] for t in templates.values()})
    verdicts = ", ".join(f"format {f} ({VERDICT_RULES.get(f, 'unknown')})" for f in formats)
    note = (
        f"{args.workers} workers x {args.budget} evaluations per worker, seeds {seeds[0]}..{seeds[-1]}, "
        f"[ucb] {settings}; [verdicts] {verdicts}; "
        f"{total:.0f} s in all with --jobs {args.jobs} on {os.cpu_count()} cores.\n"
        f"Command: `{command.strip()}`\n"
    )
    save_runs(out, templates, note, records)
    write_report(out, records, note)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {out}/results.md, results.csv, runs.csv, runs.json and a plot per task in {total:.0f} s")
    return 0


def save_runs(out: Path, templates: dict, note: str, records: list[dict]) -> None:
    """runs.json, replaced whole after every community run, so a run stopped part way keeps what it
    finished (`--from-runs` reports it)."""
    scratch = out / "runs.json.part"
    scratch.write_text(json.dumps({"templates": templates, "note": note, "runs": records}, indent=1))
    os.replace(scratch, out / "runs.json")


def write_report(out: Path, records: list[dict], note: str) -> None:
    """results.md (a table per task), results.csv (a row per task and arm), runs.csv, compare-TASK.png."""
    sections, rows_all = [], []
    for task in dict.fromkeys(r["task"] for r in records):
        runs = [r for r in records if r["task"] == task]
        rows = report.summarize(runs)
        rows_all += rows
        sections.append(f"### {task}\n\n{report.markdown(rows)}")
        report.plot(out / f"compare-{task}.png", runs, rows)
    text = "\n".join(sections)
    (out / "results.md").write_text(f"{text}\n{note}")
    report.write_csv(out / "results.csv", rows_all, report.CSV_FIELDS)
    report.write_csv(out / "runs.csv", records, report.RUN_FIELDS)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
