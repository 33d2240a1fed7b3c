"""`hybridlm eval`: the build step in a child process, then the score step, as one command.

The transfer code runs only in the child (`python -m hybridlm transfer ... --out TMP`), which never
holds the evaluation texts. This process reads no text until the child and everything it started
have ended (the texts are loaded only then), and scores the artifact the child wrote. SIGINT and
SIGTERM are forwarded to the child's process group and waited for, so stopping `hybridlm eval` leaves
no process behind; the child also dies with this process (PR_SET_PDEATHSIG on Linux).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from hybridlm.artifact import file_sha256
from hybridlm.build import check_transfer_source
from hybridlm.determinism import default_threads
from hybridlm.errors import EvalError
from hybridlm.score import ScoreOptions, check_options, score_artifact

ERROR_PREFIX = "hybridlm: error: "
KILL_GRACE_SECONDS = 10.0
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(EvalError):
    """`hybridlm eval` was stopped by a signal; the child was stopped too."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}; the build process was ended")
        self.exit_code = 128 + signum


@dataclass(frozen=True)
class EvalOptions:
    transfer_file: str
    data: str | None = None
    n_texts: int = 200
    chunk: int = 512
    device: str = "cpu"
    donors: str | None = None
    timeout: float | None = None
    config_name: str = "full"
    threads: int | None = None
    batch_size: int = 4


def evaluate(opts: EvalOptions) -> dict:
    """Build in a child process, then score here; returns the result record or raises EvalError."""
    from hybridlm.data import DataError, check_source

    started = time.perf_counter()
    check_options(opts.chunk, opts.batch_size)
    check_transfer_source(Path(opts.transfer_file))
    try:
        check_source(opts.data)  # reads no text: bad paths fail before a long transfer
    except DataError as exc:
        raise EvalError(str(exc)) from None
    threads = opts.threads or default_threads()
    with tempfile.TemporaryDirectory(prefix="hybridlm-artifact-") as out:
        built = time.perf_counter()
        run_child(build_command(opts, out, threads))
        transfer = {
            "transfer_file": opts.transfer_file,
            "transfer_sha256": file_sha256(Path(opts.transfer_file)),  # the file this evaluator ran
            "transfer_seconds": round(time.perf_counter() - built, 3),  # the child's whole run, as timed here
        }
        result = score_artifact(
            ScoreOptions(
                artifact=out,
                data=opts.data,
                n_texts=opts.n_texts,
                chunk=opts.chunk,
                device=opts.device,
                threads=threads,
                batch_size=opts.batch_size,
                config_name=opts.config_name,
            )
        )
    result.update(transfer)
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def build_command(opts: EvalOptions, out: str, threads: int) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "hybridlm",
        "transfer",
        opts.transfer_file,
        "--out",
        out,
        "--config",
        opts.config_name,
        "--device",
        opts.device,
        "--threads",
        str(threads),
    ]
    if opts.donors:
        argv += ["--donors", opts.donors]
    if opts.timeout:
        argv += ["--timeout", repr(opts.timeout)]
    if opts.data and Path(opts.data).is_file():
        argv += ["--protect", str(Path(opts.data).resolve())]
    return argv


def run_child(argv: list[str]) -> None:
    """Run the build; relay its output to stderr; raise EvalError with its one-line reason on failure."""
    received: list[int] = []
    children: list[subprocess.Popen] = []
    with forwarded_signals(children, received):
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
            preexec_fn=_die_with_parent(),
        )
        children.append(child)
        if received:
            _signal_group(child.pid, received[0])
        reasons: list[str] = []
        relay = threading.Thread(target=_relay, args=(child.stdout, reasons), daemon=True)
        relay.start()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: its group id stays ours
        _signal_group(child.pid, signal.SIGKILL)  # whatever the transfer started ends with it
        returncode = child.wait()
        relay.join(timeout=5)
    if received:
        raise Interrupted(received[0])
    if returncode != 0:
        raise EvalError(reasons[-1] if reasons else _describe_exit(returncode))


@contextlib.contextmanager
def forwarded_signals(children: list, received: list):
    """While active, SIGINT/SIGTERM go to the children's process groups (SIGKILL after a grace period)."""
    timers: list[threading.Timer] = []

    def forward(signum, frame):
        received.append(signum)
        for child in children:
            _signal_group(child.pid, signum)
            timers.append(threading.Timer(KILL_GRACE_SECONDS, _signal_group, (child.pid, signal.SIGKILL)))
            timers[-1].daemon = True
            timers[-1].start()

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {s: signal.signal(s, forward) for s in FORWARDED_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for timer in timers:
            timer.cancel()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _relay(stream, reasons: list) -> None:
    """Copy the child's output to our stderr, keeping its `hybridlm: error:` lines as reasons."""
    for line in stream:
        if line.startswith(ERROR_PREFIX):
            reasons.append(line[len(ERROR_PREFIX) :].strip())
        else:
            sys.stderr.write(line)
            sys.stderr.flush()


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        name = signal.Signals(-returncode).name
        hint = " (out of memory?)" if returncode == -signal.SIGKILL else ""
        return f"the build process (transfer) was killed by {name}{hint}"
    return f"the build process (transfer) exited with status {returncode}"


def _die_with_parent():
    """A preexec_fn asking Linux to SIGKILL the child if this process dies first; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL)
