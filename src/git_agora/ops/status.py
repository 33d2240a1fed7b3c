"""`whoami`: the account, remote and project this clone publishes to, and what waits to be sent."""

from __future__ import annotations

from dataclasses import dataclass

from ..project import SETUP_CONFIG_KEY, Project


@dataclass(frozen=True)
class Identity:
    account: str
    remote: str | None
    setup: str | None
    base: str | None
    queued: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def whoami(project: Project) -> Identity:
    from ..refs.sync import queued_entries

    setup = project.find_setup() if project.repo.git.config_get(SETUP_CONFIG_KEY) is None else project.setup
    queued = len(queued_entries(project.repo, project.account, project.remote))
    return Identity(project.account, project.remote, setup, project.base if setup else None, queued)
