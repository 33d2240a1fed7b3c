"""The data guard: evaluation data must not be read while `transfer()` runs.

`transfer_guard(paths)` is active for exactly the duration of the transfer call. Inside it:
- `check_data_access()` (called by every loader in hybridlm.data) raises DataAccessError;
- opening any of the protected files (through Python's `open`, seen by an audit hook) raises too.
Both are also recorded, so a transfer that catches the exception is still caught afterwards.
"""

from __future__ import annotations

import contextlib
import os
import sys


class DataAccessError(RuntimeError):
    """Raised when evaluation data is touched from inside transfer()."""


_active = False
_protected: set[str] = set()
_violations: list[str] = []
_hook_installed = False


def _canonical(path) -> str | None:
    if isinstance(path, int):
        return None
    try:
        return os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None


def _audit(event: str, args) -> None:
    if not _active or event != "open" or not args:
        return
    path = _canonical(args[0])
    if path is not None and path in _protected:
        _violate(f"transfer() opened the evaluation data file {path}")


def _violate(message: str) -> None:
    _violations.append(message)
    raise DataAccessError(message)


def check_data_access(what: str = "the evaluation data") -> None:
    """Call before loading evaluation data; raises inside a transfer_guard."""
    if _active:
        _violate(f"transfer() tried to load {what}; the evaluation data is off limits during transfer")


def is_active() -> bool:
    return _active


def violations() -> list[str]:
    return list(_violations)


@contextlib.contextmanager
def transfer_guard(protected_paths=()):
    """Activate the guard; yields the list that collects violations."""
    global _active, _hook_installed
    if not _hook_installed:  # audit hooks cannot be removed, so install one for the process
        sys.addaudithook(_audit)
        _hook_installed = True
    previous = set(_protected)
    _protected.update(p for p in map(_canonical, protected_paths) if p)
    _violations.clear()
    _active = True
    try:
        yield _violations
    finally:
        _active = False
        _protected.clear()
        _protected.update(previous)
