"""`lifetime`: a command killed while its forked helpers run (a rebuild's workers, a process aside)
leaves none of them holding the clone's locks: every later command of the clone would wait on them."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HOLDER = """
import os, sys, time
from pathlib import Path
from git_agora import locks
from git_agora.index import parallel

locks.acquire(Path(sys.argv[1]), exclusive=True)  # as an index update holds the index's lock
pool = parallel._pool(2)
running = [pool.submit(time.sleep, 600) for _ in range(2)]
aside = parallel.Aside(time.sleep, 600)
while len(pool._processes) < 2:
    time.sleep(0.01)
print(*pool._processes, aside._process.pid, flush=True)
time.sleep(600)
"""


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie (one that ended, not yet reaped by its new parent)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_helpers_die_with_a_killed_command_and_release_its_lock(tmp_path):
    lock = tmp_path / "index.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    helpers = [int(pid) for pid in holder.stdout.readline().split()]
    assert len(helpers) == 3 and all(running(pid) for pid in helpers)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    deadline = time.monotonic() + 60  # a bound on the kernel's delivery, not a measure of speed
    while any(running(pid) for pid in helpers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(running(pid) for pid in helpers)
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: no helper holds the inherited descriptor
    finally:
        os.close(fd)
