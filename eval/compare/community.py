"""One community run: one arm, one seed, W workers for R rounds on a copy of the founded project.

Rounds are synchronous, as if the workers ran at once: in each round every worker first chooses its
step from what the remote holds after the previous round (a planner assigns all steps at once), then
each acts in turn (evaluate, publish, post, verify). So nobody sees another's work of the same round,
as with concurrent agents, yet the run is reproducible from its seed (up to commit timestamps, which
only break ties). Everything runs in this process through the library; evaluations are subprocesses.

After the rounds the founder reruns each worker's first result (`establish_workers`), so workers'
verdicts count as they would in a project whose founder verifies. The record is plain JSON: the
per-result ledger in evaluation order, and the measures the report aggregates (`stats`), read back
from the remote through an observer clone that fetches everything.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

import git_agora as agora
from git_agora.demo.choices import read_choices
from git_agora.demo.run import ACCOUNTS, DemoPlan, found_project, make_clone
from git_agora.frontier.evidence import current_verdicts

from . import stats
from .arms import WORKERS, Planner

TOLERANCE = 1e-6  # the demo project's [metric] tolerance


def found_template(directory: Path) -> dict[str, Any]:
    """Found the demo project once (setup + the evaluated baseline); every run starts from a copy of
    its remote, so all arms and seeds share the very same setup commit and baseline."""
    directory.mkdir(parents=True)
    founder = found_project(DemoPlan(directory, 1, 1, 0))
    project = agora.open_project(founder, account="founder")
    (baseline,) = [e for e in agora.log(project, limit=10) if "bpc" in e.metrics]
    return {
        "remote": str(directory / "remote.git"),
        "baseline_sha": baseline.sha,
        "baseline": baseline.metrics["bpc"],
        "baseline_choices": fingerprint(read_choices((founder / "choices.py").read_text())),
    }


def fingerprint(values: dict[str, object]) -> str:
    """A choice set as one comparable string (knobs sorted; floats as Python writes them)."""
    return ";".join(f"{k}={values[k]!r}" for k in sorted(values))


def run_community(
    arm: str, seed: int, workers: int, rounds: int, template: dict[str, Any], directory: Path, keep: bool = False
) -> dict[str, Any]:
    """Run one community and return its record (see the module docstring)."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    shutil.copytree(template["remote"], directory / "remote.git")
    plan = DemoPlan(directory, workers, rounds, seed)
    accounts = list(ACCOUNTS[:workers])  # run.py allows at most len(ACCOUNTS) workers
    kind = WORKERS[arm]
    crew = [kind(make_clone(plan, f"worker-{a}", a), a, random.Random(f"{seed}/{a}")) for a in accounts]
    planner = Planner(make_clone(plan, "planner", "planner")) if arm == "planner" else None
    ledger: list[dict[str, Any]] = []
    errors: list[str] = []
    started = time.perf_counter()
    with open(directory / "events.log", "w") as log, contextlib.redirect_stdout(log):
        for number in range(rounds):
            if planner:
                steps = [w.take(s) for w, s in zip(crew, planner.assign(crew))]  # type: ignore[attr-defined]
            else:
                steps = [w.choose() for w in crew]
            for position, (worker, step) in enumerate(zip(crew, steps)):
                try:
                    outcome = worker.act(number, step)
                except Exception as exc:  # a round that fails is reported and counted, never fatal
                    errors.append(f"{worker.account} round {number}: {exc}"[:300])
                    continue
                values = read_choices((worker.clone / "choices.py").read_text())
                values[outcome.change.knob] = outcome.change.new
                ledger.append(
                    {
                        "round": number,
                        "position": position,
                        "account": worker.account,
                        "slot": step.slot,
                        "parent": step.parent["sha"],
                        "change": outcome.change.describe(),
                        "choices": fingerprint(values),
                        "bpc": outcome.measured,
                        "sha": outcome.sha,
                    }
                )
    wall = time.perf_counter() - started
    with open(directory / "events.log", "a") as log, contextlib.redirect_stdout(log):
        establish_workers(plan, ledger)
    record = {"arm": arm, "seed": seed, "workers": workers, "rounds": rounds, "wall_s": wall, "errors": errors}
    record.update(observe(make_clone(plan, "observer", "observer"), accounts, ledger, template))
    record["ledger"] = ledger
    if not keep:
        shutil.rmtree(directory, ignore_errors=True)
    return record


