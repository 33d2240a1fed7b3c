"""How a running workflow talks to the person at the terminal: one-line notices and progress.

Library callers get a silent `Feedback` that keeps the notices in a list; the CLI gives one that
prints to stderr and draws progress bars on a terminal (never under `--json`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext

Advance = Callable[[int], None]  # called with the number of items done so far


class Feedback:
    """Silent by default: notices are kept in `notices`; the callbacks show them, progress and a
    running evaluator's stderr (line by line) as they come."""

    def __init__(
        self,
        on_notice: Callable[[str], None] | None = None,
        on_progress: Callable[[str, int | None], AbstractContextManager[Advance]] | None = None,
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self.notices: list[str] = []
        self.on_notice = on_notice
        self.on_progress = on_progress
        self.on_output = on_output

    def output(self, line: str) -> None:
        if self.on_output is not None:
            self.on_output(line)

    def notice(self, message: str) -> None:
        self.notices.append(message)
        if self.on_notice is not None:
            self.on_notice(message)

    def progress(self, what: str, total: int | None) -> AbstractContextManager[Advance]:
        """A context that yields `advance(done)`; silent unless a terminal asked for progress."""
        if self.on_progress is None:
            return nullcontext(_ignore)
        return self.on_progress(what, total)


def _ignore(done: int) -> None:
    return None


SLOW_AFTER_S = 2.0  # a step that takes longer than this shows that it is running


@contextmanager
def when_slow(feedback: Feedback, what: str, after_s: float = SLOW_AFTER_S) -> Iterator[None]:
    """Run the body; when it is still running after `after_s` seconds, show `feedback.progress(what)`
    (an open-ended bar: terminals only, never under --json) until it ends. Quick bodies show nothing."""
    import threading

    if feedback.on_progress is None:
        yield
        return
    shown = ExitStack()
    lock = threading.Lock()
    done = False

    def show() -> None:
        with lock:
            if not done:
                shown.enter_context(feedback.progress(what, None))

    timer = threading.Timer(after_s, show)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            done = True
            shown.close()


_GIT_PROGRESS = re.compile(r"^(?:remote: )?(?P<phase>[A-Z][A-Za-z ]+):\s+\d+% \((?P<done>\d+)/(?P<total>\d+)\)")


@contextmanager
def git_phases(feedback: Feedback) -> Iterator[Callable[[str], None]]:
    """A receiver of git's progress lines ("Receiving objects:  45% (450/1000)") that shows each phase
    as a progress bar of `feedback` (nothing when it draws no progress)."""
    if feedback.on_progress is None:
        yield lambda line: None
        return
    bars = ExitStack()
    shown: dict[str, Advance] = {}

    def on_line(line: str) -> None:
        found = _GIT_PROGRESS.match(line)
        if found is None:
            return
        phase = found.group("phase")
        if phase not in shown:
            bars.close()
            shown.clear()
            shown[phase] = bars.enter_context(feedback.progress(phase, int(found.group("total"))))
        shown[phase](int(found.group("done")))

    with bars:
        yield on_line


@contextmanager
def on_demand(feedback: Feedback, what: str) -> Iterator[Advance]:
    """An `advance(done)` whose progress display (no total: a count and a rate) opens only when work
    is reported, so a call with nothing to do draws nothing."""
    bars = ExitStack()
    shown: list[Advance] = []

    def advance(done: int) -> None:
        if not shown:
            shown.append(bars.enter_context(feedback.progress(what, None)))
        shown[0](done)

    with bars:
        yield advance
