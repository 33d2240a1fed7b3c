"""Reruns as jobs of a scheduler: `verify --pending --scheduler slurm --jobs N`, and `ci --scheduler slurm
--jobs N` (also its verify half, `ci --verify-only --out DIR --scheduler slurm`).

Each job reruns one claim in the sandbox and writes a verdict bundle of that claim (`ops.rerun_job`,
`ops.bundle`: the format the split CI's two jobs share); this process reads it with the bundle's one
reader, checks it against the policy as the publish half does (`ops.ci_split.accept`: the claim it
asked for, among this account's pending ones, its record exactly what a rerun under its policy
records), and only then signs and publishes it (or, for a verify half, keeps it for the bundle it
writes). No key reaches a job. At most `jobs` run at once. Each claim is held while its job runs by an
exclusive lock under `.git/agora/reruns/locks/` (flock: released when this process ends, however it
ends), and before submitting and again before publishing this account's log is read for a verdict on
it: two such commands at once in one clone never publish two verdicts on one claim. A job that ends
without a bundle (cancelled, killed at its time, its node lost) publishes nothing: its claim stays
pending for the next run. This process ended by Ctrl-C or SIGTERM cancels its jobs first. The job
folders (script, logs, bundle) stay under `.git/agora/reruns/` on the clone, which the nodes must share.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from ..contribution import ContributionError, Verdict
from ..contribution import check as check_contribution
from ..errors import AgoraError, ClaimError
from ..leaks import redact
from ..project import Project
from ..refs.names import LogRef
from ..supervise.scheduler import LOCAL, Job, SchedulerError, scheduler
from .bundle import HEADER, BundleError, read_bundle
from .ci import KEY_VARIABLE, Budget, Checked, PendingReport, _pending
from .ci_split import accept, publish_rerun
from .ci_summary import NotRerun
from .launch_jobs import check_shared
from .verify import _verification

BUNDLE = "bundle"  # a job's one-claim verdict bundle, in its folder
JOB_MARGIN_SECONDS = 300  # a job's time limit: the evaluation's timeout and this, for the sandbox and git
POLL_SECONDS = 1.0


@dataclass
class _Running:
    sha: str
    folder: Path
    lock: int
    began: float


class _Verified:
    """The targets of this account's verdicts, read from its local log, new entries only."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.tip: str | None = None
        self.targets: set[str] = set()

    def __contains__(self, sha: str) -> bool:
        repo = self.project.repo
        tip = repo.ref(LogRef(self.project.account).local)
        if tip is not None and tip != self.tip:
            for entry in repo.log_entries(tip, self.tip):
                found = repo.contribution(entry)
                if found is not None and found.target:
                    self.targets.add(found.target)
            self.tip = tip
        return sha in self.targets


def verify_pending_on(
    project: Project,
    budget: Budget,
    scheduler_name: str,
    jobs: int,
    options: tuple[str, ...] = (),
    node_local_ok: bool = False,
) -> PendingReport:
    """Fetch, then rerun the claims this account has not verified (`ci.claims_to_verify`) as jobs of
    `scheduler_name`, `jobs` at a time, within `budget`; publish each verdict as its job hands it back."""
    from .indexing import FRAME_COLUMNS, load
    from .standing import reader_root
    from .sync import fetch

    work = prepare(project, scheduler_name, jobs, node_local_ok)
    project.signing_key  # noqa: B018  (no key, no run: found before anything is submitted)
    fetch(project)
    contributions = load(project, FRAME_COLUMNS).contributions
    claims = _pending(project, contributions, reader_root(project, contributions))
    checked, left = rerun_as_jobs(project, claims, budget, scheduler_name, jobs, options, work)
    return PendingReport(project.account, checked, left)


