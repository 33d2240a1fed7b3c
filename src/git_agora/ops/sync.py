"""Exchanging contributions with the remote: `fetch` every account log (and update the index),
`sync` (push what is queued, then fetch)."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..contribution import ContributionError, parse_cross_ref
from ..errors import AgoraError
from ..feedback import git_phases
from ..locks import acquire, release
from ..project import CompetingSetups, Project
from ..refs.quarantine import RewrittenLog
from ..refs.sync import FetchResult, PushResult, RemoteError, pack_refs_when_loose, push_log, write_commit_graph
from ..refs.sync import fetch as fetch_logs
from ..refs.xref import CrossRefFetch, fetch_cross_refs
from ..trust import record_tampering


@dataclass(frozen=True)
class Fetched:
    remote: str
    new_contributions: int
    updated_logs: tuple[str, ...]
    rewritten: tuple[RewrittenLog, ...]
    cross_refs: tuple[CrossRefFetch, ...] = ()

    def to_dict(self) -> dict:
        return {
            "remote": self.remote,
            "new_contributions": self.new_contributions,
            "updated_logs": list(self.updated_logs),
            "rewritten_logs": [r._asdict() for r in self.rewritten],
            "cross_refs": [{"ref": f.ref.text, "ok": f.ok, "detail": f.detail} for f in self.cross_refs],
        }


@dataclass(frozen=True)
class Synced:
    push: PushResult
    fetch: Fetched | None  # None when the push failed (nothing was fetched)

    def to_dict(self) -> dict:
        return {
            "push": self.push.outcome.value,
            "queued": self.push.queued,
            "detail": self.push.detail,
            "fetch": self.fetch.to_dict() if self.fetch else None,
        }


def fetch(project: Project, cross_refs: bool = False) -> Fetched:
    """Fetch every account log of the project's remote and update the index. With `cross_refs`, also
    fetch (read-only) the commits that contributions cite from other projects. Concurrent fetches in one
    clone take turns."""
    if project.remote is None:
        raise AgoraError("no remote to fetch from: add one (`git remote add origin URL`) or name it")
    with _fetch_lock(project):
        return _fetch_locked(project, project.remote, cross_refs)


FETCH_LOCK = "fetch.lock"


@contextmanager
def _fetch_lock(project: Project) -> Iterator[None]:
    """One fetch at a time in a clone (two would race on the same remote-tracking refs); the second
    says so and waits for the first."""

    path = Path(project.repo.agora_path, FETCH_LOCK)
    try:
        fd = acquire(path, exclusive=True, on_wait=lambda: project.feedback.notice(WAITING))
    except OSError as exc:
        raise AgoraError(f"cannot lock {exc.filename or path}: {exc.strerror or exc}") from None
    try:
        yield
    finally:
        release(fd)


WAITING = "another git agora fetch is running in this clone: waiting for it to finish"


def _fetch_locked(project: Project, remote: str, cross_refs: bool) -> Fetched:
    loading: list[threading.Thread] = []  # the index update after the transfer needs them: loaded beside it
    try:
        return _fetch_and_index(project, remote, cross_refs, lambda: loading.append(_import_meanwhile(INDEX_MODULES)))
    finally:
        for thread in loading:
            thread.join()  # never left importing while the interpreter exits


def _fetch_and_index(project: Project, remote: str, cross_refs: bool, on_moved: Callable[[], object]) -> Fetched:
    try:
        with git_phases(project.feedback) as on_progress:
            result: FetchResult = fetch_logs(project.repo, remote, on_progress, on_moved, write_graph=False)
    except RemoteError as exc:
        raise AgoraError(str(exc)) from None
    record_tampering(project.repo, list(result.rewritten))
    for rewritten in result.rewritten:
        project.feedback.notice(rewritten.describe())
    for note in result.notes:
        project.feedback.notice(note)
    with ThreadPoolExecutor(max_workers=1) as aside:  # git keeps its files current while the index is updated
        graph = aside.submit(write_commit_graph, project.repo) if result.updated_logs else None
        packed = aside.submit(pack_refs_when_loose, project.repo) if result.updated_logs else None
        try:
            indexed = _indexed(project)
        finally:
            graph_note = graph.result() if graph is not None else None
            if packed is not None:
                packed.result()
    if graph_note:
        project.feedback.notice(graph_note)
    fetched_refs: tuple[CrossRefFetch, ...] = ()
    if indexed and cross_refs:
        fetched_refs = _fetch_cross_refs(project)
    return Fetched(result.remote, result.new_contributions, result.updated_logs, result.rewritten, fetched_refs)


BLAS_THREADS = "OPENBLAS_NUM_THREADS"


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """For a process that only fetches (`git agora fetch`, `sync`): numpy, when the index update loads
    it, starts its BLAS with one thread. At load OpenBLAS starts a thread per core that spins for work
    (about 0.1 s of a core), work a fetch never gives it; on two cores it took that time from git and
    the update (+1 fetch at 1M: 0.64 -> 0.58 s). A process that goes on to multiply matrices (`ci`'s
    cluster map) keeps them: it does not ask. A setting of the user's is left alone, as is numpy loaded
    before (OpenBLAS reads the variable when it loads); the variable is gone again afterwards, so no
    later child process inherits it, and it is set only where no other thread runs (a library caller's
    thread may start a child meanwhile: training code that must keep its BLAS threads)."""
    if BLAS_THREADS in os.environ or threading.active_count() > 1:
        yield
        return
    os.environ[BLAS_THREADS] = "1"
    try:
        yield
    finally:
        os.environ.pop(BLAS_THREADS, None)


INDEX_MODULES = (
    "git_agora.index.store",
    "git_agora.ops.standing",
    "tomllib",  # the project's settings, read again by the update (9 ms)
    "dateutil.relativedelta",  # pyarrow's first conversion of Python values looks for it (19 ms), if installed
    "numpy.ma",  # `pa.array` of a numpy array asks whether it is a masked one
    "sshsig",  # the signatures of signed commits
)


def _import_meanwhile(modules: tuple[str, ...]) -> threading.Thread:
    """Import `modules` on a thread while this one waits for git (a large clone's refs moved: the index
    will be updated): pyarrow and numpy load in about the time a +1 fetch transfers (at 1M contributions,
    idle: 0.56 -> 0.42 s a fetch), and a thread waiting on a process holds no lock. An import that fails
    there fails again, and is reported, where the module is used. The caller joins the thread."""

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 (the caller's own import reports it; one not installed is not needed)
                continue

    thread = threading.Thread(target=load, name="agora-import", daemon=True)
    thread.start()
    return thread


def sync(project: Project) -> Synced:
    """Send contributions queued by earlier failed pushes, then fetch everyone's."""

    project.enable_signing()  # a re-appended queue is signed too
    pushed = push_log(project.repo, project.account, project.remote)
    if pushed.outcome.queued:
        return Synced(pushed, None)
    fetched = fetch(project)
    if any(r.account == project.account for r in fetched.rewritten):  # the remote lost our log: restore it
        project.feedback.notice(
            f"the remote's log of {project.account} was rewritten or deleted: publishing ours again"
        )
        pushed = push_log(project.repo, project.account, project.remote)
    return Synced(pushed, fetched)


def _indexed(project: Project) -> bool:
    """Index what the fetch brought (when the tips moved); False when no setup has come yet (nothing to
    index) or when the index found competing setups (said in one line)."""
    from .indexing import refresh_if_stale

    if not project.assume_setup():
        return False
    try:
        refresh_if_stale(project)
    except CompetingSetups as exc:
        project.feedback.notice(str(exc))
        return False
    return True


def _fetch_cross_refs(project: Project) -> tuple[CrossRefFetch, ...]:
    from .indexing import load

    index = load(project, ("sha", "valid"))
    valid = set(index.contributions.filter(index.contributions["valid"])["sha"].to_pylist())
    refs = []
    for sha, url, target in zip(*(index.cross_refs[c].to_pylist() for c in ("sha", "url", "target"))):
        try:
            if sha in valid:
                refs.append(parse_cross_ref(f"{url}#{target}"))
        except ContributionError:
            continue  # an invalid contribution's reference: never fetched
    return tuple(fetch_cross_refs(project.repo, refs))
