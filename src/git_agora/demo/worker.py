"""A scripted worker of the demo: the research loop an agent follows, through the library (`import git_agora`).

Each round: fetch, analyze, pick a slot, check out its parent, change one knob, evaluate from a clean
export, push the result with its run record (the evaluation just made, recorded as `push --check`
records it: the result is run-backed, not evaluated twice) and a description (parent and its score,
the change, a predicted band, the measured value) and the band as its prediction (`push --predict`;
the demo's summary shows how well each account predicts); sometimes share an insight or a
hypothesis; sometimes verify another account's result. Prints one JSON line per event for the
orchestrator's progress bar.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import git_agora as agora

from .choices import Change, propose, read_choices, write_choice

SLOT_WEIGHTS = {"exploit": 0.5, "explore_known": 0.25, "explore_novel": 0.25}
UNCHANGED = 1e-6  # the demo's tolerance: a smaller difference in bpc is no change


@dataclass(frozen=True)
class Step:
    """What a worker does next: the slot (or rule) it came from, the parent row (`sha`, `metric`), the
    knob to change (None: the worker picks one), the result rows it may verify, first choice first, and
    the action: ``change`` one knob, or ``replicate`` the parent (the same knobs under another SEED, on a
    task whose evaluation draws luck from it)."""

    slot: str
    parent: dict
    knob: str | None = None
    unverified: tuple[dict, ...] = ()
    action: str = "change"


@dataclass(frozen=True)
class Outcome:
    """A round's result: the step taken, the change made, the measured bpc and the published sha
    (both None when the evaluation crashed), and whether the worker also verified a result."""

    step: Step
    change: Change
    measured: float | None
    sha: str | None
    verified: bool = False


class Worker:
    knob_file = "choices.py"  # the file of knobs a step changes
    metric = "bpc"

    def __init__(self, clone: Path, account: str, rng: random.Random):
        self.clone, self.account, self.rng = clone, account, rng
        self.verified: set[str] = set()

    def project(self) -> agora.Project:
        return agora.open_project(self.clone, account=self.account)

    def round(self, number: int) -> Outcome:
        return self.act(number, self.choose())

    def choose(self) -> Step:
        """Where to work next, the Agora way: fetch, analyze, pick a slot (the matched comparison in
        eval/compare overrides this to run other ways of choosing with the same loop)."""
        with contextlib.suppress(agora.AgoraError):  # the remote is busy or away: work from what is here
            agora.fetch(self.project())
        analysis = agora.analyze(self.project(), limit=5).to_dict()
        slot, parent = self.pick(analysis)
        unverified = tuple(analysis["views"].get("unverified", {}).get("rows", []))
        return Step(slot, parent, unverified=unverified, action=suggested_action(parent))

    def propose(self, values: dict, knob: str | None) -> Change:
        return propose(values, self.rng, knob)

    def act(self, number: int, step: Step, may_verify: bool = True) -> Outcome:
        """Check out the step's parent, change one knob (or replicate it), evaluate, publish; sometimes
        share a thought or (when `may_verify`) verify one of the step's unverified results."""
        parent = step.parent
        agora.checkout(self.project(), parent["sha"])
        path = self.clone / self.knob_file
        text = path.read_text()
        values = read_choices(text)
        if step.action == "replicate" and "SEED" in values:
            change = Change("SEED", values["SEED"], self.rng.randrange(1, 1_000_000))
        else:
            change = self.propose(values, step.knob)
        path.write_text(write_choice(text, change.knob, change.new))
        parent_score = parent.get("metric")
        evaluated = agora.run(self.project())
        if not evaluated.run.ok:
            emit(self.account, number, "crash", change.describe())
            path.write_text(text)
            return Outcome(step, change, None, None)
        measured = evaluated.run.metrics[self.metric]
        replicate = change.knob == "SEED"
        sha = self.publish_result(step.slot, parent, parent_score, change, measured, replicate, evaluated)
        if self.rng.random() < 0.35 and not replicate:
            self.share_thought(change, parent_score, measured)
        verified = may_verify and self.rng.random() < 0.6 and self.verify_someone(step.unverified)
        emit(self.account, number, "round", f"{step.slot}: {change.describe()} -> {measured:.4f}")
        return Outcome(step, change, measured, sha, verified)

    def pick(self, analysis: dict) -> tuple[str, dict]:
        slots = {s["name"]: s["suggestions"] for s in analysis["slots"]["slots"] if s["suggestions"]}
        names = [n for n in SLOT_WEIGHTS if n in slots]
        if not names:
            setup = analysis["views"]["recent"]["rows"][-1]
            return "setup", setup
        name = self.rng.choices(names, weights=[SLOT_WEIGHTS[n] for n in names])[0]
        return name, self.rng.choice(slots[name][:2])

    def publish_result(self, slot, parent, parent_score, change, measured, replicate=False, evaluated=None) -> str:
        """Publish the measured result; with `evaluated` (the run just made of this tree) it carries that
        run's record, as `push --check` would write it, without evaluating twice."""
        base = parent_score if parent_score is not None else measured
        band = [round(base - 0.15, 3), round(base + 0.05, 3)]
        worse = parent_score is not None and measured > parent_score and not replicate
        description = (
            f"{change.describe()}: {self.metric} {measured:.4f}\n\n"
            f"Parent {parent['sha'][:10]} scored {_score(parent_score)}; chosen from the {slot} slot. "
            f"Changed {change.describe()}, predicted {band[0]}-{band[1]}, measured {measured:.4f}."
        )
        tags = ["result"] + (["negative-result"] if worse else []) + (["replicate"] if replicate else [])
        meta = {"parent_score": parent_score, "change": change.describe(), "slot": slot}
        push = agora.Push(
            description, tags, metrics={self.metric: measured}, meta=meta, prediction=tuple(band), evaluated=evaluated
        )
        return agora.publish_worktree(self.project(), push).sha

    def share_thought(self, change, parent_score, measured) -> None:
        """An insight on what the change did (never for an unchanged score: it did nothing to learn
        from, and "hurt (3.0481 -> 3.0481)" would be false), otherwise a hypothesis."""
        changed = parent_score is not None and abs(measured - parent_score) > UNCHANGED
        if changed and self.rng.random() < 0.6:
            effect = "helped" if measured < parent_score else "hurt"
            agora.post(
                self.project(),
                f"Insight: {change.knob} change {change.describe()} {effect} "
                f"({_score(parent_score)} -> {measured:.4f})",
                ["insight"],
            )
        else:
            agora.post(
                self.project(),
                f"Hypothesis: tuning {change.knob} further (beyond {change.new!r}) "
                f"should lower {self.metric} below {measured:.3f}",
                ["hypothesis"],
            )

    def verify_someone(self, rows) -> bool:
        """Verify the first of `rows` (results, newest first) that another account published and this
        worker has not verified yet; whether it ran a verification."""
        candidates = [r for r in rows if r["account"] != self.account and r["sha"] not in self.verified]
        if not candidates:
            return False
        target = candidates[0]["sha"]
        self.verified.add(target)
        try:
            agora.verify(self.project(), target)
        except agora.AgoraError:
            return False  # refused (say, the evaluation is gone): another round picks another target
        return True


def suggested_action(suggestion: dict) -> str:
    """The step a slot's suggestion asks for: ``replicate`` it (a project that counts replicates says so
    for a leader within the noise of the best), else ``change`` one knob of it."""
    return "replicate" if suggestion.get("action") == "replicate" else "change"


def _score(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def emit(account: str, number: int, event: str, detail: str) -> None:
    print(json.dumps({"account": account, "round": number, "event": event, "detail": detail}), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clone", type=Path, required=True)
    parser.add_argument("--account", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    worker = Worker(args.clone, args.account, random.Random(f"{args.seed}/{args.account}"))
    for number in range(args.rounds):
        try:
            worker.round(number)
        except Exception as exc:  # report, keep going: one bad round should not end a worker
            emit(args.account, number, "error", str(exc)[:300])
    try:
        agora.sync(worker.project())
    except agora.AgoraError as exc:
        emit(args.account, args.rounds, "error", f"sync: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