def prepare(project: Project, scheduler_name: str, jobs: int, node_local_ok: bool) -> Path:
    """Before anything is fetched or submitted: the jobs' folder, `.git/agora/reruns/` (refused where it
    is plainly one node's own, unless `node_local_ok`); a sandbox here for local jobs (Slurm's nodes
    each say when they have none)."""
    from ..evaluate.sandbox import SandboxUnavailable, require_bwrap

    if jobs < 1:
        raise AgoraError(f"--jobs must be at least 1 (got {jobs})")
    scheduler(scheduler_name)  # an unknown one is refused now
    if scheduler_name == LOCAL:
        try:
            require_bwrap()
        except SandboxUnavailable as exc:
            raise AgoraError(f"reruns run only in the sandbox: {exc.reason}") from None
    work = Path(project.repo.agora_path) / "reruns"
    if scheduler_name != LOCAL:
        check_shared(work.parent, node_local_ok)
    (work / "locks").mkdir(parents=True, exist_ok=True)
    return work


def rerun_as_jobs(
    project: Project,
    claims: tuple[str, ...],
    budget: Budget,
    scheduler_name: str,
    jobs: int,
    options: tuple[str, ...],
    work: Path,
    publishing: bool = True,
) -> tuple[tuple[Checked, ...], tuple[str, ...]]:
    """Rerun `claims` in order as jobs (module docstring), `jobs` at once, until `budget` is spent; publish
    each verdict as its job hands it back (unless not `publishing`: each is kept, with its record, for a
    bundle). The claims checked and those the budget left."""
    return _Run(project, budget, scheduler_name, jobs, options, work, publishing).run(list(claims))


