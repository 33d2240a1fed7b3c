"""`ci`: one run of the project's CI as verifier, witness and publisher (docs/ci.md).

A run, as a CI account the current policy names (`[ci] accounts`), signing with a key held in memory:
1. fetch (the index is updated incrementally: a runner that keeps `.git/agora/index` reuses it);
2. verify, in the sandbox and within the budget, the claims the CI has not verified yet, the most
   consequential first (`claims_to_verify`); each verdict is published as it is made;
3. publish one witness record of the log tips (log commits) that moved since the CI's previous record
   (`log_tips`; several records when more than `TIPS_PER_RECORD` moved);
4. build the site into a folder, its cluster map included: the descriptions without a vector are
   embedded first (`ci_site`).

It fails (AgoraError) where it cannot start its job: not a CI account, a fetch or push that fails, and
no sandbox (exit 4, `ExitCode.UNVERIFIED`). A failed claim is a verdict, not a failure. A claim that cannot
be rerun is skipped, by its own fault (`ClaimError`) or by this runner's (any other reason: a scorer that
differs from the pins, a mount or a tool missing); one of the second kind makes the run's outcome
`CiOutcome.UNVERIFIED` (`CiReport.outcome`, `ops.ci_summary`) once it has published what it did. A run
that finds nothing new publishes nothing.

`verify_pending` is step 2 alone, for any account (`git agora verify --pending`): how a founder confirms
the work of a fleet of agents.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import WITNESS, Contribution
from ..errors import AgoraError, ClaimError, ExitCode
from ..evaluate.sandbox import SandboxUnavailable, require_bwrap
from ..identity.chain import ensure_pinned_identity
from ..identity.keys import SigningKey, held_key, same_key
from ..leaks import redact, secret_in
from ..project import Project
from ..records import RunRecord, WitnessRecord
from ..refs.names import REMOTES_PREFIX, ROOT
from .ci_summary import CiOutcome, CiSummary, NotRerun, summarise
from .publish import Published, publish
from .scorer_env import check_scorer_environment

if TYPE_CHECKING:
    from ..frontier.frame import Frame
    from ..frontier.root import Root

TIPS_PER_RECORD = 200  # about 60 bytes a tip: a record stays well within Agora-Meta's 16 KiB
LEADERS_FIRST = 10  # the best results are rerun before contested and most built-on ones


@dataclass(frozen=True)
class Budget:
    """How much one run may spend on reruns: evaluations and wall-clock minutes (None: no limit)."""

    max_evaluations: int | None = 10
    max_minutes: float | None = 30.0


@dataclass(frozen=True)
class Checked:
    """One claim the CI reran: its verdict (None when it could not be rerun, with why and by whose
    fault, `cause`) and the verification it published."""

    target: str
    account: str
    title: str
    verdict: str | None
    reason: str
    verification: str | None = None
    seconds: float = 0.0
    cause: NotRerun | None = None  # None: a verdict
    record: RunRecord | None = None  # the rerun record (`reproduce`'s), for a verdict bundle

    def to_dict(self) -> dict[str, Any]:
        shown = {k: v for k, v in self.__dict__.items() if k != "record"}
        return {**shown, "cause": self.cause.value if self.cause else None}


@dataclass(frozen=True)
class CiReport:
    account: str
    remote: str
    new_contributions: int
    checked: tuple[Checked, ...] = ()
    left: tuple[str, ...] = ()  # claims the budget left for the next run, most consequential first
    witness_records: tuple[str, ...] = ()
    witnessed_logs: int = 0  # account logs whose tips the records list
    site: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def published(self) -> bool:
        return bool(self.witness_records) or any(c.verification for c in self.checked)

    @property
    def summary(self) -> CiSummary:
        return summarise(self.checked, len(self.left), len(self.witness_records), self.witnessed_logs)

    @property
    def outcome(self) -> CiOutcome:
        return self.summary.outcome

    def to_dict(self) -> dict[str, Any]:
        summary = self.summary
        return {
            "outcome": summary.outcome.name.lower(),
            "exit_code": summary.exit_code,
            "exit_meaning": summary.outcome.meaning,
            "account": self.account,
            "remote": self.remote,
            "new_contributions": self.new_contributions,
            "checked": [c.to_dict() for c in self.checked],
            "left": list(self.left),
            "witness_records": list(self.witness_records),
            "witnessed_logs": self.witnessed_logs,
            "site": self.site,
            "published": self.published,
            "notes": list(self.notes),
            "summary": summary.to_dict(),
        }


KEY_VARIABLE = "AGORA_CI_KEY"


def ci_key(project: Project, key_file: Path | None, secret: str | None) -> SigningKey:
    """The CI account's key, held in memory (`identity.keys.held_key`): from `key_file` (outside the work
    tree: a key in it could be published), else from `secret`, the text of the AGORA_CI_KEY variable."""
    if key_file is not None:
        worktree = project.repo.worktree_path
        if worktree is not None and Path(key_file).resolve().is_relative_to(Path(worktree).resolve()):
            raise AgoraError(f"{key_file} is inside the work tree: keep the CI's key outside it (a CI secret)")
        return held_key(Path(key_file).read_text(errors="replace"), str(key_file))
    if secret:
        return held_key(secret, KEY_VARIABLE)
    raise AgoraError(f"no key for the CI account: pass --key-file PATH or set {KEY_VARIABLE} (a CI secret)")


def ci(
    project: Project,
    budget: Budget | None = None,
    site_dir: Path | str | None = None,
    *,
    key_file: Path | str | None = None,
    secret: str | None = None,
    verify_only: bool = False,
    out: Path | str | None = None,
    bundle: Path | str | None = None,
    scheduler: str | None = None,
    jobs: int = 1,
    scheduler_options: tuple[str, ...] = (),
    node_local_ok: bool = False,
) -> CiReport:
    """What `git agora ci` does (docs/ci.md): one run as verifier, witness and publisher (`run_ci`);
    with `verify_only`, the keyless half that writes its verdicts into `out`; with `bundle`, the half
    that checks and publishes the bundle in that folder (`ops.ci_split`). The key is `key_file`, else
    `secret` (the text the command reads from AGORA_CI_KEY; this reads no environment), held in memory."""
    budget, on = budget or Budget(), (scheduler, jobs, scheduler_options, node_local_ok)
    if verify_only:
        from .ci_split import verify_only as verify_half

        return verify_half(project, out, budget, key_file is not None or bool(secret), *on)
    key = ci_key(project, None if key_file is None else Path(key_file), secret)
    if bundle is not None:
        from .ci_split import publish_bundle

        return publish_bundle(project, bundle, site_dir, key)
    return run_ci(project, budget, site_dir, key, *on)


def run_ci(
    project: Project,
    budget: Budget = Budget(),
    site_dir: Path | str | None = None,
    key: SigningKey | None = None,
    scheduler: str | None = None,
    jobs: int = 1,
    scheduler_options: tuple[str, ...] = (),
    node_local_ok: bool = False,
) -> CiReport:
    """One CI run (module docstring). `key`: sign with it (`identity.keys.held_key`) instead of the
    account's key file; `site_dir`: where to build the site (None: no site). With `scheduler` ("slurm",
    "local"): each rerun is a job of it, `jobs` at once, that hands back a verdict bundle and never sees
    the key; this process checks, signs and publishes each (`ops.rerun_jobs`)."""
    from .indexing import FRAME_COLUMNS, load
    from .rerun_jobs import prepare, rerun_as_jobs
    from .standing import root_and_config
    from .sync import fetch

    if key is not None:
        project.use_signing_key(key)
    work = None if scheduler is None else prepare(project, scheduler, jobs, node_local_ok)
    fetched = fetch(project)
    account = project.account
    contributions = load(project, FRAME_COLUMNS).contributions
    root, config = root_and_config(project, contributions)
    _check_counted(project, config, account)
    check_scorer_environment(project, config, contributions)  # before rerunning anything
    try:
        claims = _pending(project, contributions, root)
        if work is not None:
            checked, left = rerun_as_jobs(project, claims, budget, scheduler or "", jobs, scheduler_options, work)
        else:
            require_bwrap()
            checked, left = _verify_within(project, claims, budget)
    except SandboxUnavailable as exc:  # this runner's: exit 4, as for any claim it leaves unverified
        message = f"git agora ci verifies only in the sandbox: {exc.reason}"
        raise AgoraError(message, ExitCode.UNVERIFIED) from None
    records, logs = _witness(project, contributions, account)
    nothing = not checked and not records and not left
    quiet: tuple[str, ...] = ("nothing new since the last run: published nothing",) if nothing else ()
    site, notes = ci_site(project, site_dir, quiet)
    return CiReport(account, fetched.remote, fetched.new_contributions, checked, left, records, logs, site, notes)


def ci_site(
    project: Project, site_dir: Path | str | None, notes: tuple[str, ...]
) -> tuple[str | None, tuple[str, ...]]:
    """Build the site into `site_dir` (None: no site), its cluster map included: first embed every
    description that has no vector yet (`ops.embedding.embed_everything`, with the model the policy's
    `[embeddings] model` names, else the default, which falls back to the offline hashing encoder where
    it cannot load), then build. The folder, and `notes` with what was embedded."""
    if site_dir is None:
        return None, notes
    from .embedding import embed_everything
    from .site import build_site

    embedded = embed_everything(project)
    if embedded.embedded:
        notes = (*notes, f"site: {embedded.describe()}")
    return str(build_site(project, site_dir).directory), notes


def _check_counted(project: Project, config, account: str) -> None:
    """Before rerunning anything: exit 5 (`ExitCode.UNCOUNTED`) when readers would not count this run's
    verdicts as the CI's: the account is no CI account of the current policy, its key is not the one the
    policy pins, or (no pin) it is unpinned under `[ci] format = 2`, or the identity this clone trusts
    for it announces another key. An unpinned account of an older policy is warned about."""
    from .standing import amendment_command

    key = project.signing_key.public
    line = " ".join(key.split()[:2])
    pinned = config.ci_keys.get(account)
    uncounted = "readers would not count this CI's verdicts: "
    if account not in config.ci_accounts:
        named = ", ".join(config.ci_accounts) or "none"
        raise AgoraError(
            f"{uncounted}{account} is not a CI account of this project ([ci] accounts: {named}); the setup's "
            f"account names it with its key in a policy amendment: {amendment_command(account, line)}",
            ExitCode.UNCOUNTED,
        )
    if pinned is not None and not same_key(pinned, key):
        raise AgoraError(
            f"{uncounted}this key is not the one the project's policy pins for {account} ([ci] keys): "
            "sign with that key",
            ExitCode.UNCOUNTED,
        )
    if pinned is not None:
        ensure_pinned_identity(project.repo, account, project.signing_key)
        return
    if config.ci_format >= 2:
        raise AgoraError(
            f"{uncounted}{account} has no key in [ci] keys, and under [ci] format 2 an unpinned CI account "
            f"is no CI: {amendment_command(account, line)}",
            ExitCode.UNCOUNTED,
        )
    from ..trust import trusted_keys
    from .standing import pinned_keys

    held = trusted_keys(project.repo, project.repo.refs_under(ROOT), pinned_keys(project)).get(account, ())
    if held and not any(same_key(k, key) for k in held):
        raise AgoraError(
            f"{uncounted}the identity of {account} here announces another key (someone published as "
            f"{account} first): pin the CI's key: {amendment_command(account, line)}",
            ExitCode.UNCOUNTED,
        )
    project.feedback.notice(
        f"warning: {account} has no pinned key: readers trust whichever identity for {account} they saw "
        f"first, and the next policy generation counts it as no CI: {amendment_command(account, line)}"
    )


@dataclass(frozen=True)
class PendingReport:
    """`verify --pending`: each rerun's verdict and the claims the budget left."""

    account: str
    checked: tuple[Checked, ...] = ()
    left: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"account": self.account, "checked": [c.to_dict() for c in self.checked], "left": list(self.left)}


