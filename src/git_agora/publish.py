"""Publishing: validate, make the contribution durable locally (commit + log), then push."""

from __future__ import annotations

from dataclasses import dataclass

from .contribution import Contribution, ContributionError, check
from .errors import AgoraError
from .project import Project
from .refs.sync import PushResult, push_log


@dataclass(frozen=True)
class Published:
    sha: str
    push: PushResult

    def to_dict(self) -> dict:
        return {
            "sha": self.sha,
            "push": self.push.outcome.value,
            "queued": self.push.queued,
            "detail": self.push.detail,
        }


def validate(project: Project, contribution: Contribution) -> None:
    try:
        check(contribution, project.repo.contribution)
    except ContributionError as exc:
        raise AgoraError(str(exc)) from None


def publish(project: Project, contribution: Contribution, tree: str) -> Published:
    """Write the canonical commit and append it to the account log before any network I/O,
    so a failed or interrupted push loses nothing: the log is pushed now or by the next sync."""
    validate(project, contribution)
    sha = project.repo.write_contribution(contribution, tree)
    project.repo.append_to_log(contribution.account, [sha])
    return Published(sha, push_log(project.repo, contribution.account, project.remote))
