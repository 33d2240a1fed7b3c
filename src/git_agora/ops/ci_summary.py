"""What one `git agora ci` run comes to (docs/ci.md, "Exit status and summary"): its outcome, the exit code
the command maps it to, and the summary the job log and the forge's step summary show.

A claim the run took up ends with a verdict (confirmed, partial, failed: a verdict is never a failure of
the job) or is not rerun, by its own fault (`NotRerun.CLAIM`: nothing to rerun, no verification it may
have) or by this runner's (`NotRerun.ENVIRONMENT`: a scorer that differs from the project's pins, the
sandbox, a tool or a mount missing, no evaluation). One claim of the second kind makes the outcome
`CiOutcome.UNVERIFIED`, whatever else the run did: the runner must be fixed, and the job says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..errors import ExitCode


class NotRerun(str, Enum):
    """Whose fault it is that a claim was not rerun."""

    CLAIM = "claim"  # the claim's own: skipped, the job done
    ENVIRONMENT = "environment"  # this runner's: the job not done (exit 4)


class CiOutcome(Enum):
    """What a run comes to; `value` is the exit code `git agora ci` maps it to."""

    DONE = ExitCode.OK
    UNVERIFIED = ExitCode.UNVERIFIED

    @property
    def meaning(self) -> str:
        return MEANINGS[self]


MEANINGS = {
    CiOutcome.DONE: "the job was done: every claim it took up has a verdict or was skipped by its own fault",
    CiOutcome.UNVERIFIED: (
        "claims left unverified for a reason of this runner, not of the claims (what it did is published): "
        "fix the runner and run again"
    ),
}


@dataclass(frozen=True)
class Skipped:
    """The claims not rerun for one reason."""

    reason: str
    cause: NotRerun
    targets: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        count = len(self.targets)
        return {"reason": self.reason, "cause": self.cause.value, "count": count, "targets": list(self.targets)}


@dataclass(frozen=True)
class CiSummary:
    outcome: CiOutcome
    verdicts: dict[str, tuple[str, ...]]  # confirmed, partial, failed: the claims' shas
    skipped: tuple[Skipped, ...]  # this runner's reasons first, then the claims'; each by count
    left: int  # claims the budget left for the next run
    witness_records: int
    witnessed_logs: int

    @property
    def exit_code(self) -> int:
        return int(self.outcome.value)

    @property
    def environment(self) -> tuple[Skipped, ...]:
        return tuple(s for s in self.skipped if s.cause is NotRerun.ENVIRONMENT)

    def to_dict(self) -> dict[str, Any]:
        verified = len(self.verdicts["confirmed"]) + len(self.verdicts["partial"])
        return {
            "outcome": self.outcome.name.lower(),
            "exit_code": self.exit_code,
            "exit_meaning": self.outcome.meaning,
            "verified": verified,
            **{verdict: list(shas) for verdict, shas in self.verdicts.items()},
            "skipped": [s.to_dict() for s in self.skipped],
            "left": self.left,
        }


def summarise(checked, left: int, witness_records: int, witnessed_logs: int) -> CiSummary:
    """The summary of a run's `checked` claims (`ops.ci.Checked`)."""
    verdicts: dict[str, list[str]] = {"confirmed": [], "partial": [], "failed": []}
    reasons: dict[tuple[NotRerun, str], list[str]] = {}
    for claim in checked:
        if claim.verdict is not None:
            verdicts.setdefault(claim.verdict, []).append(claim.target)
        else:
            reasons.setdefault((claim.cause or NotRerun.ENVIRONMENT, claim.reason), []).append(claim.target)
    order = sorted(reasons, key=lambda k: (k[0] is not NotRerun.ENVIRONMENT, -len(reasons[k]), k[1]))
    skipped = tuple(Skipped(reason, cause, tuple(reasons[cause, reason])) for cause, reason in order)
    loud = any(s.cause is NotRerun.ENVIRONMENT for s in skipped)
    outcome = CiOutcome.UNVERIFIED if loud else CiOutcome.DONE
    shas = {verdict: tuple(found) for verdict, found in verdicts.items()}
    return CiSummary(outcome, shas, skipped, left, witness_records, witnessed_logs)


def why_line(summary: CiSummary) -> str | None:
    """The one line an UNVERIFIED run ends with (None otherwise): how many claims, and the first reason."""
    groups = summary.environment
    if not groups:
        return None
    count = sum(len(s.targets) for s in groups)
    others = f" (and {len(groups) - 1} other reason{'s' if len(groups) > 2 else ''}: see the summary)"
    return (
        f"{count} claim{'s' if count != 1 else ''} not rerun because of this runner, not of the claims: "
        f"{groups[0].reason}{others if len(groups) > 1 else ''} (exit {summary.exit_code}, docs/ci.md)"
    )
