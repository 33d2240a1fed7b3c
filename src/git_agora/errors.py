"""User-facing errors and exit codes."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # bad input or a failed operation; nothing was published
    USAGE = 2  # click's usage errors
    QUEUED = 3  # published locally, not yet on the remote: `git agora sync` sends it later
    UNVERIFIED = 4  # `git agora ci`: claims left unverified because of this machine, not of the claims
    UNCOUNTED = 5  # `git agora ci`: readers would not count this CI's verdicts (not a pinned CI account, or key)


class AgoraError(Exception):
    """An error the user can act on; shown as one line, `git agora: error: ...`."""

    def __init__(self, message: str, exit_code: int = ExitCode.ERROR):
        super().__init__(message)
        self.exit_code = int(exit_code)


class ClaimError(AgoraError):
    """Refused because of what a contribution is or claims, not because of this machine: `git agora ci`
    reports such a claim as skipped by its own fault, where any other reason is the runner's (exit 4)."""
