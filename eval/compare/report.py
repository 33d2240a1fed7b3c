"""Aggregate one task's community runs per arm and write the table (Markdown, CSV) and the plot (PNG).

Per arm, over its seeds: the true loss of the reported best at the budget (mean and 95% t-interval),
its paired difference from the Agora arm on the same seeds, evaluations until a result reaches the
optimum, how often the reported best is a noise artefact, duplicated work (repeated evaluations,
equal-score and identical-choice pairs across accounts, unchanged results), the effective number of
clusters, verification coverage, verifications, replicates and wall time.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from . import stats
from .arms import ARMS, LABELS

REFERENCE = "agora"


def best_by_round(record: dict[str, Any], rounds: int) -> list[float]:
    """The lowest true loss the community has evaluated after each round 1..`rounds`."""
    best, out = record["baseline_true"], []
    for number in range(rounds):
        scores = [r["true"] for r in record["ledger"] if r["round"] == number and r["true"] is not None]
        best = min([best, *scores])
        out.append(best)
    return out


def unchanged_share(record: dict[str, Any], tolerance: float = 1e-6) -> float:
    """Share of the run's results that scored the same as their parent (a parent outside the ledger is
    the setup or the baseline, which share one tree: the baseline's score)."""
    ledger = [r for r in record["ledger"] if r["measured"] is not None]
    if not ledger:
        return math.nan
    score = {r["sha"]: r["measured"] for r in ledger}
    parents = [score.get(r["parent"], record["baseline"]) for r in ledger]
    return stats.unchanged(parents, [r["measured"] for r in ledger], tolerance) / len(ledger)


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per arm (in ARMS order) of one task's runs, every measure as mean with its 95% t-interval."""
    rows = []
    reference = {r["seed"]: r["reported_true"] for r in records if r["arm"] == REFERENCE}
    for arm in [a for a in ARMS if any(r["arm"] == a for r in records)]:
        runs = sorted((r for r in records if r["arm"] == arm), key=lambda r: r["seed"])
        row: dict[str, Any] = {
            "task": runs[0].get("task", "demo"),
            "arm": arm,
            "label": LABELS[arm],
            "runs": len(runs),
            "seeds": " ".join(str(r["seed"]) for r in runs),
            "workers": runs[0]["workers"],
            "budget": runs[0]["budget"],
        }
        measures = {
            "reported_true": [r["reported_true"] for r in runs],
            "reached": [r["reached"] for r in runs if r["reached"] is not None],
            "artefact_share": [float(r["artefact"]) for r in runs],
            "repeat_share": [
                r["repeats"] / r["result_evaluations"] if r["result_evaluations"] else math.nan for r in runs
            ],
            "equal_score_pairs": [r["equal_score_pairs"] for r in runs],
            "identical_choice_pairs": [r["identical_choice_pairs"] for r in runs],
            "unchanged_share": [unchanged_share(r) for r in runs],
            "effective_clusters": [r["effective_clusters"] for r in runs],
            "verified_share": [r["verified_share"] for r in runs],
            "verifications": [r["verifications"] for r in runs],
            "replicates": [r["replicates"] for r in runs],
            "evaluations": [r["evaluations"] for r in runs],
            "wall_s": [r["wall_s"] for r in runs],
        }
        if reference and arm != REFERENCE:
            measures["minus_agora"] = [
                r["reported_true"] - reference[r["seed"]] for r in runs if r["seed"] in reference
            ]
        for name, values in measures.items():
            mean, low, high = stats.t_interval(values)
            row[name], row[f"{name}_low"], row[f"{name}_high"] = mean, low, high
        row["reached_runs"] = len(measures["reached"])
        row["errors"] = sum(len(r["errors"]) for r in runs)
        rows.append(row)
    return rows


MEASURES = (
    "reported_true",
    "minus_agora",
    "reached",
    "artefact_share",
    "repeat_share",
    "equal_score_pairs",
    "identical_choice_pairs",
    "unchanged_share",
    "effective_clusters",
    "verified_share",
    "verifications",
    "replicates",
    "evaluations",
    "wall_s",
)
CSV_FIELDS = (
    ["task", "arm", "runs", "seeds", "workers", "budget"]
    + [f"{name}{suffix}" for name in MEASURES for suffix in ("", "_low", "_high")]
    + ["reached_runs", "errors"]
)
RUN_FIELDS = [
    "task",
    "arm",
    "seed",
    "workers",
    "budget",
    "evaluations",
    "results",
    "replicates",
    "crashes",
    "baseline",
    "best",
    "reported_true",
    "found_true",
    "gap",
    "artefact",
    "reached",
    "first_new_best",
    "equal_score_pairs",
    "identical_choice_pairs",
    "repeats",
    "effective_clusters",
    "verified_share",
    "verifications",
    "wall_s",
]


