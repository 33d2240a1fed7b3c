"""One seam for schedulers: a job is submitted, its state read, and it is cancelled; nothing more.

`LocalScheduler` runs a job as a process group on this machine (`groups`); `SlurmScheduler` hands it to
Slurm (`sbatch`, `squeue`/`scontrol`/`sacct`, `scancel`): Slurm allocates, starts, enforces the time
limit and ends. Another scheduler (Kubernetes Jobs) is one more class with these three methods. Nothing
here knows about Agora: a job is a shell script, a folder, two log files, a time limit and the
scheduler's own options, passed through untouched.

A job's state is read into the launch's words (`state.PENDING` ... `state.LOST`) by `slurm_state`, a
pure function of Slurm's state, exit code and reason.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from . import groups
from .state import CRASHED, FINISHED, LOST, OVER_BUDGET, PENDING, RUNNING, STOPPED, STOPPING

SLURM = "slurm"
LOCAL = "local"
SCHEDULERS = (LOCAL, SLURM)


class SchedulerError(Exception):
    """The scheduler refused or cannot be reached: its own words."""


@dataclass(frozen=True)
class Job:
    name: str
    script: str  # a shell script, run with /bin/sh in `cwd`
    cwd: str
    stdout: str
    stderr: str
    time_seconds: float | None = None  # the scheduler ends it then (Slurm: --time, in whole minutes)
    options: tuple[str, ...] = ()  # the scheduler's own options, passed through (`--gres=gpu:1`)
    env: tuple[tuple[str, str], ...] = ()  # set for the job on top of the submitter's environment
    unset: tuple[str, ...] = ()  # variables of the submitter's environment the job never sees (a key)


@dataclass(frozen=True)
class JobState:
    state: str  # the launch's words: pending, running, stopping, finished, crashed, over-budget, stopped, lost
    raw: str  # the scheduler's own word (Slurm's JobState)
    exit_code: int | None = None  # negative: ended by that signal
    reason: str | None = None
    started_at: float | None = None
    ended_at: float | None = None

    @property
    def ended(self) -> bool:
        return self.state not in (PENDING, RUNNING, STOPPING)


class Scheduler(Protocol):
    name: str

    def submit(self, job: Job) -> str: ...

    def status(self, ids: Sequence[str]) -> dict[str, JobState]: ...

    def cancel(self, ids: Sequence[str]) -> None: ...


def scheduler(name: str) -> Scheduler:
    if name == SLURM:
        return SlurmScheduler()
    if name == LOCAL:
        return LocalScheduler()
    raise SchedulerError(f"unknown scheduler {name!r} (known: {', '.join(SCHEDULERS)})")


# --- local: process groups on this machine -------------------------------------------------------


class LocalScheduler:
    """Jobs as process groups of this process (a job's id is its pid). The exit code is known to the
    process that submitted it; another process sees a job that ended as `lost`. No time limit is
    enforced here: the local supervisor does that for agents."""

    name = LOCAL

    def __init__(self) -> None:
        self._procs: dict[str, subprocess.Popen] = {}

    def submit(self, job: Job) -> str:
        env = _environment(job)
        try:
            proc = groups.start(["/bin/sh", job.script], job.cwd, env, job.stdout, job.stderr)
        except OSError as exc:
            raise SchedulerError(f"cannot start {job.name}: {exc}") from None
        self._procs[str(proc.pid)] = proc
        return str(proc.pid)

    def status(self, ids: Sequence[str]) -> dict[str, JobState]:
        found = {}
        for id in ids:
            proc = self._procs.get(id)
            code = proc.poll() if proc is not None else None
            if code is not None:
                found[id] = JobState(FINISHED if code == 0 else CRASHED, "exited", code)
            elif proc is not None or groups.alive(int(id)):
                found[id] = JobState(RUNNING, "running")
            else:
                found[id] = JobState(LOST, "gone")
        return found

    def cancel(self, ids: Sequence[str]) -> None:
        for id in ids:
            groups.terminate(int(id))


# --- Slurm ---------------------------------------------------------------------------------------

ACTIVE_STATES = {"PENDING": PENDING, "CONFIGURING": PENDING, "REQUEUED": PENDING, "RESV_DEL_HOLD": PENDING}
ACTIVE_STATES |= {"RUNNING": RUNNING, "SUSPENDED": RUNNING, "RESIZING": RUNNING, "SIGNALING": RUNNING}
ACTIVE_STATES |= {"COMPLETING": STOPPING, "STAGE_OUT": STOPPING, "STOPPED": RUNNING}
ENDED_STATES = {"COMPLETED": FINISHED, "TIMEOUT": OVER_BUDGET, "DEADLINE": OVER_BUDGET, "CANCELLED": STOPPED}
ENDED_STATES |= {"FAILED": CRASHED, "NODE_FAIL": CRASHED, "OUT_OF_MEMORY": CRASHED, "BOOT_FAIL": CRASHED}
ENDED_STATES |= {"PREEMPTED": CRASHED, "REVOKED": CRASHED, "SPECIAL_EXIT": CRASHED}
REASONS = {
    "NODE_FAIL": "its node failed",
    "OUT_OF_MEMORY": "out of memory (Slurm's limit)",
    "BOOT_FAIL": "its node did not boot",
    "PREEMPTED": "preempted by another job",
    "TIMEOUT": "Slurm's --time ran out",
    "DEADLINE": "its deadline passed",
    "CANCELLED": "cancelled (scancel)",
}


def slurm_state(raw: str, exit_code: str | None = None, reason: str | None = None) -> JobState:
    """Slurm's JobState (`CANCELLED by 0` reads as CANCELLED), ExitCode (`CODE:SIGNAL`) and Reason in
    the launch's words; an unknown state is `lost` with the word kept."""
    word = raw.split()[0].rstrip("+") if raw.strip() else "UNKNOWN"
    code = None
    if exit_code and ":" in exit_code:
        status, sig = exit_code.split(":", 1)
        if status.isdigit() and sig.isdigit():
            code = -int(sig) if int(sig) else int(status)
    shown = reason if reason and reason not in ("None", "(null)") else None
    if word in ACTIVE_STATES:
        return JobState(ACTIVE_STATES[word], word, None, shown)
    if word in ENDED_STATES:
        state = ENDED_STATES[word]
        why = REASONS.get(word)
        if word == "FAILED":
            why = f"exit {code}" if code is not None else "failed"
        if word == "COMPLETED":
            why = None
        return JobState(state, word, code, ", ".join(w for w in (why, shown) if w) or None)
    return JobState(LOST, word, code, f"Slurm reports {word}")


def time_limit(seconds: float) -> str:
    """Slurm's --time in whole minutes, rounded up (Slurm counts minutes: `--time=0:30` is one)."""
    return str(max(1, math.ceil(seconds / 60)))


def _when(text: str | None) -> float | None:
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


class SlurmScheduler:
    """Jobs as Slurm batch jobs: `sbatch --parsable` to submit (the submitter's environment goes with it,
    Slurm's default `--export=ALL`), `scontrol show job` to read (Slurm keeps an ended job for its
    MinJobAge), `sacct` where the cluster keeps accounting and scontrol forgot, `scancel` to end."""

    name = SLURM

    def submit(self, job: Job) -> str:
        argv = [_command("sbatch"), "--parsable", f"--job-name={job.name}", f"--chdir={job.cwd}"]
        argv += [f"--output={job.stdout}", f"--error={job.stderr}"]
        if job.time_seconds is not None:
            argv.append(f"--time={time_limit(job.time_seconds)}")
        argv += [*job.options, job.script]
        env = _environment(job)
        done = subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines() or [f"exit {done.returncode}"]
            raise SchedulerError(f"sbatch refused {job.name}: {lines[-1]}")
        return done.stdout.strip().split(";")[0]

    def status(self, ids: Sequence[str]) -> dict[str, JobState]:
        found: dict[str, JobState] = {}
        for id in ids:
            done = subprocess.run([_command("scontrol"), "show", "job", "-o", id], capture_output=True, text=True)
            fields = _fields(done.stdout) if done.returncode == 0 else {}
            if fields.get("JobState"):
                state = slurm_state(fields["JobState"], fields.get("ExitCode"), fields.get("Reason"))
                started = _when(fields.get("StartTime")) if state.state != PENDING else None
                ended = _when(fields.get("EndTime")) if state.ended else None
                found[id] = JobState(state.state, state.raw, state.exit_code, state.reason, started, ended)
            else:
                found[id] = self._accounted(id)
        return found

    def _accounted(self, id: str) -> JobState:
        """A job scontrol forgot: from accounting when there is some, else lost."""
        if shutil.which("sacct") is not None:
            argv = ["sacct", "-X", "-n", "-P", "-j", id, "-o", "State,ExitCode,Start,End"]
            done = subprocess.run(argv, capture_output=True, text=True)
            line = done.stdout.strip().splitlines()[:1] if done.returncode == 0 else []
            if line and line[0].count("|") == 3:
                raw, code, start, end = line[0].split("|")
                state = slurm_state(raw, code)
                return JobState(state.state, state.raw, state.exit_code, state.reason, _when(start), _when(end))
        return JobState(LOST, "forgotten", None, "Slurm no longer knows this job and keeps no accounting")

    def cancel(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        done = subprocess.run([_command("scancel"), *ids], capture_output=True, text=True)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
            raise SchedulerError(f"scancel: {lines[-1]}")


def _environment(job: Job) -> dict[str, str]:
    """The job's environment: the submitter's, less `job.unset`, plus `job.env` (Slurm keeps what it is
    given with the job, so a variable left out here never reaches the controller or a node)."""
    return {k: v for k, v in os.environ.items() if k not in job.unset} | dict(job.env)


def _command(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SchedulerError(f"{name} is not installed here: --scheduler slurm runs where Slurm's commands are")
    return found


def _fields(line: str) -> dict[str, str]:
    """`scontrol show job -o`: `Key=Value` words (a value never holds a space but Command's may)."""
    fields: dict[str, str] = {}
    for word in line.split():
        if "=" in word:
            key, value = word.split("=", 1)
            fields.setdefault(key, value)
    return fields