def verify_pending(
    project: Project,
    budget: Budget = Budget(),
    scheduler: str | None = None,
    jobs: int = 1,
    scheduler_options: tuple[str, ...] = (),
    node_local_ok: bool = False,
) -> PendingReport:
    """The CI's verifying step without its witness, for any account: fetch, then rerun in the sandbox,
    within `budget`, the claims this account has not verified yet (`claims_to_verify`), publishing each
    verdict. How a founder confirms a fleet's work (`launch`): each result it confirms establishes the
    result's author, whose own verdicts then count (docs/agents.md). With `scheduler` ("slurm",
    "local"): each rerun is a job of it, `jobs` at once (`ops.rerun_jobs`)."""
    if scheduler is not None:
        from .rerun_jobs import verify_pending_on

        return verify_pending_on(project, budget, scheduler, jobs, scheduler_options, node_local_ok)
    from .indexing import FRAME_COLUMNS, load
    from .standing import reader_root
    from .sync import fetch

    fetch(project)
    contributions = load(project, FRAME_COLUMNS).contributions
    claims = _pending(project, contributions, reader_root(project, contributions))
    try:
        checked, left = _verify_within(project, claims, budget)
    except SandboxUnavailable as exc:
        raise AgoraError(f"git agora verify --pending verifies only in the sandbox: {exc.reason}") from None
    return PendingReport(project.account, checked, left)


