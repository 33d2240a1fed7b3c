"""`verify --pending --scheduler slurm --jobs N`: each pending claim rerun by a job of the scheduler.

Each job reruns one claim in the sandbox and writes the verdict as data (`ops.rerun_job`,
`ops.rerun_record`); this process, which holds the account's key, checks the record, signs it and
publishes it. At most `jobs` run at once. Each claim is held while its job runs by an exclusive lock
under `.git/agora/reruns/locks/` (flock: released when this process ends, however it ends), and
before submitting and again before publishing this account's log is read for a verdict on it: two
such commands at once in one clone never publish two verdicts on one claim. A job that ends without a
record (cancelled, killed at its time, its node lost) publishes nothing: its claim stays pending for
the next run. The job folders (script, logs, record) stay under `.git/agora/reruns/` on the clone,
which the nodes must share.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..contribution import ContributionError, Verdict
from ..contribution import check as check_contribution
from ..errors import AgoraError, ClaimError
from ..leaks import redact
from ..project import Project
from ..refs.names import LogRef
from ..supervise.scheduler import LOCAL, Job, SchedulerError, scheduler
from .ci import Budget, Checked, PendingReport, _pending, _shared
from .ci_summary import NotRerun
from .launch_jobs import check_shared
from .publish import publish
from .rerun_record import FILE, check, read
from .verify import _verification

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
    from ..evaluate.sandbox import SandboxUnavailable, require_bwrap
    from .indexing import FRAME_COLUMNS, load
    from .standing import reader_root
    from .sync import fetch

    if jobs < 1:
        raise AgoraError(f"--jobs must be at least 1 (got {jobs})")
    try:
        require_bwrap()
    except SandboxUnavailable as exc:
        raise AgoraError(f"git agora verify --pending verifies only in the sandbox: {exc.reason}") from None
    project.signing_key  # noqa: B018  (no key, no run: found before anything is submitted)
    work = Path(project.repo.agora_path) / "reruns"
    if scheduler_name != LOCAL:
        check_shared(work.parent, node_local_ok)
    (work / "locks").mkdir(parents=True, exist_ok=True)
    fetch(project)
    contributions = load(project, FRAME_COLUMNS).contributions
    claims = list(_pending(project, contributions, reader_root(project, contributions)))
    return _Run(project, budget, scheduler_name, jobs, options, work).run(claims)


class _Run:
    def __init__(self, project, budget, scheduler_name, jobs, options, work) -> None:
        self.project, self.budget, self.jobs, self.options, self.work = project, budget, jobs, options, work
        self.scheduler = scheduler(scheduler_name)
        self.verified = _Verified(project)
        self.checked: list[Checked] = []
        self.left: list[str] = []
        self.running: dict[str, _Running] = {}
        self.submitted = 0

    def run(self, claims: list[str]) -> PendingReport:
        deadline = None if self.budget.max_minutes is None else time.monotonic() + self.budget.max_minutes * 60
        queue = list(claims)
        try:
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
        except BaseException:
            self._cancel_all()
            raise
        return PendingReport(self.project.account, tuple(self.checked), tuple(self.left))

    def _start(self, sha: str) -> None:
        lock = _try_lock(self.work / "locks" / f"{sha}.{self.project.account}.lock")
        if lock is None:  # another run of this clone reruns it now: it publishes, or leaves it pending
            self.project.feedback.notice(f"{sha[:12]} is being rerun by another run here: left to it")
            return
        if sha in self.verified:
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
        folder = self.work / f"{sha[:12]}-{int(time.time() * 1000)}-{os.getpid()}"
        folder.mkdir(parents=True)
        timeout = float(self.project.policy(sha).config.evaluation.timeout)
        script = folder / "job.sh"
        script.write_text(_script(self.project, sha, folder / FILE, timeout))
        job = Job(
            name=f"agora-rerun-{sha[:12]}",
            script=str(script),
            cwd=str(self.project.repo.worktree_path),
            stdout=str(folder / "stdout.log"),
            stderr=str(folder / "stderr.log"),
            time_seconds=timeout + JOB_MARGIN_SECONDS,
            options=self.options,
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
                self.checked.append(self._publish(job, id, state.raw))
            finally:
                os.close(job.lock)

    def _publish(self, job: _Running, id: str, raw: str) -> Checked:
        target = self.project.contribution(job.sha)
        who, title = redact(target.account), redact(target.title)
        seconds = round(time.monotonic() - job.began, 3)
        try:
            record = read(job.folder / FILE)
            if record is None:
                why = f"its job {id} ended ({raw}) without a verdict: nothing published, the next run reruns it"
                return Checked(job.sha, who, title, None, why, None, seconds, NotRerun.ENVIRONMENT)
            check(record, job.sha, evaluator_here(self.project, job.sha))
        except AgoraError as exc:
            return Checked(job.sha, who, title, None, str(exc), None, seconds, NotRerun.ENVIRONMENT)
        if job.sha in self.verified:  # published meanwhile by another run of this clone
            why = "another run here published this account's verdict on it meanwhile"
            return Checked(job.sha, who, title, None, why, None, seconds, NotRerun.ENVIRONMENT)
        assert target.tree is not None
        verification = _verification(
            self.project.account, target, Verdict(record.verdict), record.reason, record.metadata, record.metrics
        )
        published = _shared(publish(self.project, verification, target.tree))
        return Checked(job.sha, who, title, record.verdict, record.reason, published.sha, seconds)

    def _cancel_all(self) -> None:
        try:
            self.scheduler.cancel(list(self.running))
        except SchedulerError:
            pass
        for job in self.running.values():
            os.close(job.lock)
        self.running.clear()


def evaluator_here(project: Project, sha: str) -> str:
    """The identity (SHA-256) the evaluator of the policy in force for `sha` has here."""
    from ..evaluate.identity import policy_identity

    return str(policy_identity(project.repo, project.policy(sha))["sha256"])


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


def _script(project: Project, sha: str, out: Path, timeout: float) -> str:
    rerun = [sys.executable, "-m", "git_agora.ops.rerun_job", sha, str(out), f"{timeout:g}"]
    return "\n".join(
        [
            "#!/bin/sh",
            f"# git agora verify --pending: rerun {sha[:12]} in the sandbox; the verdict comes back as data.",
            f"cd {shlex.quote(str(project.repo.worktree_path))} || exit 1",
            f"exec {shlex.join(rerun)}",
            "",
        ]
    )