class _Run:
    def __init__(self, project, budget, scheduler_name, jobs, options, work, publishing) -> None:
        self.project, self.budget, self.jobs, self.options, self.work = project, budget, jobs, options, work
        self.publishing = publishing
        self.scheduler = scheduler(scheduler_name)
        self.verified = _Verified(project)
        self.checked: list[Checked] = []
        self.left: list[str] = []
        self.running: dict[str, _Running] = {}
        self.submitted = 0

    def run(self, claims: list[str]) -> tuple[tuple[Checked, ...], tuple[str, ...]]:
        deadline = None if self.budget.max_minutes is None else time.monotonic() + self.budget.max_minutes * 60
        queue = list(claims)
        try:
            with _terminated_raises():
                self._loop(queue, deadline)
        except BaseException:
            self._cancel_all()
            raise
        return tuple(self.checked), tuple(self.left)

    def _loop(self, queue: list[str], deadline: float | None) -> None:
        while queue or self.running:
            while queue and len(self.running) < self.jobs:
                spent = self.budget.max_evaluations is not None and self.submitted >= self.budget.max_evaluations
                if spent or (deadline is not None and time.monotonic() >= deadline):
                    self.left.extend(queue)
                    queue.clear()
                    break
                self._start(queue.pop(0))
            if self.running:
                time.sleep(POLL_SECONDS)
                self._collect()

    def _start(self, sha: str) -> None:
        lock = _try_lock(self.work / "locks" / f"{sha}.{self.project.account}.lock")
        if lock is None:  # another run of this clone reruns it now: it publishes, or leaves it pending
            self.project.feedback.notice(f"{sha[:12]} is being rerun by another run here: left to it")
            return
        if self.publishing and sha in self.verified:
            os.close(lock)
            return
        target = self.project.contribution(sha)
        who, title = redact(target.account), redact(target.title)
        try:
            _check_draft(self.project, target)
        except ClaimError as exc:
            os.close(lock)
            self.checked.append(Checked(sha, who, title, None, str(exc), None, 0.0, NotRerun.CLAIM))
            return
        folder = self.work / f"{sha[:12]}-{int(time.time() * 1000)}-{os.getpid()}-{secrets.token_hex(3)}"
        folder.mkdir(parents=True)
        timeout = float(self.project.policy(sha).config.evaluation.timeout)
        script = folder / "job.sh"
        script.write_text(_script(self.project, sha, folder / BUNDLE))
        job = Job(
            name=f"agora-rerun-{sha[:12]}",
            script=str(script),
            cwd=str(self.project.repo.worktree_path),
            stdout=str(folder / "stdout.log"),
            stderr=str(folder / "stderr.log"),
            time_seconds=timeout + JOB_MARGIN_SECONDS,
            options=self.options,
            unset=(KEY_VARIABLE,),
        )
        try:
            id = self.scheduler.submit(job)
        except SchedulerError as exc:
            os.close(lock)
            raise AgoraError(f"cannot submit the rerun of {sha[:12]}: {exc}") from None
        self.submitted += 1
        self.project.feedback.notice(f"rerunning {sha[:12]} ({who}: {title}) as {self.scheduler.name} job {id}")
        self.running[id] = _Running(sha, folder, lock, time.monotonic())

    def _collect(self) -> None:
        states = self.scheduler.status(list(self.running))
        for id, state in states.items():
            if not state.ended:
                continue
            job = self.running.pop(id)
            try:
                self.checked.append(self._finish(job, id, state.raw))
            finally:
                os.close(job.lock)

    def _finish(self, job: _Running, id: str, raw: str) -> Checked:
        """The job's bundle read, checked against the policy, then published (or kept)."""
        target = self.project.contribution(job.sha)
        who, title = redact(target.account), redact(target.title)
        seconds = round(time.monotonic() - job.began, 3)
        if not (job.folder / BUNDLE / HEADER).exists():
            why = f"its job {id} ended ({raw}) without a verdict: nothing published, the next run reruns it"
            return Checked(job.sha, who, title, None, why, None, seconds, NotRerun.ENVIRONMENT)
        try:
            bundle = read_bundle(job.folder / BUNDLE)
            if [r.target for r in bundle.reruns] != [job.sha] or bundle.left:
                raise BundleError(f"it holds other than the one claim {job.sha[:12]}")
            accepted = accept(self.project, bundle, (job.sha,))
        except AgoraError as exc:
            return Checked(job.sha, who, title, None, str(exc), None, seconds, NotRerun.ENVIRONMENT)
        if self.publishing and job.sha in self.verified:  # published meanwhile by another run of this clone
            why = "another run here published this account's verdict on it meanwhile"
            return Checked(job.sha, who, title, None, why, None, seconds, NotRerun.ENVIRONMENT)
        return publish_rerun(self.project, bundle.reruns[0], accepted, self.publishing)

    def _cancel_all(self) -> None:
        with suppress(SchedulerError):
            self.scheduler.cancel(list(self.running))
        for job in self.running.values():
            os.close(job.lock)
        self.running.clear()


@contextmanager
def _terminated_raises() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, `kill`) ends a run as Ctrl-C does, through its cleanup: its jobs are
    cancelled rather than left running for nobody (a job's bundle is read only by the run that submitted
    it). Main thread only, where Python runs signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _check_draft(project: Project, target) -> None:
    """The rules of a verification, before spending a job on it (as `ops.verify.verify` does)."""
    draft = _verification(project.account, target, Verdict.CONFIRMED, "draft", {}, {})
    try:
        check_contribution(draft, project.repo.contribution)
    except ContributionError as exc:
        raise ClaimError(str(exc)) from None


def _script(project: Project, sha: str, out: Path) -> str:
    rerun = [sys.executable, "-m", "git_agora.ops.rerun_job", sha, str(out)]
    return "\n".join(
        [
            "#!/bin/sh",
            f"# git agora: rerun {sha[:12]} in the sandbox; the verdict comes back as a bundle (no key here).",
            f"cd {shlex.quote(str(project.repo.worktree_path))} || exit 1",
            f"unset {KEY_VARIABLE}",
            f"AGORA_ACCOUNT={shlex.quote(project.account)}; export AGORA_ACCOUNT",
            f"exec {shlex.join(rerun)}",
            "",
        ]
    )
