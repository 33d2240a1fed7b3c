"""Forked helper processes that end with the process that forked them.

A fork inherits every open descriptor, the clone's locks (`locks`, `flock`) and the pipes to git
included. A helper that outlived a killed command (a rebuild's worker parsing its block, a process
aside) would hold the index's lock on its own and stall every later command of the clone, and keep the
pipe of a `git cat-file` open, so that git never ends either.
"""

from __future__ import annotations

import ctypes
import os
import signal
from functools import cache

PR_SET_PDEATHSIG = 1  # <sys/prctl.h>


def die_with_parent(parent: int) -> None:
    """Called first in a process forked from `parent`: the kernel kills it when the thread that forked
    it ends (Linux's `PR_SET_PDEATHSIG`); it ends at once if `parent` is gone already. Elsewhere (no
    `prctl`) nothing changes."""
    prctl = _prctl()
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


@cache
def _prctl():
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)
    except (OSError, TypeError):  # no C library to load by that name (not a Unix)
        return None