def establish_workers(plan: DemoPlan, ledger: list[dict[str, Any]]) -> None:
    """The founder reruns each worker's first result, as a project's founder would: a confirmed one makes
    its worker established, so that worker's verdicts count (docs/protocol.md, "Whose verdicts count").
    The same for every arm, after the rounds (outside the wall time)."""
    founder = agora.open_project(make_clone(plan, "founder", "founder"), account="founder")
    agora.fetch(founder)
    firsts: dict[str, str] = {}
    for row in ledger:
        if row["bpc"] is not None and row["sha"]:
            firsts.setdefault(row["account"], row["sha"])
    for sha in firsts.values():
        agora.verify(founder, sha)


def observe(clone: Path, accounts: list[str], ledger: list[dict[str, Any]], template: dict[str, Any]) -> dict[str, Any]:
    """The run's measures, from the remote as an observer sees it after the last round."""
    project = agora.open_project(clone, account="observer")
    agora.fetch(project)
    frame = agora.analyze(project, limit=1).frame
    shas = frame.table["sha"].to_pylist()
    owners = frame.table["account"].to_pylist()
    titles = frame.table["title"].to_pylist()
    node = {sha: i for i, sha in enumerate(shas)}
    done = [r for r in ledger if r["bpc"] is not None]
    scores = [r["bpc"] for r in done]
    results = [node[r["sha"]] for r in done if r["sha"] in node]
    verdicts = current_verdicts(frame.graph)
    by_workers = {
        int(target)
        for node, target, counts in zip(verdicts.node.tolist(), verdicts.target.tolist(), verdicts.counts.tolist())
        if counts and owners[node] in accounts
    }
    verified = [i in by_workers for i in results]  # a counting verdict of a worker (not the founder's)
    start = template["baseline"]
    first = stats.first_new_best(start, scores, TOLERANCE)
    return {
        "baseline": start,
        "evaluations": len(ledger),
        "results": len(done),
        "crashes": len(ledger) - len(done),
        "best": min([start, *scores]),
        "best_so_far": stats.best_so_far(start, scores),
        "first_new_best": first,
        "equal_score_pairs": stats.equal_score_pairs([r["account"] for r in done], scores, TOLERANCE),
        "identical_choice_pairs": stats.identical_choice_pairs(
            [r["account"] for r in ledger], [r["choices"] for r in ledger]
        ),
        "repeats": stats.repeats([r["choices"] for r in ledger], [template["baseline_choices"]]),
        "effective_clusters": effective_clusters([titles[i] or "" for i in results]),
        "verified_share": (sum(verified) / len(verified)) if verified else 0.0,
        "confirmed_results": sum(frame.status[i] == "confirmed" for i in results),  # by the founder or a worker
        "verifications": int(sum(1 for i in range(frame.n) if frame.verification[i] and owners[i] in accounts)),
    }


def effective_clusters(texts: list[str]) -> float:
    """exp(entropy) of the cluster sizes of `texts`, clustered as the project clusters descriptions:
    the hashing embedding, single-link at the project's cosine threshold (`frontier.clusters`)."""
    from git_agora.embedding.backends import hashing_backend
    from git_agora.frontier.clusters import ClusterParams, single_link
    from git_agora.frontier.embeddings import unit_rows

    if not texts:
        return 0.0
    vectors = unit_rows(np.asarray(hashing_backend().encode(texts), dtype=np.float32))
    labels, _ = single_link(vectors, ClusterParams().threshold)
    return stats.effective_count(np.bincount(labels).tolist())
