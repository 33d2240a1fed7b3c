"""Running one evaluation step as a process: bounded output, a wall-clock limit, clean stops.

The step runs in its own session and process group. Its stdout and stderr are read as they come, in
bounded memory: the last `STDOUT_TAIL` bytes of stdout are kept (the metric is its last JSON line),
stderr lines are shown to the person (control characters made visible, at most `SHOWN_LINES`), and both
are kept in the run's local folder up to `LOG_LIMIT` bytes each; none of it is ever published.
SIGINT and SIGTERM sent to git-agora are passed to the step's group, which is waited for, so a stopped
`git agora run` leaves no evaluator behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from ..feedback import Feedback
from ..visible import visible

STDOUT_TAIL = 1 << 20
LOG_LIMIT = 16 << 20
SHOWN_LINES = 2000
_CHUNK = 1 << 16


@dataclass(frozen=True)
class StepOutcome:
    returncode: int | None  # None: stopped at the time limit
    duration_s: float
    stdout_tail: str
    last_error_line: str  # for the person who ran it, never for the record


class _Reader(threading.Thread):
    """Reads one stream to its end: writes it to `log` (bounded), keeps a tail, hands out lines."""

    def __init__(self, stream: IO[bytes], log: str | None, keep: int, on_line: Callable[[str], None] | None):
        super().__init__(daemon=True)
        self.stream, self.log_path, self.keep, self.on_line = stream, log, keep, on_line
        self.tail = bytearray()
        self.last_line = b""
        self.start()

    def run(self) -> None:
        written, shown, pending = 0, 0, b""
        log = open(self.log_path, "ab", buffering=0) if self.log_path else None  # readable as it comes
        try:
            while chunk := self.stream.read1(_CHUNK) if hasattr(self.stream, "read1") else self.stream.read(_CHUNK):
                if log is not None and written < LOG_LIMIT:
                    log.write(chunk[: LOG_LIMIT - written])
                    written += len(chunk)
                    if written >= LOG_LIMIT:
                        log.write(b"\n[git-agora: the rest of this output was not kept]\n")
                self.tail += chunk
                if len(self.tail) > self.keep:
                    del self.tail[: len(self.tail) - self.keep]
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if len(pending) > _CHUNK:  # a line without end: shown in pieces
                    lines.append(pending)
                    pending = b""
                for line in lines:
                    if line.strip():
                        self.last_line = line[-400:]
                    if self.on_line is not None and shown < SHOWN_LINES:
                        shown += 1
                        self.on_line(visible(line.decode("utf-8", "replace")))
                        if shown == SHOWN_LINES:
                            self.on_line(f"[git-agora: more output is in {self.log_path}]")
            if pending.strip():
                self.last_line = pending[-400:]
                if self.on_line is not None and shown < SHOWN_LINES:
                    self.on_line(visible(pending.decode("utf-8", "replace")))
        finally:
            if log is not None:
                log.close()

    def text(self, wait: float) -> str:
        """The tail once the stream ends, or after `wait` seconds (a process that escaped the step's
        group may hold the stream open: what came by then is what counts)."""
        self.join(wait)
        return bytes(self.tail).decode("utf-8", "replace")


def run_step(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    timeout: float,
    preexec: Callable[[], None] | None = None,
    feedback: Feedback | None = None,
    log_prefix: str | None = None,
    pass_fds: Sequence[int] = (),
    after_start: Callable[[], None] | None = None,
    reap: Callable[[], None] | None = None,
) -> StepOutcome:
    """Run `argv` and wait for it at most `timeout` seconds. When it ends (or at the limit) its whole
    process group is killed, then `reap` kills whatever else it started (its cgroup)."""
    start = time.monotonic()
    with _Stops() as stops:
        try:  # a stop may come at any point until the step's processes are gone
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=dict(env),
                pass_fds=tuple(pass_fds),
                preexec_fn=preexec,
            )
            stops.started(proc)
            if after_start is not None:
                after_start()
            assert proc.stdout is not None and proc.stderr is not None
            out = _Reader(proc.stdout, f"{log_prefix}.out" if log_prefix else None, STDOUT_TAIL, None)
            err = _Reader(
                proc.stderr, f"{log_prefix}.err" if log_prefix else None, 0, feedback.output if feedback else None
            )
            try:
                proc.wait(timeout=timeout)
                returncode: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                returncode = None
            duration = time.monotonic() - start
            _kill_group(proc)
            if reap is not None:
                reap()
        except _Stopped as stop:  # handled here, not in the handler: Popen.wait holds a lock there
            _kill_group(proc, stop.signum)
            if reap is not None:
                reap()
            raise KeyboardInterrupt if stop.signum == signal.SIGINT else SystemExit(128 + stop.signum) from None
    stdout = out.text(_DRAIN_S)
    err.join(_DRAIN_S)
    return StepOutcome(returncode, duration, stdout, err.last_line.decode("utf-8", "replace"))


_DRAIN_S = 5.0  # how long the output may still come once the step's processes are killed


class _Stopped(BaseException):  # BaseException: an evaluator's own `except Exception` cannot swallow it
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _Stops:
    """SIGINT and SIGTERM while a step runs (main thread only; Python runs every handler there, whichever
    thread the signal reached): one that comes while the step starts waits until its process group is
    known; then each is passed on to the group, and the first ends the wait by raising _Stopped."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.pending: int | None = None  # a stop that came before the step started
        self.raised = False
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Stops:
        if threading.current_thread() is threading.main_thread():
            self.previous = {sig: signal.signal(sig, self.handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        if self.pending is not None and self.proc is None:  # the step never started: the command's handler decides
            signal.raise_signal(self.pending)

    def started(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        if self.pending is not None:
            self.handle(self.pending, None)

    def handle(self, signum: int, frame: object) -> None:
        if self.proc is None:
            self.pending = self.pending or signum
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signum)
        if not self.raised:  # a second stop, while the step is being stopped, is only passed on
            self.raised = True
            raise _Stopped(signum)


def _kill_group(proc: subprocess.Popen, signum: int = signal.SIGKILL, grace: float = 10.0) -> None:
    """Send `signum` to the step's process group, wait for it, and kill whatever is left after `grace`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signum)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
