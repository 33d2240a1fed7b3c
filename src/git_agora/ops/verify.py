"""`verify`: rerun a contribution from a clean export and publish the verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..contribution import Contribution, ContributionError, Verdict, check
from ..errors import AgoraError
from ..evaluate import Judgement
from ..project import Project
from .publish import Published, publish


@dataclass(frozen=True)
class Verification:
    target: str
    judgement: Judgement
    metadata: dict[str, Any]
    published: Published | None  # None with publish=False

    @property
    def verdict(self) -> str:
        return self.judgement.verdict

    def to_dict(self) -> dict:
        report = {"target": self.target, "verdict": self.verdict, **self.metadata}
        return {**self.published.to_dict(), **report} if self.published else report


def verify(
    project: Project,
    rev: str,
    tolerance: float | None = None,
    timeout: float | None = None,
    publish_verdict: bool = True,
) -> Verification:
    """Run the project's evaluation on a clean export of `rev`'s tree, compare with its claim, and
    publish a verification (confirmed, partial or failed) whose parent and target is `rev`."""
    from ..evaluate import command_hash, evaluate_tree, hardware, judge

    target = project.contribution(rev)
    assert target.sha is not None and target.tree is not None
    config = project.config
    draft = _verification(project.account, target, Verdict.CONFIRMED, "draft", {}, {})
    try:
        check(draft, project.repo.contribution)  # the rules of a verification, before spending compute
    except ContributionError as exc:
        raise AgoraError(str(exc)) from None
    if not config.eval_command:
        raise AgoraError("the project has no evaluation command ([eval] command in agora.toml)")
    if not target.metrics:
        raise AgoraError(f"{target.sha[:12]} claims no metric: there is nothing to reproduce")
    tolerance = config.tolerance if tolerance is None else tolerance
    run = evaluate_tree(project.repo, config, target.tree, timeout)
    judgement = judge(dict(target.metrics), run, tolerance, config.metric)
    metadata = {
        "claimed": dict(judgement.claimed),
        "reproduced": dict(judgement.reproduced),
        "difference": {k: round(v, 12) for k, v in judgement.differences.items()},
        "tolerance": tolerance,
        "reason": judgement.reason,
        "evaluator": {"command": config.eval_command, "sha256": command_hash(config.eval_command)},
        "hardware": hardware(),
        "duration_s": round(run.duration_s, 3),
    }
    if not publish_verdict:
        return Verification(target.sha, judgement, metadata, None)
    primary = config.metric if config.metric in judgement.reproduced else None
    metrics = {primary: judgement.reproduced[primary]} if primary else {}
    verification = _verification(
        project.account, target, Verdict(judgement.verdict), judgement.reason, metadata, metrics
    )
    return Verification(target.sha, judgement, metadata, publish(project, verification, target.tree))


def _verification(
    account: str,
    target: Contribution,
    verdict: Verdict,
    reason: str,
    metadata: dict[str, Any],
    metrics: dict[str, float],
) -> Contribution:
    assert target.sha is not None
    description = f"Verification of {target.sha[:12]} ({target.account}: {target.title}): {verdict.value}\n\n{reason}."
    return Contribution(
        account=account,
        tags=("verification",),
        description=description,
        parents=(target.sha,),
        target=target.sha,
        verdict=verdict,
        metadata=metadata,
        metrics=metrics,
    )
