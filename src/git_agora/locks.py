"""Advisory file locks between git-agora processes of one clone (`flock`, released when a process dies).

A shared lock never needs write access: on a read-only `.git/agora` it opens an existing lock file for
reading, or goes without one when there is none (nothing can write there then either).
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

READ_ONLY_ERRORS = (errno.EACCES, errno.EPERM, errno.EROFS)


def acquire(path: Path, exclusive: bool, on_wait: Callable[[], None] | None = None) -> int | None:
    """Lock `path` and return its descriptor (None: a shared lock where no lock file can exist).
    `on_wait` is called once when another process holds the lock and this one starts to wait.
    Failing to create the lock file raises the OSError, with its path."""
    fd = _open(path, exclusive)
    if fd is None:
        return None
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def file_lock(path: Path, exclusive: bool, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    fd = acquire(path, exclusive, on_wait)
    try:
        yield
    finally:
        release(fd)


def _open(path: Path, exclusive: bool) -> int | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        if exclusive or exc.errno not in READ_ONLY_ERRORS:
            if exc.filename is None:
                exc.filename = str(path)
            raise
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
