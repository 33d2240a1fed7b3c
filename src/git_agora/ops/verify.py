"""`verify`: rerun a contribution from a clean export and publish the verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..contribution import VERIFICATION, Contribution, ContributionError, Verdict, check
from ..errors import ClaimError
from ..evaluate import Judgement, evaluate_tree, hardware, judge
from ..project import Project
from ..records import CheckRecord, RunRecord
from .publish import Published, publish

if TYPE_CHECKING:
    from ..frontier.verdict_rows import Standing


@dataclass(frozen=True)
class Verification:
    target: str
    judgement: Judgement
    record: RunRecord  # what the verdict records of the rerun
    published: Published | None  # None with publish=False
    run_folder: str | None = None  # the evaluation's stdout and stderr, kept on this machine only
    weight: Weight | None = None  # whether the verdict counts for readers of this clone, and why (`weigh`)

    @property
    def verdict(self) -> str:
        return self.judgement.verdict

    @property
    def metadata(self) -> dict[str, Any]:
        """The record as the verdict's Agora-Meta holds it."""
        return self.record.to_metadata()

    def to_dict(self) -> dict:
        report = {"target": self.target, "verdict": self.verdict, **self.metadata, "run_folder": self.run_folder}
        report |= self.weight.to_dict() if self.weight else {}
        return {**self.published.to_dict(), **report} if self.published else report


@dataclass(frozen=True)
class Weight:
    """Whether a verdict counts (`frontier.evidence.current_verdicts`, read as this clone reads the
    record), why it does not (`Verdicts.weightless`), and its account's standing: why that account's
    verdicts count, or what would make them count (`frontier.verdict_rows.Standing`). ``counts`` is
    None for a verdict that was not published (then ``standing`` says whether it would)."""

    counts: bool | None
    why: str | None
    standing: Standing

    def to_dict(self) -> dict[str, Any]:
        return {"counts": self.counts, "why": self.why, "standing": self.standing.to_dict()}

    def describe(self) -> str:
        """One line for people: whether it counts and why, or what would make it count."""
        s = self.standing
        if self.counts or (self.counts is None and s.counts):
            return f"{'counts' if self.counts else 'would count'}: {s.because}"
        if self.counts is None or self.why is None:
            return f"would not count yet: {s.because}" + (f"; {s.remedy}" if s.remedy else "")
        if s.counts:
            return f"this verdict does not count: {self.why}"
        return f"this verdict does not count yet: {s.because}" + (f"; {s.remedy}" if s.remedy else "")


def weigh(project: Project, sha: str | None) -> Weight:
    """How readers of this clone weigh the verdict `sha` (None: one not published, by this account)."""
    import numpy as np
    import pyarrow as pa

    from ..frontier.evidence import current_verdicts
    from ..frontier.graph import build_graph
    from ..frontier.verdict_rows import standing_of
    from .indexing import GRAPH_COLUMNS, load
    from .standing import reader_root

    contributions = load(project, GRAPH_COLUMNS).contributions
    graph = build_graph(contributions, reader_root(project, contributions))
    verdicts = current_verdicts(graph)
    standing = standing_of(graph, verdicts, project.account)
    if sha is None:
        return Weight(None, None, standing)
    node = int(graph.lookup(pa.array([sha], pa.string()))[0])
    at = np.flatnonzero(verdicts.node == node) if node >= 0 else np.zeros(0, np.int64)
    if not len(at):
        return Weight(False, "it does not verify a valid contribution of another account", standing)
    return Weight(bool(verdicts.counts[at[0]]), verdicts.weightless(at)[0], standing)


@dataclass(frozen=True)
class Reproduction:
    """A claim re-evaluated here: the judgement and what a verification records about it, under the
    metric of the policy in force for the target (`metric`: what its verification reports)."""

    target: Contribution
    judgement: Judgement
    record: RunRecord
    run_folder: str | None = None
    metric: str | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """The record as the verdict's Agora-Meta holds it."""
        return self.record.to_metadata()


