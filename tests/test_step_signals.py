"""A stop (Ctrl-C, SIGTERM) that reaches `run_step` at any moment ends the command cleanly and leaves no
process behind: while the step starts (the stop is held), right after it started, or while it runs.
Under load a stop often lands in the first two windows (seen as `test_sigint_leaves_no_evaluator_behind`
printing a traceback instead of "aborted")."""

from __future__ import annotations

import os
import signal
import sys

import psutil
import pytest

from git_agora.evaluate.process import run_step

MARKER = "agora-step-signal-test"
STEP = [sys.executable, "-c", f"import time; time.sleep(60)  # {MARKER}"]


def steps_alive() -> list[psutil.Process]:
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            if MARKER in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


def run(**hooks) -> None:
    run_step(STEP, dict(os.environ), os.getcwd(), timeout=60, **hooks)


@pytest.mark.parametrize(
    "signum, expected",
    [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, SystemExit)],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_stop_right_after_the_step_started_ends_it(signum, expected):
    previous = signal.getsignal(signum)
    with pytest.raises(expected) as raised:
        run(after_start=lambda: signal.raise_signal(signum))
    if expected is SystemExit:
        assert raised.value.code == 128 + signum
    assert not steps_alive()
    assert signal.getsignal(signum) is previous  # the command's own handler is back


def test_a_stop_sent_while_the_step_starts_is_held_then_ends_it():
    """The step's own set-up (before exec) stops its parent: the stop is held until the step is known."""
    with pytest.raises(KeyboardInterrupt):
        run(preexec=lambda: os.kill(os.getppid(), signal.SIGINT))
    assert not steps_alive()


def test_a_second_stop_while_the_step_is_being_stopped_only_passes_on():
    stops = iter([signal.SIGINT, signal.SIGINT])

    def stop_twice() -> None:
        signal.raise_signal(next(stops))

    with pytest.raises(KeyboardInterrupt):
        run(after_start=stop_twice, reap=stop_twice)  # the second comes while the step's processes are reaped
    assert not steps_alive()


@pytest.fixture
def command_handles_sigint():
    """The command's own SIGINT handler, as at a terminal: a suite started in the background of a
    non-interactive shell inherits SIGINT ignored, and then a held stop rightly reaches nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_stop_that_came_while_a_step_failed_to_start_still_reaches_the_command(command_handles_sigint):
    def stop_then_fail() -> None:
        os.kill(os.getppid(), signal.SIGINT)
        raise OSError("cannot start")

    with pytest.raises(KeyboardInterrupt):
        run(preexec=stop_then_fail)
    assert not steps_alive()