def _pending(project: Project, contributions: pa.Table, root: Root) -> tuple[str, ...]:
    from ..frontier.analyze import AnalyzeConfig, frame_for

    frame = frame_for(contributions, AnalyzeConfig.from_project(project.config, root=root))
    return claims_to_verify(frame, project.account)


def claims_to_verify(frame: Frame, account: str) -> tuple[str, ...]:
    """The results in the current evaluator epoch that claim the metric, by another account, that
    `account` has not verified yet, each once: the leaders (best first), then contested ones and
    unverified ones with failed reruns that do not count yet (`verdict_rows.unsettled_failures`: however
    many), then the rest by follow-on work and evidence, then oldest first."""
    from ..frontier.evidence import verdicts_of
    from ..frontier.scored import in_epoch
    from ..frontier.verdict_rows import unsettled_failures
    from ..frontier.views import ranked_by_metric

    mine = np.asarray(pc.fill_null(pc.equal(frame.table["account"], account), False), dtype=bool)
    targets = pc.drop_null(frame.table["target"].filter(pa.array(frame.verification & mine)))
    done = np.zeros(frame.n, dtype=bool)
    found = frame.graph.lookup(targets)
    done[found[found >= 0]] = True
    claimed = ~np.isnan(frame.metric) & frame.buildable_kind
    nodes = np.flatnonzero(claimed & in_epoch(frame.table, frame.graph.root.epoch) & ~done & ~mine)
    rank = np.full(frame.n, LEADERS_FIRST, dtype=np.int64)
    leaders = ranked_by_metric(frame, np.flatnonzero(frame.scored))[:LEADERS_FIRST]
    rank[leaders] = np.arange(len(leaders))
    unsettled = (unsettled_failures(verdicts_of(frame.graph), frame.n) > 0) & (frame.status == "unverified")
    contested = ((frame.status == "contested") | unsettled).astype(np.int64)
    order = np.lexsort(
        (frame.timestamp[nodes], -frame.score[nodes], -frame.follow_ons[nodes], -contested[nodes], rank[nodes])
    )
    return tuple(frame.table["sha"].take(pa.array(nodes[order], pa.int64())).to_pylist())


