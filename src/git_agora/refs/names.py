"""Ref names: one append-only log per account, its remote-tracking copies, and quarantined old tips."""

from __future__ import annotations

from typing import NewType

from ..contribution import ACCOUNT_PATTERN, valid_account

RefName = NewType("RefName", str)

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


class LogRef:
    """The log of one account, `refs/agora/log/<account>`, and where its copies live; the account is
    checked when it is made."""

    __slots__ = ("account",)

    def __init__(self, account: str) -> None:
        self.account = check_account(account)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogRef) and other.account == self.account

    def __hash__(self) -> int:
        return hash(self.account)

    def __repr__(self) -> str:
        return f"LogRef({self.account!r})"

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
