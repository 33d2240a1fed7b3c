"""`clone`: join an existing project. A new repository whose origin is the project's remote, every
account log fetched, the setup found and pinned, the current best result checked out, the account
remembered. A URL that holds no Agora project leaves nothing behind."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import AgoraError
from ..feedback import Feedback
from ..project import SETUP_CONFIG_KEY, Project
from ..refs.git import Git
from ..refs.names import RefNameError, check_account, fetch_refspec
from ..refs.sync import RemoteError
from ..refs.sync import fetch as fetch_logs
from .checked_best import best_picks, unchecked_note
from .checkout import checkout

REMOTE = "origin"


@dataclass(frozen=True)
class Cloned:
    directory: Path
    url: str
    setup: str  # the pinned setup (`git config agora.setup`)
    checked_out: str  # the current best result, or the setup when nothing is scored yet
    title: str
    best: bool  # whether `checked_out` is the best result (else: the setup)
    metric: str | None  # the project's primary metric, and the checked-out result's value of it
    value: float | None
    contributions: int  # valid contributions in the index
    accounts: int
    account: str | None  # remembered in `git config agora.account`
    status: str | None = None  # the checked-out result's status as readers show it ("unchecked", ...)
    note: str | None = None  # `checked_best.unchecked_note`: the best is unchecked, and what to do
    best_result: dict | None = None  # the best result (`checked_best.Pick`) when --checked took another

    def to_dict(self) -> dict:
        return {**self.__dict__, "directory": str(self.directory)}


def clone(
    url: str,
    directory: Path | str | None = None,
    setup: str | None = None,
    account: str | None = None,
    feedback: Feedback | None = None,
    checked: bool = False,
) -> Cloned:
    """Clone the Agora project at `url` into `directory` (default: named after the URL, as `git clone`
    does). With `setup`, the project must have that setup (a sha or a unique prefix), which is pinned
    whatever else the remote holds; otherwise its setup root is pinned. Checks out the current best
    result (the setup when nothing is scored), or with `checked` the best run-backed one when the best
    is unchecked (`checked_best`), and remembers `account`."""

    if account is not None:
        try:
            check_account(account)
        except RefNameError as exc:
            raise AgoraError(str(exc)) from None
    target = Path(directory) if directory is not None else Path(default_directory(url))
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise AgoraError(f"{target} already exists and is not an empty directory")
    created = not target.exists()
    try:
        return _clone(_absolute(url), url, target, setup, account, feedback or Feedback(), checked)
    except BaseException:
        _remove(target, created)
        raise


def default_directory(url: str) -> str:
    """The directory `git clone URL` would make: the last path component without `.git`."""
    name = re.split(r"[/:\\]", url.rstrip("/\\"))[-1]
    name = name[: -len(".git")] if name.endswith(".git") else name
    if not name or name in (".", ".."):
        raise AgoraError(f"cannot name a directory after {url!r}: give one (git agora clone URL DIR)")
    return name


def _absolute(url: str) -> str:
    """A local path is made absolute: the remote is added from inside the new directory."""
    return str(Path(url).resolve()) if "://" not in url and os.path.exists(url) else url


def _clone(
    url: str,
    shown_url: str,
    target: Path,
    setup: str | None,
    account: str | None,
    feedback: Feedback,
    checked: bool = False,
) -> Cloned:
    from .indexing import FRAME_COLUMNS, load

    target.mkdir(parents=True, exist_ok=True)
    git = Git(target)
    git.run("init", "-q")
    git.run("remote", "add", REMOTE, url)
    git.run("config", "--add", f"remote.{REMOTE}.fetch", fetch_refspec(REMOTE))  # a plain `git fetch` too
    project = Project.open(target, account, REMOTE, feedback)
    try:
        fetch_logs(project.repo, REMOTE)
    except RemoteError as exc:
        raise AgoraError(f"{shown_url}: {exc}") from None
    pinned = _setup(project, shown_url, setup)
    git.config_set(SETUP_CONFIG_KEY, pinned)
    if account is not None:
        git.config_set("agora.account", account)
    project = Project.open(target, account, REMOTE, feedback)
    index = load(project, FRAME_COLUMNS)
    sha, title, value, status, note, best_result = None, "", None, None, None, None
    picks = best_picks(project, index.contributions)
    if picks is not None:
        chosen = picks.chosen(checked)
        sha, title, value, status = chosen.sha, chosen.title, chosen.metric, chosen.status
        note = unchecked_note(picks, chosen, project.config.metric)
        best_result = None if chosen is picks.best else picks.best.to_dict()
    checkout(project, sha or pinned)
    valid = index.contributions.filter(index.contributions["valid"])
    return Cloned(
        directory=target.resolve(),
        url=shown_url,
        setup=pinned,
        checked_out=sha or pinned,
        title=title if sha else project.contribution(pinned).title,
        best=sha is not None,
        metric=project.config.metric,
        value=value,
        contributions=valid.num_rows,
        accounts=len(set(valid["account"].to_pylist())),
        account=account,
        status=status,
        note=note,
        best_result=best_result,
    )


def _setup(project: Project, url: str, wanted: str | None) -> str:
    found = project.find_setup()
    if found is None:
        raise AgoraError(f"{url} has no Agora project (no setup found)")
    if wanted is None:
        return found
    sha = project.repo.resolve(wanted)
    candidate = project.repo.contribution(sha) if sha else None
    tips = list(project.repo.git.for_each_ref("refs/agora/").values())
    reachable = sha is not None and any(project.repo.git.is_ancestor(sha, tip) for tip in tips)
    if candidate is None or not candidate.is_setup or not reachable:
        raise AgoraError(f"{url} has no setup {wanted} (its setup is {found[:12]}): refusing to pin another project")
    assert sha is not None
    return sha


def _remove(target: Path, created: bool) -> None:
    """Leave nothing behind: the directory made, or what was put in the empty one given."""
    if created:
        shutil.rmtree(target, ignore_errors=True)
    elif target.is_dir():
        for child in target.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
