"""The four arms of the matched comparison (the paper's Appendix C): how a worker chooses its next step.

Everything else is the demo's worker loop (`git_agora.demo.worker.Worker.act`): check out the parent,
change one knob, evaluate from a clean export, publish the result, sometimes post an insight or a
hypothesis, sometimes verify someone else's result. Only `choose` differs:

- ``isolated``: the project brief only. The worker fetches once (the setup and the baseline) and never
  again; it runs `analyze` and picks a slot over its own work, as the Agora worker does over everyone's.
  It pushes, so the harness can read its work, but nobody reads it: no sharing, no verification.
- ``flat_log``: chronological contributions. The worker fetches and reads `git agora log` as a flat
  list: half the time it builds on the best raw score, otherwise on the newest result; it verifies the
  newest result of another account that has no verification in the log. No analysis, no slots.
- ``planner``: one coordinator with the full state assigns the work. Each round it fetches, takes the
  global best and hands each worker that parent and the next knob of a round-robin over the knobs
  (the worker draws the new value), and a distinct unverified result of another account to verify.
- ``agora``: the demo worker: fetch, `analyze`, pick among the exploit / explore-known / explore-novel
  UCB slots, verify from the `unverified` view.

Where a step leaves the knob to the worker (every arm but the planner's), the worker reads the record
the same way in every arm (`QUESTION-3.md`, `QUESTION-5.md`): it reads the task's list starting after the
knob its parent changed (as the planner's round-robin continues across parents) and changes the first
knob in that order that nobody it can see has changed from that parent yet (a result built on it, or an
active claim on it), and claims the parent, naming the knob, before the next worker of the round
chooses (`TaskWorker.commit_to`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import git_agora as agora
from git_agora.demo.choices import Change
from git_agora.demo.worker import Step, Worker, suggested_action

from .tasks import Task

ARMS = ("isolated", "flat_log", "planner", "agora")
LABELS = {"isolated": "Isolated", "flat_log": "Flat log", "planner": "Central planner", "agora": "Agora"}
EVERYTHING = 1_000_000  # a log limit no run reaches
CLAIM_SECONDS = 600  # longer than any round; the result built on the parent releases it


class TaskWorker(Worker):
    """The demo's worker loop on one task of the suite: the same reasoning in every arm."""

    def __init__(self, clone: Path, account: str, rng, task: Task):
        super().__init__(clone, account, rng)
        self.task = task
        self.knob_file, self.metric = task.knob_file, task.metric

    def propose(self, values: dict, knob: str | None) -> Change:
        return self.task.propose(values, self.rng, knob)

    def commit_to(self, step: Step) -> Step:
        """The step with its knob chosen from the record (the task's list from the knob after the one the
        parent changed, untried from this parent first; a random one when every knob was tried), claimed
        before anyone else of the round chooses."""
        if step.action != "change":
            return step
        project = self.project()
        parent = step.parent["sha"]
        tried, changed = read_record(project, parent)
        knob = step.knob or next((k for k in knobs_after(self.task.knobs, changed) if k not in tried), None)
        try:
            agora.claim(project, parent, f"{knob or 'any knob'}: trying a change from {parent[:10]}", CLAIM_SECONDS)
        except agora.AgoraError:
            pass  # a claim only informs: work goes on without it, as an agent's would
        return replace(step, knob=knob)


class AgoraWorker(TaskWorker):
    """The demo's worker: analyze and the UCB slots."""


class IsolatedWorker(TaskWorker):
    """The Agora loop over its own work only: one fetch for the setup and the baseline, when it joins
    (before anyone works or claims), then none."""

    def __init__(self, clone: Path, account: str, rng, task: Task):
        super().__init__(clone, account, rng, task)
        agora.fetch(self.project())

    def choose(self) -> Step:
        analysis = agora.analyze(self.project(), limit=5).to_dict()
        slot, parent = self.pick(analysis)
        return Step(slot, parent, action=suggested_action(parent))  # it sees no one else's work: nothing to verify


