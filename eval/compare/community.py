"""One community run: one task, one arm, one seed, W workers with B evaluations each, on a copy of the
task's founded project.

Rounds are synchronous, as if the workers ran at once: in each round every worker first chooses its step
from what the remote holds after the previous round and the claims made before it in this round
(`TaskWorker.commit_to`; a planner assigns all steps at once), then each acts in turn (evaluate,
publish, post, verify). So nobody sees another's work of the same round, as with concurrent agents, yet
the run is reproducible from its seed: the community runs on its own clock (`clock.CommunityClock`), which
gives every publication its own second in the order the run makes them, so no order is left to commit
hashes. Everything runs in this process through the library; evaluations are subprocesses.

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
from git_agora.demo.run import ACCOUNTS, DemoPlan, make_clone
from git_agora.frontier.evidence import current_verdicts

from . import stats
from .arms import WORKERS, Planner
from .clock import START, CommunityClock
from .tasks import TASKS, Task, found


def found_template(task: Task, directory: Path, ucb: dict | None = None) -> dict[str, Any]:
    """Found the task's project once (setup + the evaluated baseline; `ucb`: its `[ucb]` settings);
    every run starts from a copy of its remote, so all arms and seeds share the very same setup commit
    and baseline. Founded on a community clock from `START`; `clock`: where the runs' clocks go on from."""
    directory.mkdir(parents=True)
    with CommunityClock(START) as clock:
        founder = found(task, directory, ucb)
        project = agora.open_project(founder, account="founder")
        (baseline,) = [e for e in agora.log(project, limit=10) if task.metric in e.metrics]
        clock.advance()
    values = read_choices((founder / task.knob_file).read_text())
    measured = baseline.metrics[task.metric]
    return {
        "task": task.name,
        "ucb": dict(ucb or {}),
        "verdicts_format": project.config.verdicts_format,  # 2: ranked standing (docs/protocol.md section 6)
        "remote": str(directory / "remote.git"),
        "baseline_sha": baseline.sha,
        "baseline": measured,
        "baseline_true": task.true_loss(values, measured),
        "baseline_choices": fingerprint(values),
        "baseline_setting": fingerprint(values, ("SEED",)),
        "clock": clock.now,
    }


def fingerprint(values: dict[str, object], leave_out: tuple[str, ...] = ()) -> str:
    """A choice set as one comparable string (knobs sorted; floats as Python writes them)."""
    return ";".join(f"{k}={values[k]!r}" for k in sorted(values) if k not in leave_out)


def run_community(
    task_name: str,
    arm: str,
    seed: int,
    workers: int,
    budget: int,
    template: dict[str, Any],
    directory: Path,
    keep: bool = False,
) -> dict[str, Any]:
    """Run one community and return its record (see the module docstring). `budget`: evaluations per
    worker, its results, replicates and verifications together."""
    task = TASKS[task_name]
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    shutil.copytree(template["remote"], directory / "remote.git")
    with CommunityClock(template["clock"]) as clock:
        record = rounds(task, arm, seed, workers, budget, template, DemoPlan(directory, workers, budget, seed), clock)
    if not keep:
        shutil.rmtree(directory, ignore_errors=True)
    return record


def rounds(
    task: Task,
    arm: str,
    seed: int,
    workers: int,
    budget: int,
    template: dict[str, Any],
    plan: DemoPlan,
    clock: CommunityClock,
) -> dict[str, Any]:
    """The community's rounds, the founder's reruns and the observer's reading, each step `clock.advance()`
    after the one before; the run's record."""
    directory = plan.directory
    accounts = list(ACCOUNTS[:workers])  # run.py allows at most len(ACCOUNTS) workers
    kind = WORKERS[arm]
    crew = [kind(make_clone(plan, f"worker-{a}", a), a, random.Random(f"{seed}/{a}"), task) for a in accounts]
    planner = Planner(make_clone(plan, "planner", "planner"), task) if arm == "planner" else None
    left = {w.account: budget for w in crew}
    ledger: list[dict[str, Any]] = []
    errors: list[str] = []
    spent = 0
    started = time.perf_counter()
    with open(directory / "events.log", "w") as log, contextlib.redirect_stdout(log):
        for number in range(budget):
            active = [w for w in crew if left[w.account] > 0]
            if not active:
                break
            if planner:
                clock.advance()
                steps = [w.take(s) for w, s in zip(active, planner.assign(active))]  # type: ignore[attr-defined]
            else:  # in turn: each worker's choice and claim are on the remote before the next one chooses
                steps = []
                for worker in active:
                    clock.advance()
                    steps.append(worker.commit_to(worker.choose()))
            for position, (worker, step) in enumerate(zip(active, steps)):
                clock.advance()
                try:
                    outcome = worker.act(number, step, may_verify=left[worker.account] >= 2)
                except Exception as exc:  # a round that fails is reported and counted, never fatal
                    errors.append(f"{worker.account} round {number}: {exc}"[:300])
                    left[worker.account] -= 1
                    spent += 1
                    continue
                used = 1 + outcome.verified
                left[worker.account] -= used
                spent += used
                values = read_choices((worker.clone / task.knob_file).read_text())
                values[outcome.change.knob] = outcome.change.new
                ledger.append(
                    {
                        "round": number,
                        "position": position,
                        "account": worker.account,
                        "slot": step.slot,
                        "action": "replicate" if outcome.change.knob == "SEED" else "change",
                        "parent": step.parent["sha"],
                        "change": outcome.change.describe(),
                        "choices": fingerprint(values),
                        "setting": fingerprint(values, ("SEED",)),
                        "measured": outcome.measured,
                        "true": task.true_loss(values, outcome.measured) if outcome.measured is not None else None,
                        "sha": outcome.sha,
                        "verified": outcome.verified,
                        "spent": spent - outcome.verified,  # this result's place in the evaluation order
                    }
                )
    wall = time.perf_counter() - started
    with open(directory / "events.log", "a") as log, contextlib.redirect_stdout(log):
        clock.advance()
        establish_workers(plan, ledger)
    clock.advance()
    record = {
        "task": task.name,
        "arm": arm,
        "seed": seed,
        "workers": workers,
        "budget": budget,
        "rounds": number + 1 if ledger else 0,
        "wall_s": wall,
        "errors": errors,
    }
    record.update(observe(task, make_clone(plan, "observer", "observer"), accounts, ledger, template, spent))
    record["ledger"] = ledger
    return record