def reproduce(
    project: Project,
    rev: str,
    tolerance: float | None = None,
    timeout: float | None = None,
    sandbox: bool | None = None,
) -> Reproduction:
    """Evaluate a clean export of `rev`'s tree with the evaluator of the policy in force for it (never
    the contribution's own evaluator files) and judge its claim. Publishes nothing; anyone may ask,
    the author too. The build step (or the one command) runs the contribution's code in the sandbox
    unless `sandbox` is False (None: `ops.evaluate.sandbox_choice`). What it records is numbers and
    fixed words (`Evaluation.record`): the evaluator's free text stays on this machine."""
    from .evaluate import sandbox_choice

    target = project.contribution(rev)
    assert target.sha is not None and target.tree is not None
    if not target.metrics:
        raise ClaimError(f"{target.sha[:12]} claims no metric: there is nothing to reproduce")
    policy = project.policy(target.sha)
    config = policy.config
    tolerance = config.tolerance if tolerance is None else tolerance
    sandboxed = sandbox_choice(project, sandbox)
    evaluation = evaluate_tree(project.repo, policy, target.tree, timeout, project.feedback, sandbox=sandboxed)
    run = evaluation.run
    fields = config.evaluation.declared_output
    judgement = judge(dict(target.metrics), run, tolerance, config.metric, fields)
    claimed_under = claimed_evaluator(target)
    if claimed_under and claimed_under != evaluation.identity["sha256"]:
        project.feedback.notice(
            f"{target.sha[:12]} was claimed under another evaluator identity "
            f"({claimed_under[:12]}; now {str(evaluation.identity['sha256'])[:12]})"
        )
    if not run.ok:
        project.feedback.notice(f"the evaluation ended: {run.error}")
    ran = evaluation.record(config.evaluation, config.metric)
    reported = {config.metric, *fields}  # the names the setup chose, never the claim's own
    record = RunRecord(
        claimed={name: value for name, value in judgement.claimed.items() if name in reported},
        reproduced=dict(judgement.reproduced),
        difference={k: round(v, 12) for k, v in judgement.differences.items()},
        tolerance=tolerance,
        reason=judgement.code.value,
        evaluator=evaluation.identity,
        claimed_under_evaluator=claimed_under,
        same_evaluator=claimed_under == evaluation.identity["sha256"] if claimed_under else None,
        output=ran["output"],
        hardware=hardware(),
        duration_s=ran["duration_s"],
        exit_status=ran["exit_status"],
        sandbox=evaluation.sandbox,
        limits=ran["limits"],
    )
    return Reproduction(target, judgement, record, evaluation.run_folder, config.metric)


def verify(
    project: Project,
    rev: str,
    tolerance: float | None = None,
    timeout: float | None = None,
    publish_verdict: bool = True,
    sandbox: bool | None = None,
) -> Verification:
    """Reproduce `rev` (see `reproduce`) and publish the verdict as a verification (confirmed, partial
    or failed) whose only parent and target is `rev`."""
    target = project.contribution(rev)
    draft = _verification(project.account, target, Verdict.CONFIRMED, "draft", {}, {})
    try:
        check(draft, project.repo.contribution)  # the rules of a verification, before spending compute
    except ContributionError as exc:
        raise ClaimError(str(exc)) from None
    done = reproduce(project, rev, tolerance, timeout, sandbox)
    judgement, record = done.judgement, done.record
    assert target.sha is not None and target.tree is not None
    if not publish_verdict:
        return Verification(target.sha, judgement, record, None, done.run_folder, weigh(project, None))
    verification = verification_of(project.account, target, judgement, record, done.metric)
    published = publish(project, verification, target.tree)
    return Verification(target.sha, judgement, record, published, done.run_folder, weigh(project, published.sha))


def verification_of(
    account: str, target: Contribution, judgement: Judgement, record: RunRecord, metric: str | None
) -> Contribution:
    """The verification `account` publishes of `target` judged so (`verify`; also the publish half of a
    split CI, from a verdict bundle's record)."""
    primary = metric if metric in judgement.reproduced else None
    metrics = {primary: judgement.reproduced[primary]} if primary else {}
    return _verification(account, target, Verdict(judgement.verdict), judgement.reason, record.to_metadata(), metrics)


def claimed_evaluator(target: Contribution) -> str | None:
    """The evaluator identity a claim recorded (`push --check`), when it did: a SHA-256 in hex, else
    None (a verdict copies it, so it is never the claim's free text)."""
    check = CheckRecord.read(target.metadata)
    return check.evaluator_sha256 if check is not None else None


def _verification(
    account: str,
    target: Contribution,
    verdict: Verdict,
    reason: str,
    metadata: dict[str, Any],
    metrics: dict[str, float],
) -> Contribution:
    """A verdict on `target` made of fixed words, the target's short SHA, the setup's metric names and
    numbers: never the target's title, description or account (a crafted one could hold text the
    publishing scan refuses, and no one could then verify it), nor the evaluator's free text."""
    assert target.sha is not None
    how = " (unsandboxed)" if metadata.get("sandbox") is False else ""
    title = f"Verification of {target.sha[:12]}: {verdict.value}{how}"
    description = f"{title}\n\n{reason}."
    return Contribution(
        account=account,
        tags=(VERIFICATION,),
        description=description,
        parents=(target.sha,),
        target=target.sha,
        verdict=verdict,
        metadata=metadata,
        metrics=metrics,
    )
