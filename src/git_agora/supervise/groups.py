"""Process groups: each agent leads its own session, so its process group holds the agent and
everything it started; stopping an agent signals the whole group.

On Linux, liveness comes from `/proc` and ignores zombies (an orphan waiting for a parent that never
reaps it is ended, not running); elsewhere a signal 0 answers.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

PROC = Path("/proc")


def start(argv: list[str], cwd: str, env: dict[str, str], stdout: str, stderr: str) -> subprocess.Popen:
    """Start `argv` as the leader of a new session (and so of a new process group), stdin empty,
    stdout and stderr appended to the two files."""
    with open(stdout, "ab") as out, open(stderr, "ab") as err:
        return subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )


def _state(pid: int) -> str | None:
    """The process state letter from /proc (None: no such process)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def alive(pid: int | None) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    if pid is None or pid <= 0:
        return False
    if PROC.is_dir():
        state = _state(pid)
        return state is not None and state not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def members(pgid: int) -> list[int]:
    """The living processes of process group `pgid` (zombies excluded where /proc tells)."""
    if not PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False when it has no process left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def terminate(pgid: int) -> None:
    signal_group(pgid, signal.SIGTERM)


def kill(pgid: int) -> None:
    signal_group(pgid, signal.SIGKILL)