def write_csv(path: Path, rows: list[dict[str, Any]], fields: list[str]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_value(row.get(k)) for k in fields})


def _csv_value(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return "" if value is None else value


def _ci(row: dict[str, Any], name: str, digits: int) -> str:
    mean, low, high = row.get(name), row.get(f"{name}_low"), row.get(f"{name}_high")
    if mean is None or math.isnan(mean):
        return "n/a"
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table for people: means with their 95% t-intervals in brackets."""
    head = (
        "| arm | reported best (true loss) | minus Agora (paired) | evals to reach the optimum | noise artefacts "
        "| repeated evals | equal-score pairs | unchanged results | effective clusters | results verified "
        "| verifications | replicates | wall s |"
    )
    lines = [head, "|" + " --- |" * head.count(" | ") + " --- |"]
    for row in rows:
        delta = "(reference)" if row["arm"] == REFERENCE else _ci(row, "minus_agora", 4)
        reached = _ci(row, "reached", 1) if row["reached_runs"] else "never"
        reached += f" ({row['reached_runs']} of {row['runs']} runs)"
        lines.append(
            "| "
            + " | ".join(
                [
                    row["label"],
                    _ci(row, "reported_true", 4),
                    delta,
                    reached,
                    f"{row['artefact_share']:.0%}",
                    f"{row['repeat_share']:.0%}",
                    _ci(row, "equal_score_pairs", 1),
                    f"{row['unchanged_share']:.0%}",
                    _ci(row, "effective_clusters", 1),
                    f"{row['verified_share']:.0%}",
                    f"{row['verifications']:.1f}",
                    f"{row['replicates']:.1f}",
                    f"{row['wall_s']:.0f}",
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def plot(path: Path, records: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Eight panels: the lowest true loss evaluated so far per round (mean and 95% band), then per-arm
    measures (mean, 95% CI, and every seed as a dot)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [r["arm"] for r in rows]
    colors = dict(zip(ARMS, ["#7f7f7f", "#ff7f0e", "#2ca02c", "#1f77b4"]))
    fig, axes = plt.subplots(2, 4, figsize=(19, 8.5))
    ax = axes[0][0]
    rounds = max(r["rounds"] for r in records)
    for arm in arms:
        curves = [best_by_round(r, rounds) for r in records if r["arm"] == arm]
        x = list(range(1, len(curves[0]) + 1))
        bands = [stats.t_interval([c[i] for c in curves]) for i in range(len(x))]
        ax.plot(x, [b[0] for b in bands], marker="o", color=colors[arm], label=LABELS[arm])
        ax.fill_between(x, [b[1] for b in bands], [b[2] for b in bands], color=colors[arm], alpha=0.15)
    ax.set_xlabel("round")
    ax.set_ylabel("lowest true loss evaluated so far")
    ax.set_title("Best result vs budget (mean, 95% CI)")
    ax.legend()
    panels = [
        ("reported_true", "true loss of the reported best", lambda r: r["reported_true"]),
        ("reached", "evaluations to reach the optimum", lambda r: r["reached"]),
        ("artefact_share", "reported best is a noise artefact (share)", lambda r: float(r["artefact"])),
        ("repeat_share", "repeated evaluations (share)", lambda r: r["repeats"] / max(r["result_evaluations"], 1)),
        ("verified_share", "results verified by another account (share)", lambda r: r["verified_share"]),
        ("unchanged_share", "results scoring as their parent (share)", unchanged_share),
        ("effective_clusters", "effective clusters of results", lambda r: r["effective_clusters"]),
    ]
    for ax, (name, title, value) in zip([*axes[0][1:], *axes[1]], panels):
        for k, arm in enumerate(arms):
            row = rows[k]
            points = [value(r) for r in records if r["arm"] == arm and value(r) is not None]
            ax.scatter([k + 0.18] * len(points), points, s=12, color=colors[arm], alpha=0.6)
            mean, low, high = row[name], row[f"{name}_low"], row[f"{name}_high"]
            if not math.isnan(mean):
                ax.errorbar([k], [mean], yerr=[[mean - low], [high - mean]], fmt="s", color=colors[arm], capsize=5)
        ax.set_xticks(range(len(arms)), [LABELS[a] for a in arms], rotation=15)
        ax.set_title(title)
    first = records[0]
    fig.suptitle(
        f"The {first['task']} task: {first['workers']} workers x {first['budget']} evaluations, "
        f"{len({r['seed'] for r in records})} seeds per arm (scripted workers)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
