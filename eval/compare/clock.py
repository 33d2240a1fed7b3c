"""A community's own clock: every publication dated by its place in the run, not by the wall clock.

Three workers of a round publish within one wall-clock second, so "the newest result" (the flat log's
parent half the time, the frame's order for everyone) was decided among same-second commits by their
hashes, and a hash holds the wall clock: a rerun of the same seed took other parents (issue 51's recheck
reproduced 0 of 4 flat-log runs). Under `CommunityClock` the process's `time.time` is a virtual clock
that the harness moves: `advance()` before each step of the run (a worker's choice and claim, its act,
the planner's assignment, the founder's reruns, the observer's reading) puts that step `STEP_SECONDS`
after the previous one. An account's posts within one step are dated one second apart
(`Repository.next_timestamp`), so with fewer than `STEP_SECONDS` posts per step every publication of the
run has its own second, in the order the run made them; nothing is left to a hash.

Everything that reads the clock in this process reads the virtual one: commit dates, claims' windows,
`analyze`'s now. Git subprocesses get the same date through `GIT_AUTHOR_DATE`/`GIT_COMMITTER_DATE`.
The clock starts at a fixed date before any file on the machine was written, so nothing looks dated in
the future and no real file looks old enough to clean up.
"""

from __future__ import annotations

import os
import time
from types import TracebackType
from unittest import mock

START = 1_700_000_000  # 2023-11-14: a founding date every run shares (before any real file's mtime)
STEP_SECONDS = 5  # a step's posts (a claim; a result, a note and a verdict) fit in fewer seconds than this
GIT_DATES = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")


class CommunityClock:
    """A context in which `time.time()` returns `now`, which only `advance` moves."""

    def __init__(self, start: int = START):
        self.now = start
        self._patch = mock.patch.object(time, "time", self._time)
        self._saved: dict[str, str | None] = {}

    def _time(self) -> float:
        return float(self.now)

    def advance(self, seconds: int = STEP_SECONDS) -> int:
        """Move the clock on by `seconds` (a step); the new now."""
        self.now += seconds
        for name in GIT_DATES:
            os.environ[name] = f"@{self.now} +0000"
        return self.now

    def __enter__(self) -> CommunityClock:
        self._saved = {name: os.environ.get(name) for name in GIT_DATES}
        self._patch.start()
        self.advance(0)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._patch.stop()
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
