"""The matched comparison of collaboration protocols (the paper's Appendix C) on the demo task.

    python -m eval.compare [--out bench-out/compare] [--seeds 5] [--workers 3] [--rounds 6] [--jobs 2]
    python eval/compare/run.py ...          (the same)

Founds the demo project once, then runs every arm with every seed: the same scripted workers, task,
budget (evaluations per worker) and seeds; only the way a worker chooses its next step differs
(`arms.py`). Writes results.md, results.csv (per arm), runs.csv and runs.json (per community run) and
compare.png into the output folder. See eval/compare/README.md and docs/compare.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `eval.compare` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.compare import report  # noqa: E402
from eval.compare.arms import ARMS  # noqa: E402
from eval.compare.community import found_template, run_community  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MARKER = ".compare-work"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m eval.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "compare", help="output folder")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--seeds", type=int, default=5, help="seeds per arm (0..N-1 from --first-seed)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=3, help="workers per community")
    parser.add_argument("--rounds", type=int, default=6, help="evaluations per worker (the budget)")
    parser.add_argument("--jobs", type=int, default=2, help="community runs at once (processes)")
    parser.add_argument("--keep", action="store_true", help="keep every run's remote and clones in OUT/work")
    parser.add_argument("--from-runs", type=Path, help="only rewrite the table and plot from a runs.json")
    args = parser.parse_args(argv)
    for name in ("seeds", "workers", "rounds", "jobs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.workers > 12:
        parser.error("--workers must be at most 12 (the demo's accounts)")
    return args


def prepare(work: Path) -> None:
    """A fresh work folder; refuse one this harness did not make."""
    if work.exists() and any(work.iterdir()):
        if not (work / MARKER).exists():
            raise SystemExit(f"{work} is not empty and was not made by this harness: choose another --out")
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    (work / MARKER).write_text("made by eval/compare; safe to delete\n")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    out = args.out.resolve()
    if args.from_runs:
        out.mkdir(parents=True, exist_ok=True)
        saved = json.loads(args.from_runs.read_text())
        write_report(out, saved["runs"], saved["template"], saved["note"])
        return 0
    work = out / "work"
    prepare(work)
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")  # the accounts' signing keys: not the user's
    os.environ.pop("AGORA_ACCOUNT", None)
    started = time.perf_counter()
    template = found_template(work / "template")  # also puts this Python first on PATH for the evaluator
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    tasks = [(arm, seed) for seed in seeds for arm in args.arms]
    records = []
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {
            pool.submit(
                run_community, arm, seed, args.workers, args.rounds, template, work / f"{arm}-{seed}", args.keep
            ): (arm, seed)
            for arm, seed in tasks
        }
        for future in as_completed(futures):
            record = future.result()
            records.append(record)
            print(
                f"[{len(records)}/{len(tasks)}] {record['arm']:<9} seed {record['seed']}: best {record['best']:.4f}, "
                f"{record['evaluations']} evaluations, {len(record['errors'])} errors, {record['wall_s']:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    records.sort(key=lambda r: (ARMS.index(r["arm"]), r["seed"]))
    total = time.perf_counter() - started
    command = "python -m eval.compare " + " ".join(argv if argv is not None else sys.argv[1:])
    note = (
        f"{args.workers} workers x {args.rounds} evaluations per worker, seeds {seeds[0]}..{seeds[-1]}, "
        f"baseline {template['baseline']:.4f} bpc; {total:.0f} s in all with --jobs {args.jobs} "
        f"on {os.cpu_count()} cores.\nCommand: `{command.strip()}`\n"
    )
    (out / "runs.json").write_text(json.dumps({"template": template, "note": note, "runs": records}, indent=1))
    write_report(out, records, template, note)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {out}/results.md, results.csv, runs.csv, runs.json, compare.png in {total:.0f} s")
    return 0


def write_report(out: Path, records: list[dict], template: dict, note: str) -> None:
    rows = report.summarize(records)
    table = report.markdown(rows)
    (out / "results.md").write_text(f"{table}\n{note}")
    report.write_csv(out / "results.csv", rows, report.CSV_FIELDS)
    report.write_csv(out / "runs.csv", records, report.RUN_FIELDS)
    report.plot(out / "compare.png", records, rows)
    print(table)


if __name__ == "__main__":
    sys.exit(main())
