"""`whoami`: the account, remote and project this clone publishes to, and what waits to be sent."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import AgoraError
from ..project import SETUP_CONFIG_KEY, Project
from ..refs.sync import queued_entries
from ..trust import TamperReport, tamper_reports
from ..trust import acknowledge as mark


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

    setup = project.find_setup() if project.repo.git.config_get(SETUP_CONFIG_KEY) is None else project.setup
    queued = len(queued_entries(project.repo, project.account, project.remote))
    return Identity(project.account, project.remote, setup, project.base if setup else None, queued)


@dataclass(frozen=True)
class Status:
    """Who and where, plus what this clone has seen go wrong on the remote and not yet acknowledged."""

    identity: Identity
    tamper: tuple[TamperReport, ...]
    notes: tuple[str, ...] = ()  # the current policy's CI accounts without a pinned key (`standing`)

    def to_dict(self) -> dict:
        return {**self.identity.to_dict(), "tamper": [r.to_dict() for r in self.tamper], "notes": list(self.notes)}


def status(project: Project) -> Status:
    identity = whoami(project)
    notes: tuple[str, ...] = ()
    if identity.setup is not None:
        from .standing import policy_notes

        notes = policy_notes(project)
    return Status(identity, tuple(tampering(project)), notes)


def tampering(project: Project) -> list[TamperReport]:
    """The remote logs seen rewritten or deleted here and not yet acknowledged."""
    return tamper_reports(project.repo)


def acknowledge(project: Project, ids: list[str]) -> list[TamperReport]:
    """Acknowledge tamper reports by id (`all`: every one); they stop being listed."""

    try:
        return mark(project.repo, ids)
    except KeyError as exc:
        raise AgoraError(f"no tamper report {exc.args[0]}: see `git agora status`") from None
