"""Drafts of files written whole and renamed into place (`.NAME.PID` beside `NAME`), and the sweep of
drafts a killed process left: a killed `analyze` leaves its kept frame's draft (150 MB at a million
contributions) where nothing else would ever remove it. Scratch folders named `PREFIX<pid>-*` are
swept the same way (a killed fetch's probe, with what it had fetched)."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

ABANDONED_AFTER_S = 600  # a draft untouched this long whose process is gone on this machine


def draft_of(path: Path) -> Path:
    """This process's draft of `path`."""
    return path.with_name(f".{path.name}.{os.getpid()}")


def sweep_drafts(path: Path, now: float | None = None) -> list[Path]:
    """Remove the drafts of `path` whose process no longer runs here and that nothing has written for
    `ABANDONED_AFTER_S` (a draft on a shared folder may be another machine's, and a process number
    may be reused: the age keeps both); the drafts removed."""
    now = time.time() if now is None else now
    prefix = f".{path.name}."
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            pid = entry.name[len(prefix) :]
            if not entry.name.startswith(prefix) or not pid.isdigit() or int(pid) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime > ABANDONED_AFTER_S and not _running(int(pid)):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return True


def sweep_abandoned_folders(parent: Path, prefix: str, now: float | None = None) -> list[Path]:
    """Remove the folders `<prefix><pid>-*` under `parent` whose process no longer runs here and that
    nothing has written at the top for `ABANDONED_AFTER_S` (as `sweep_drafts`); the folders removed."""
    now = time.time() if now is None else now
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            pid = entry.name[len(prefix) :].partition("-")[0]
            if not entry.name.startswith(prefix) or not pid.isdigit() or int(pid) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                stat = entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False) and now - stat.st_mtime > ABANDONED_AFTER_S:
                    if not _running(int(pid)):
                        shutil.rmtree(entry.path)
                        removed.append(Path(entry.path))
    return removed
