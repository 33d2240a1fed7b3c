"""`python -m eval.compare.noisy_diagnostic OUT.csv RUNS...`: why a noisy community's reported best is a
lucky draw (issue 51), from the ledgers of community runs already made.

RUNS are `runs.json` files (or `runs.json.gz`) of `python -m eval.compare` or `runs.jsonl` files of `python -m
eval.compare.confirm`; only noisy-task runs are read. Per run it writes one row: the reported setting,
its luck (mean measured minus true loss over its evaluations), how often it was evaluated and under how
many `SEED`s, how often the workers' verifications reran it, how many results were built on it (and
from which slot), how many distinct settings the run evaluated and how many of them were truly better
than the reported one by more than the tolerance (an artefact has at least one). It prints the same per
arm, with the artefact share's 95% Wilson interval. A diagnosis, not part of any frozen question.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from . import stats
from .arms import ARMS, LABELS
from .tasks import TASKS

TOLERANCE = TASKS["noisy"].tolerance


def seed_of(choices: str) -> str:
    """The `SEED` level in a choice fingerprint (`community.fingerprint`)."""
    for part in choices.split(";"):
        if part.startswith("SEED="):
            return part[len("SEED=") :]
    return ""


def diagnose(record: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    """One noisy run's row (see the module docstring); `template`: its founded project's baseline."""
    done = [r for r in record["ledger"] if r["measured"] is not None]
    settings = [template["baseline_setting"], *(r["setting"] for r in done)]
    measured = [template["baseline"], *(r["measured"] for r in done)]
    trues = [template["baseline_true"], *(r["true"] for r in done)]
    pick = stats.reported_best(settings, measured)
    assert pick is not None
    chosen = settings[pick]
    mine = [i for i, s in enumerate(settings) if s == chosen]
    shas = {done[i - 1]["sha"] for i in mine if i > 0}
    true_of = dict(zip(settings, trues))
    better = {s for s, t in true_of.items() if t < true_of[chosen] - TOLERANCE}
    built = [r for r in done if r["parent"] in shas]
    seeds = {seed_of(done[i - 1]["choices"]) if i > 0 else "0" for i in mine}
    return {
        "arm": record["arm"],
        "seed": record["seed"],
        "reported_setting": chosen,
        "reported_true": true_of[chosen],
        "reported_luck": sum(measured[i] - trues[i] for i in mine) / len(mine),
        "reported_round": done[pick - 1]["round"] if pick > 0 else -1,
        "reported_is_baseline": pick == 0,
        "found_true": min(trues),
        "artefact": true_of[chosen] > min(trues) + TOLERANCE,
        "reported_evaluations": len(mine),
        "reported_seeds": len(seeds),
        "reported_verifications": sum(t in shas for t in record.get("verification_targets", [])),
        "built_on_reported": len(built),
        "built_on_reported_exploit": sum(r["slot"] == "exploit" for r in built),
        "distinct_settings": len(set(settings)),
        "truly_better_settings": len(better),
        "truly_better_built_on_reported": len({r["setting"] for r in built} & better),
        "results_not_seed_0": sum(seed_of(r["choices"]) != "0" for r in done),
        "verifications": record["verifications"],
        "results": len(done),
    }


def shared_settings(records: list[dict[str, Any]]) -> tuple[int, int]:
    """(settings evaluated under SEED 0 in more than one run, how many of them measured differently in
    some run): the luck is a function of SEED and the setting, so 0 says the noise is the same fixed
    surface in every run, arm and seed."""
    values: dict[str, set[float]] = {}
    runs: dict[str, set[tuple[str, int]]] = {}
    for record in records:
        for r in record["ledger"]:
            if r["measured"] is not None and seed_of(r["choices"]) == "0":
                values.setdefault(r["setting"], set()).add(r["measured"])
                runs.setdefault(r["setting"], set()).add((record["arm"], record["seed"]))
    shared = [s for s, seen in runs.items() if len(seen) > 1]
    return len(shared), sum(len(values[s]) > 1 for s in shared)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion."""
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def binomial_tail(n: int, p: float, low: int, high: int) -> float:
    """P(low <= X <= high) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(low, high + 1))


def load(paths: list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every noisy run of the files, diagnosed, and their records (a seed and arm seen twice is kept
    once, the first)."""
    rows, seen, kept = [], set(), []
    for path in paths:
        if path.suffix == ".jsonl":
            records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            template = None
        else:
            text = gzip.decompress(path.read_bytes()).decode() if path.name.endswith(".gz") else path.read_text()
            saved = json.loads(text)
            records, template = saved["runs"], saved["templates"].get("noisy")
        for record in records:
            if record["task"] != "noisy" or (record["arm"], record["seed"]) in seen:
                continue
            seen.add((record["arm"], record["seed"]))
            base = template or {
                "baseline_setting": baseline_setting(),
                "baseline": record["baseline"],
                "baseline_true": record["baseline_true"],
            }
            rows.append(diagnose(record, base))
            kept.append(record)
    return rows, kept


def baseline_setting() -> str:
    from .community import fingerprint

    return fingerprint(TASKS["noisy"].baseline_values, ("SEED",))


def summary(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| arm | runs | artefacts | share [95% Wilson] | reported luck (mean) | in artefact runs | evaluations "
        "of the reported setting | under another SEED | verifications of it | results built on it "
        "(exploit) | distinct settings | truly better than reported (artefact runs) | of them built on it |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for arm in [a for a in ARMS if any(r["arm"] == a for r in rows)]:
        mine = [r for r in rows if r["arm"] == arm]
        bad = [r for r in mine if r["artefact"]]
        low, high = wilson(len(bad), len(mine))

        def mean(key: str, among: list[dict[str, Any]] = mine) -> float:
            return sum(float(r[key]) for r in among) / len(among) if among else math.nan

        lines.append(
            f"| {LABELS[arm]} | {len(mine)} | {len(bad)} | {len(bad) / len(mine):.0%} [{low:.0%}, {high:.0%}] "
            f"| {mean('reported_luck'):+.4f} | {mean('reported_luck', bad):+.4f} | {mean('reported_evaluations'):.2f} "
            f"| {mean('reported_seeds') - 1:.2f} | {mean('reported_verifications'):.2f} "
            f"| {mean('built_on_reported'):.2f} ({mean('built_on_reported_exploit'):.2f}) "
            f"| {mean('distinct_settings'):.1f} | {mean('truly_better_settings', bad):.2f} "
            f"| {mean('truly_better_built_on_reported', bad):.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.compare.noisy_diagnostic", description=__doc__.splitlines()[0]
    )
    parser.add_argument("out", type=Path, help="the per-run CSV to write")
    parser.add_argument("runs", type=Path, nargs="+", help="runs.json or runs.jsonl files")
    args = parser.parse_args(argv)
    rows, records = load(args.runs)
    if not rows:
        raise SystemExit("no noisy runs in those files")
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(summary(rows))
    reported = Counter(r["reported_setting"] for r in rows if r["artefact"])
    if reported:
        setting, count = reported.most_common(1)[0]
        print(
            f"artefact runs: {sum(reported.values())}, {len(reported)} distinct reported settings; "
            f"the most frequent ({count} runs): {setting}"
        )
    shared, differing = shared_settings(records)
    print(
        f"settings evaluated under SEED 0 in more than one run: {shared}; measured differently somewhere: {differing}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