class FlatLogWorker(TaskWorker):
    """Reads the log as a flat list: best raw score or newest result, no analysis."""

    def choose(self) -> Step:
        try:
            agora.fetch(self.project())
        except agora.AgoraError:
            pass
        results, verified = read_log(self.project(), self.metric)
        if self.rng.random() < 0.5:
            slot, parent = "best", min(results, key=lambda r: r["metric"])  # ties: the newest
        else:
            slot, parent = "newest", results[0]
        return Step(slot, parent, unverified=tuple(r for r in results if r["sha"] not in verified))


class PlannedWorker(TaskWorker):
    """Does what the planner assigns: fetches (for the assigned parent's objects), chooses nothing."""

    def take(self, step: Step) -> Step:
        try:
            agora.fetch(self.project())
        except agora.AgoraError:
            pass
        return step

    def choose(self) -> Step:
        raise RuntimeError("a planned worker is assigned its steps (Planner.assign)")


class Planner:
    """The central coordinator: reads the full state through its own clone and assigns every step."""

    def __init__(self, clone: Path, task: Task):
        self.clone, self.task = clone, task
        self.turn = 0

    def assign(self, workers: list[Worker]) -> list[Step]:
        project = agora.open_project(self.clone, account="planner")
        agora.fetch(project)
        results, verified = read_log(project, self.task.metric)
        best = min(results, key=lambda r: r["metric"])
        pool = [r for r in results if r["sha"] not in verified]
        steps = []
        for worker in workers:
            knob = self.task.knobs[self.turn % len(self.task.knobs)]
            self.turn += 1
            target = next((r for r in pool if r["account"] != worker.account), None)
            if target is not None:
                pool.remove(target)
            steps.append(Step("planner", best, knob, () if target is None else (target,)))
        return steps


def read_log(project, metric: str) -> tuple[list[dict], set[str]]:
    """The log as a flat list: results with the metric, newest first (rows with sha, account, metric),
    and the shas some verification targets."""
    entries = agora.log(project, limit=EVERYTHING)
    results = [
        {"sha": e.sha, "account": e.account, "metric": e.metrics[metric]}
        for e in entries
        if "result" in e.tags and e.target is None and e.verdict is None and metric in e.metrics
    ]
    verified = {e.target for e in entries if e.target}
    return results, verified


def knobs_after(knobs: tuple[str, ...], changed: str) -> tuple[str, ...]:
    """The task's knobs in the order a worker tries them from a parent that changed `changed`: those after
    it, then from the top of the list (the list as written when the parent changed none of its knobs)."""
    if changed not in knobs:
        return tuple(knobs)
    start = knobs.index(changed) + 1
    return tuple(knobs[start:]) + tuple(knobs[:start])


def read_record(project, parent: str) -> tuple[set[str], str]:
    """What this clone's record shows about `parent`: the knobs changed from it (the results built on it,
    whose titles start with the change, `Change.describe`, and the active claims on it, whose titles start
    with the knob), and the knob the parent itself changed (the first word of its title; "" when the
    record does not hold it)."""
    entries = agora.log(project, limit=EVERYTHING)
    titles = [
        e.title
        for e in entries
        if e.parents[:1] == (parent,) and "result" in e.tags and "replicate" not in e.tags and e.verdict is None
    ]
    titles += [c.title for c in agora.claims(project) if c.target == parent]
    changed = next((first_word(e.title) for e in entries if e.sha == parent), "")
    return {first_word(title) for title in titles if title.split()}, changed


def first_word(title: str) -> str:
    words = title.split()
    return words[0].rstrip(":") if words else ""


WORKERS: dict[str, type[TaskWorker]] = {
    "isolated": IsolatedWorker,
    "flat_log": FlatLogWorker,
    "planner": PlannedWorker,
    "agora": AgoraWorker,
}