def _verify_within(
    project: Project, claims: tuple[str, ...], budget: Budget, publish_verdicts: bool = True
) -> tuple[tuple[Checked, ...], tuple[str, ...]]:
    """Rerun `claims` in order until the budget is spent; publish each verdict (unless not
    `publish_verdicts`: the verify half of a split run keeps them as data). The sandbox failing to
    start ends the run (SandboxUnavailable, for the caller to say); a claim that cannot be rerun is
    reported and skipped, with whose fault it is: its own (`ClaimError`) or this runner's (any other)."""
    from .verify import verify

    started = time.monotonic()
    deadline = None if budget.max_minutes is None else started + budget.max_minutes * 60
    checked: list[Checked] = []
    for at, sha in enumerate(claims):
        spent = budget.max_evaluations is not None and len(checked) >= budget.max_evaluations
        if spent or (deadline is not None and time.monotonic() >= deadline):
            return tuple(checked), claims[at:]
        target = project.contribution(sha)
        who, title = redact(target.account), redact(target.title)  # a CI log may be public: no secret in it
        began = time.monotonic()
        project.feedback.notice(f"verifying {sha[:12]} ({who}: {title})")
        remaining = None if deadline is None else max(deadline - began, 1.0)
        timeout = None if remaining is None else min(remaining, project.policy(sha).config.evaluation.timeout)
        try:
            done = verify(project, sha, timeout=timeout, publish_verdict=publish_verdicts, sandbox=True)
        except SandboxUnavailable as exc:
            raise SandboxStopped(exc.reason, tuple(checked), claims[at:]) from None
        except AgoraError as exc:
            cause = NotRerun.CLAIM if isinstance(exc, ClaimError) else NotRerun.ENVIRONMENT
            seconds = round(time.monotonic() - began, 3)
            checked.append(Checked(sha, who, title, None, str(exc), None, seconds, cause))
            continue
        published = _shared(done.published).sha if publish_verdicts else None
        seconds = round(time.monotonic() - began, 3)
        reason = done.judgement.reason
        checked.append(Checked(sha, who, title, done.verdict, reason, published, seconds, None, done.record))
    return tuple(checked), ()


