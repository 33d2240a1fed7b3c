"""The data guard: evaluation data must not be read while `transfer()` runs.

The build step (`hybridlm transfer`) never loads the evaluation texts; this guard keeps the transfer
from fetching them itself. `transfer_guard(paths)` is active for exactly the duration of the transfer
(importing the file and the call). Inside it a Python audit hook refuses:
- opening the evaluation data files: the stand-in corpus (`pydoc_data/topics.py`), the module that
  builds the texts (`hybridlm/data.py`), their compiled `.pyc` files, and every file in `paths` (the
  `--data` file); matched by real path and by inode, so symbolic and hard links are caught too;
- importing the modules that hold or load the texts (`DATA_MODULES`);
- and `check_data_access()` (called by every loader in hybridlm.data) raises.
Each refusal raises DataAccessError and is recorded, so a transfer that catches the exception still
fails the build. The stand-in corpus's training part stays reachable: `hybridlm.train_split.train_texts()`
reads it from a separate process's output, never from a protected file or module. A hook only sees
what goes through Python: see docs/hybridlm.md for what it does not prevent (and why the scorer is a
separate process that only reads weights).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys

DATA_MODULES = ("hybridlm.data", "pydoc_data.topics")


class DataAccessError(RuntimeError):
    """Raised when evaluation data is touched from inside transfer()."""


_active = False
_protected_paths: set[str] = set()
_protected_inodes: set[tuple[int, int]] = set()
_violations: list[str] = []
_hook_installed = False


def _canonical(path) -> str | None:
    if isinstance(path, int):
        return None
    try:
        return os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None


def _inode(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def module_files(name: str) -> list[str]:
    """Source and compiled files of module `name`, found without importing it (only its package)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return []
    files = [spec.origin]
    if spec.origin.endswith(".py"):
        for level in ("", 1, 2):
            with contextlib.suppress(NotImplementedError, ValueError):
                files.append(importlib.util.cache_from_source(spec.origin, optimization=level))
    return files


def data_files() -> list[str]:
    """Files that hold or build the stand-in evaluation texts."""
    return [f for name in DATA_MODULES for f in module_files(name)]


def _is_protected(path) -> bool:
    canonical = _canonical(path)
    if canonical is None:
        return False
    return canonical in _protected_paths or _inode(canonical) in _protected_inodes


def _audit(event: str, args) -> None:
    if not _active or not args:
        return
    if event == "open" and _is_protected(args[0]):
        _violate(f"transfer() opened the evaluation data file {_canonical(args[0])}")
    elif event == "import" and isinstance(args[0], str) and args[0] in DATA_MODULES:
        _violate(f"transfer() imported {args[0]}, which holds or loads the evaluation texts")


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


def _protect(paths) -> None:
    for path in filter(None, map(_canonical, paths)):
        _protected_paths.add(path)
        inode = _inode(path)
        if inode is not None:
            _protected_inodes.add(inode)


@contextlib.contextmanager
def transfer_guard(protected_paths=()):
    """Activate the guard over the data files and `protected_paths`; yields the list of violations."""
    global _active, _hook_installed
    if not _hook_installed:  # audit hooks cannot be removed, so install one for the process
        sys.addaudithook(_audit)
        _hook_installed = True
    saved = set(_protected_paths), set(_protected_inodes)
    _protect([*data_files(), *protected_paths])
    _violations.clear()
    _active = True
    try:
        yield _violations
    finally:
        _active = False
        _protected_paths.clear()
        _protected_paths.update(saved[0])
        _protected_inodes.clear()
        _protected_inodes.update(saved[1])