def establish_workers(plan: DemoPlan, ledger: list[dict[str, Any]]) -> None:
    """The founder reruns each worker's first result, as a project's founder would: a confirmed one makes
    its worker established, so that worker's verdicts count (docs/protocol.md, "Whose verdicts count").
    The same for every arm, after the rounds (outside the wall time)."""
    founder = agora.open_project(make_clone(plan, "founder", "founder"), account="founder")
    agora.fetch(founder)
    firsts: dict[str, str] = {}
    for row in ledger:
        if row["measured"] is not None and row["sha"]:
            firsts.setdefault(row["account"], row["sha"])
    for sha in firsts.values():
        agora.verify(founder, sha)


def observe(
    task: Task, clone: Path, accounts: list[str], ledger: list[dict[str, Any]], template: dict[str, Any], spent: int
) -> dict[str, Any]:
    """The run's measures, from the remote as an observer sees it after the last round."""
    project = agora.open_project(clone, account="observer")
    agora.fetch(project)
    frame = agora.analyze(project, limit=1).frame
    shas = frame.table["sha"].to_pylist()
    owners = frame.table["account"].to_pylist()
    titles = frame.table["title"].to_pylist()
    node = {sha: i for i, sha in enumerate(shas)}
    done = [r for r in ledger if r["measured"] is not None]
    scores = [r["measured"] for r in done]
    results = [node[r["sha"]] for r in done if r["sha"] in node]
    verdicts = current_verdicts(frame.graph)
    by_workers = {
        int(target)
        for node, target, counts in zip(verdicts.node.tolist(), verdicts.target.tolist(), verdicts.counts.tolist())
        if counts and owners[node] in accounts
    }
    verified = [i in by_workers for i in results]  # a counting verdict of a worker (not the founder's)
    start = template["baseline"]
    first = stats.first_new_best(start, scores, task.tolerance)
    settings = [template["baseline_setting"], *(r["setting"] for r in done)]
    pick = stats.reported_best(settings, [start, *scores])
    trues = [template["baseline_true"], *(r["true"] for r in done)]
    target = task.optimum + task.reach
    return {
        "baseline": start,
        "baseline_true": template["baseline_true"],
        "evaluations": spent,
        "results": len(done),
        "replicates": sum(r["action"] == "replicate" for r in done),
        "crashes": len(ledger) - len(done),
        "best": min([start, *scores]),
        "reported_true": trues[pick],
        "found_true": min(trues),
        "gap": trues[pick] - task.optimum,
        "artefact": trues[pick] > min(trues) + task.tolerance,
        "reached": stats.first_reaching([r["true"] for r in done], [r["spent"] for r in done], target),
        "best_so_far": stats.best_so_far(start, scores),
        "first_new_best": first,
        "equal_score_pairs": stats.equal_score_pairs([r["account"] for r in done], scores, task.tolerance),
        "identical_choice_pairs": stats.identical_choice_pairs(
            [r["account"] for r in ledger], [r["choices"] for r in ledger]
        ),
        "repeats": stats.repeats([r["choices"] for r in ledger], [template["baseline_choices"]]),
        "result_evaluations": len(ledger),
        "effective_clusters": effective_clusters([titles[i] or "" for i in results]),
        "verified_share": (sum(verified) / len(verified)) if verified else 0.0,
        "confirmed_results": sum(frame.status[i] == "confirmed" for i in results),  # by the founder or a worker
        "verifications": int(sum(1 for i in range(frame.n) if frame.verification[i] and owners[i] in accounts)),
        "verification_targets": [  # what the workers' verdicts reran (the noisy diagnosis counts the leader's)
            shas[int(target)]
            for node, target in zip(verdicts.node.tolist(), verdicts.target.tolist())
            if owners[node] in accounts
        ],
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
