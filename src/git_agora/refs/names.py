"""Ref names: one append-only log per account, its remote-tracking copies, and quarantined old tips."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NewType

from ..contribution import ACCOUNT_PATTERN, valid_account

RefName = NewType("RefName", str)
Sha = NewType("Sha", str)

ROOT = "refs/agora/"
LOG_PREFIX = "refs/agora/log/"
REMOTES_PREFIX = "refs/agora/remotes/"
QUARANTINE_PREFIX = "refs/agora/quarantine/"
IDENTITY_PREFIX = "refs/agora/identity/"


class RefNameError(ValueError):
    pass


def check_account(account: str) -> str:
    if not valid_account(account):
        raise RefNameError(f"account {account!r} is not valid: use letters, digits, '.', '_' and '-' (at most 64)")
    return account


def check_remote(remote: str) -> str:
    if not ACCOUNT_PATTERN.match(remote) or ".." in remote:
        raise RefNameError(f"remote name {remote!r} is not valid")
    return remote


@dataclass(frozen=True)
class LogRef:
    """The log of one account, `refs/agora/log/<account>`, and where its copies live."""

    account: str

    def __post_init__(self) -> None:
        check_account(self.account)

    @property
    def local(self) -> RefName:
        return RefName(LOG_PREFIX + self.account)

    def tracking(self, remote: str) -> RefName:
        return RefName(f"{REMOTES_PREFIX}{check_remote(remote)}/log/{self.account}")

    def quarantine(self, remote: str, old_tip: str) -> RefName:
        return RefName(f"{QUARANTINE_PREFIX}{check_remote(remote)}/{self.account}/{old_tip}")

    @classmethod
    def from_tracking(cls, ref: str, remote: str) -> LogRef:
        prefix = f"{REMOTES_PREFIX}{remote}/log/"
        if not ref.startswith(prefix):
            raise RefNameError(f"{ref} is not a log of remote {remote}")
        return cls(ref[len(prefix) :])


def identity_refspec(remote: str) -> str:
    """Forced too: a rewritten identity is noticed by the pinned key, not refused by git."""
    return f"+{IDENTITY_PREFIX}*:{REMOTES_PREFIX}{check_remote(remote)}/identity/*"


def fetch_refspec(remote: str) -> str:
    """Forced, so that a rewritten remote log is noticed (and quarantined) rather than refused."""
    return f"+{LOG_PREFIX}*:{REMOTES_PREFIX}{check_remote(remote)}/log/*"