class SandboxStopped(SandboxUnavailable):
    """The sandbox failed to start at a claim: `checked` holds what the run reached before it (each
    verdict already published, or kept as data by a split run), `left` the claims from that one on."""

    def __init__(self, reason: str, checked: tuple[Checked, ...] = (), left: tuple[str, ...] = ()):
        super().__init__(reason)
        self.checked, self.left = checked, left

    def __reduce__(self):
        return type(self), (self.reason, self.checked, self.left)


def _shared(published: Published | None) -> Published:
    """A published contribution the remote has; else the run failed at its job."""
    assert published is not None
    if not published.shared:
        raise AgoraError(
            f"could not push {published.sha[:12]} ({published.push.outcome.value}: {published.push.detail}); "
            "it is kept in the local log: this account needs write access to refs/agora/* (a CI job: grant it)"
        )
    return published


def log_tips(project: Project) -> dict[str, str]:
    """Each account's log tip as the remote has it (the remote-tracking log refs a fetch just set)."""
    prefix = f"{REMOTES_PREFIX}{project.remote}/log/"
    return {ref.removeprefix(prefix): sha for ref, sha in sorted(project.repo.refs_under(prefix).items())}


def _listed(project: Project, contributions: pa.Table, account: str) -> dict[str, str]:
    """What `account`'s witness records list, merged in time order (the newest listing of a log wins)."""
    from .witness import ci_records, record_tips

    listed: dict[str, str] = {}
    for tips in record_tips(project, ci_records(contributions, frozenset({account}))):
        listed.update(tips)
    return listed


def _witness(project: Project, contributions: pa.Table, account: str) -> tuple[tuple[str, ...], int]:
    """Publish witness records of the tips that moved (module docstring); their shas and how many logs."""
    listed = _listed(project, contributions, account)
    tips = log_tips(project)
    moved = {name: sha for name, sha in tips.items() if name != account and listed.get(name) != sha}
    unlisted = sorted(name for name in moved if secret_in(name) is not None)
    if unlisted:  # a record lists account names: one shaped like a token would stop every record
        project.feedback.notice(f"{len(unlisted)} account log(s) named like a secret are not witnessed")
        moved = {name: sha for name, sha in moved.items() if name not in unlisted}
    if not moved:
        return (), 0
    setup = project.repo.commit_info(project.setup)
    assert setup is not None
    names = sorted(moved)
    records = []
    seen_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for start in range(0, len(names), TIPS_PER_RECORD):
        chunk = {name: moved[name] for name in names[start : start + TIPS_PER_RECORD]}
        count = f"{len(chunk)} account log{'s' if len(chunk) != 1 else ''}"
        record = Contribution(
            account=account,
            tags=(WITNESS,),
            description=f"Witness: the tips of {count} as {account} saw them at {seen_at}",
            parents=(project.setup,),
            metadata=WitnessRecord(chunk).to_metadata(),
        )
        records.append(_shared(publish(project, record, setup.tree)).sha)
    return tuple(records), len(moved)
