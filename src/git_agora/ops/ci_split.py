"""The CI in two jobs (docs/ci.md, "The split job"): contributed code runs where no secret is.

`verify_only` (`git agora ci --verify-only --out DIR`) fetches, reruns in the sandbox the claims the CI
account has not verified yet, and writes each verdict as data (`ops.bundle`); it holds no key, signs
nothing and pushes nothing. `publish_bundle` (`git agora ci --publish DIR`) holds the key and runs no
contributed code (it never evaluates and needs no sandbox): it fetches, checks the bundle (`accept`),
then signs and publishes its verdicts, the witness record and the site, as the one-process `run_ci` does.

`accept` takes a bundle whole or not at all: every claim must be one of this account's pending claims
(`ops.ci.claims_to_verify`), every record exactly what a rerun under the policy in force for its target
records (its evaluator identity the policy's, its verdict and reason the ones the policy's judge gives
for its numbers, its fields the fixed ones), else BundleError and nothing is published. A verify job
that wrote one record it should not have is trusted for none.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, NamedTuple

from ..contribution import ContributionError, Verdict, check
from ..errors import AgoraError, ClaimError, ExitCode
from ..evaluate import Judgement, judge
from ..evaluate.export import tree_entries
from ..evaluate.identity import evaluator_paths
from ..evaluate.record import Reason, declared_output
from ..evaluate.run import EvalRun
from ..evaluate.sandbox import SandboxUnavailable, require_bwrap
from ..leaks import redact, secret_in
from ..project import Project
from ..records import RunRecord
from .bundle import HEADER, MAX_LINE, VERDICTS, Bundle, BundleError, Rerun, finite_number, read_bundle, write_bundle
from .ci import (
    Budget,
    Checked,
    CiReport,
    SandboxStopped,
    _check_counted,
    _pending,
    _shared,
    _verify_within,
    _witness,
    ci_site,
)
from .ci_summary import NotRerun
from .publish import publish
from .scorer_env import check_scorer_environment

JUDGED = frozenset({Reason.REPRODUCED, Reason.PARTLY_REPRODUCED, Reason.CONTRADICTS_CLAIM, Reason.NO_CLAIMED_METRIC})


def verify_only(
    project: Project,
    out: Path | str | None,
    budget: Budget | None = None,
    key_held: bool = False,
    scheduler: str | None = None,
    jobs: int = 1,
    scheduler_options: tuple[str, ...] = (),
    node_local_ok: bool = False,
) -> CiReport:
    """The verify half: fetch, rerun within `budget`, write the bundle into `out`. It refuses to start
    holding a key (`key_held`: AGORA_CI_KEY set or a key file given) and never reads one. Exit 5 before
    any rerun when readers would not count the account's verdicts (no CI account, or unpinned under
    `[ci] format = 2`: the key itself is the publish half's to check), 4 without a sandbox. With
    `scheduler`: each rerun is a job of it, `jobs` at once, and their one-claim bundles, each checked
    as the publish half checks it, make the one bundle written into `out` (`ops.rerun_jobs`)."""
    if key_held:
        raise AgoraError("--verify-only holds no key: unset AGORA_CI_KEY and drop --key-file (docs/ci.md)")
    if out is None:
        raise AgoraError("--verify-only needs --out DIR, the folder the verdict bundle goes into")
    from .indexing import FRAME_COLUMNS, load
    from .rerun_jobs import prepare, rerun_as_jobs
    from .standing import root_and_config
    from .sync import fetch

    if (Path(out) / HEADER).exists() or (Path(out) / VERDICTS).exists():
        raise AgoraError(f"{out} holds a bundle already: give --out an empty folder")
    work = None if scheduler is None else prepare(project, scheduler, jobs, node_local_ok)
    fetched = fetch(project)
    contributions = load(project, FRAME_COLUMNS).contributions
    root, config = root_and_config(project, contributions)
    _named(config, project.account)
    check_scorer_environment(project, config, contributions)  # before rerunning anything
    claims, budget = _pending(project, contributions, root), budget or Budget()
    try:
        if work is not None:
            on = (scheduler or "", jobs, scheduler_options, work)
            checked, left = rerun_as_jobs(project, claims, budget, *on, publishing=False)
        else:
            require_bwrap()
            checked, left = _verify_within(project, claims, budget, False)
    except SandboxUnavailable as exc:
        unverified = f"git agora ci verifies only in the sandbox: {exc.reason}"
        if isinstance(exc, SandboxStopped) and exc.checked:  # keep what was reached: the publish half can take it
            write_bundle(out, Bundle(project.account, project.setup, tuple(map(as_rerun, exc.checked)), exc.left))
            unverified += f"; the {len(exc.checked)} claim(s) reached before are in the bundle in {out}"
        raise AgoraError(unverified, ExitCode.UNVERIFIED) from None
    write_bundle(out, Bundle(project.account, project.setup, tuple(map(as_rerun, checked)), left))
    made = sum(c.verdict is not None for c in checked)
    note = f"wrote {made} verdict{'s' if made != 1 else ''} to {out}: `git agora ci --publish {out}` publishes them"
    return CiReport(project.account, fetched.remote, fetched.new_contributions, checked, left, notes=(note,))


def _named(config, account: str) -> None:
    """Exit 5 where no key could make this account's verdicts count (the key is checked when publishing)."""
    uncounted = "readers would not count this CI's verdicts: "
    if account not in config.ci_accounts:
        named = ", ".join(config.ci_accounts) or "none"
        raise AgoraError(
            f"{uncounted}{account} is not a CI account of this project ([ci] accounts: {named})", ExitCode.UNCOUNTED
        )
    if account not in config.ci_keys and config.ci_format >= 2:
        raise AgoraError(f"{uncounted}{account} has no key in [ci] keys under [ci] format 2", ExitCode.UNCOUNTED)


def as_rerun(checked: Checked) -> Rerun:
    """A claim the verify half took up, as its bundle holds it."""
    if checked.verdict is None:
        cause = (checked.cause or NotRerun.ENVIRONMENT).value
        line = redact(" ".join(checked.reason.split()))[:MAX_LINE]
        return Rerun(checked.target, None, line, None, cause, checked.seconds)
    record = checked.record
    return Rerun(checked.target, checked.verdict, str(record and record.reason), record, None, checked.seconds)


def publish_bundle(project: Project, folder: Path | str, site_dir: Path | str | None = None, key=None) -> CiReport:
    """The publish half (module docstring): fetch, check the key and the bundle, publish. Never
    evaluates: it needs no sandbox and runs nothing a contribution holds."""
    from .indexing import FRAME_COLUMNS, load
    from .standing import root_and_config
    from .sync import fetch

    if key is not None:
        project.use_signing_key(key)
    bundle = read_bundle(folder)  # its shape before anything else
    fetched = fetch(project)
    contributions = load(project, FRAME_COLUMNS).contributions
    root, config = root_and_config(project, contributions)
    _check_counted(project, config, project.account)
    accepted = accept(project, bundle, _pending(project, contributions, root))
    checked = [publish_rerun(project, rerun, accepted) for rerun in bundle.reruns]
    records, logs = _witness(project, contributions, project.account)
    nothing = not checked and not records and not bundle.left
    site, notes = ci_site(project, site_dir, ("nothing new since the last run: published nothing",) if nothing else ())
    new = fetched.new_contributions
    return CiReport(project.account, fetched.remote, new, tuple(checked), bundle.left, records, logs, site, notes)


class Accepted(NamedTuple):
    """A verdict of a checked bundle, as it will be published: under the metric of its target's policy."""

    judgement: Judgement
    record: RunRecord
    metric: str | None


def publish_rerun(project: Project, rerun: Rerun, accepted: dict[str, Accepted], publishing: bool = True) -> Checked:
    """One claim of an accepted bundle: its verdict signed and published (unless not `publishing`: then
    kept as data, with its record, for a bundle), or why it was not rerun."""
    from .verify import verification_of

    target = project.contribution(rerun.target)
    who, title = redact(target.account), redact(target.title)
    if rerun.verdict is None:
        cause = NotRerun(rerun.cause)
        return Checked(rerun.target, who, title, None, rerun.reason, None, rerun.seconds, cause)
    judgement, record, metric = accepted[rerun.target]
    if not publishing:
        return Checked(rerun.target, who, title, rerun.verdict, judgement.reason, None, rerun.seconds, None, record)
    verification = verification_of(project.account, target, judgement, record, metric)
    assert target.tree is not None
    published = _shared(publish(project, verification, target.tree))
    return Checked(rerun.target, who, title, rerun.verdict, judgement.reason, published.sha, rerun.seconds)


def accept(project: Project, bundle: Bundle, pending: tuple[str, ...]) -> dict[str, Accepted]:
    """Each verdict's judgement and record as the publish half will publish them, once the whole
    bundle is checked (module docstring); BundleError, naming the first problem, otherwise."""
    if bundle.account != project.account:
        raise BundleError(f"it was made as {bundle.account!r}, not as {project.account}")
    if bundle.setup != project.setup:
        raise BundleError(f"it was made for another project (setup {bundle.setup[:12]})")
    waiting = set(pending)
    accepted = {}
    for rerun in bundle.reruns:
        if rerun.target not in waiting:
            raise BundleError(f"{rerun.target[:12]} is not among {project.account}'s pending claims")
        if rerun.verdict is not None:
            accepted[rerun.target] = _accepted(project, rerun)
    return accepted


def _accepted(project: Project, rerun: Rerun) -> Accepted:
    from .verify import _verification, claimed_evaluator

    short = rerun.target[:12]
    target = project.contribution(rerun.target)
    policy = project.policy(rerun.target)
    config = policy.config
    record = rerun.record
    assert record is not None  # a verdict's, read whole by `bundle.read_bundle`
    try:
        code = Reason(record.reason)
    except ValueError:
        raise BundleError(f"{short}: {str(record.reason)[:40]!r} is not a fixed reason") from None
    if rerun.reason != code.value:
        raise BundleError(f"{short}: the verdict's reason is not its record's")
    fields = config.evaluation.declared_output
    reported = {config.metric, *fields}
    reproduced = record.reproduced or {}
    if not all(k in reported and finite_number(v) for k, v in reproduced.items()):
        raise BundleError(f"{short}: reproduced holds other than the setup's metric and fields, as numbers")
    run = EvalRun(code in JUDGED, reproduced, 0.0, None if code in JUDGED else code)
    judgement = judge(dict(target.metrics), run, config.tolerance, config.metric, fields)
    if judgement.verdict != rerun.verdict or judgement.code is not code:
        gives = f"{judgement.verdict} ({judgement.code.value})"
        raise BundleError(f"{short}: the policy's judge gives {gives} for its numbers")
    output = record.output
    if output is None or declared_output(output, fields) != output:
        raise BundleError(f"{short}: output holds other than the setup's declared fields")
    claimed_under = claimed_evaluator(target)
    identity = _identity(project, policy, record.evaluator, short)
    duration = record.duration_s
    if duration is None or not finite_number(duration) or duration < 0 or record.sandbox is not True:
        raise BundleError(f"{short}: duration_s or sandbox is not what a sandboxed rerun records")
    expected = RunRecord(
        claimed={name: value for name, value in judgement.claimed.items() if name in reported},
        reproduced=dict(judgement.reproduced),
        difference={k: round(v, 12) for k, v in judgement.differences.items()},
        tolerance=config.tolerance,
        reason=code.value,
        evaluator=identity,
        claimed_under_evaluator=claimed_under,
        same_evaluator=claimed_under == identity["sha256"] if claimed_under else None,
        output=output,
        hardware=_plain(record.hardware, short, "hardware"),
        duration_s=duration,
        exit_status=record.exit_status,
        sandbox=True,
        limits=_plain(record.limits, short, "limits"),
    )
    written, wanted = record.to_metadata(), expected.to_metadata()
    differs = sorted(k for k in wanted if wanted[k] != written[k])
    if differs:
        raise BundleError(f"{short}: {', '.join(differs)} is not what a rerun under its policy records")
    try:
        check(_verification(project.account, target, _verdict(judgement), "draft", {}, {}), project.repo.contribution)
    except ContributionError as exc:
        raise BundleError(f"{short}: {ClaimError(str(exc))}") from None
    return Accepted(judgement, expected, config.metric)


def _verdict(judgement: Judgement) -> Verdict:
    return Verdict(judgement.verdict)


def _identity(project: Project, policy, identity: Any, short: str) -> dict[str, Any]:
    """The bundle's evaluator identity, when it is the policy's: the commands and evaluator files of the
    policy (read from its tree, nothing run), each scorer package the policy names, as pinned where it
    pins one (`[eval] pins`), and a digest that is the digest of the rest."""
    spec = policy.config.evaluation
    if not isinstance(identity, dict) or set(identity) != {"commands", "files", "scorer", "sha256"}:
        raise BundleError(f"{short}: the evaluator identity is not one")
    commands = {k: v for k, v in (("command", spec.command), ("build", spec.build), ("score", spec.score)) if v}
    entries = tree_entries(project.repo, policy.tree, list(policy.protected)) if policy.protected else {}
    files = {path: entries[path][1] for path in evaluator_paths(entries, policy)}
    rest = {k: identity[k] for k in ("commands", "files", "scorer")}
    scorer = identity["scorer"]
    wrong = "the evaluator identity is not the policy's"
    if identity["commands"] != commands or identity["files"] != dict(sorted(files.items())):
        raise BundleError(f"{short}: {wrong} (its commands or evaluator files differ)")
    if not isinstance(scorer, dict) or set(scorer) != set(spec.scorer):
        raise BundleError(f"{short}: {wrong} (its scorer packages differ)")
    for name, found in scorer.items():
        if not isinstance(found, dict) or set(found) != {"version", "sha256"}:
            raise BundleError(f"{short}: {wrong} ({name})")
        pinned = spec.pins.get(name)
        if pinned is not None and found["sha256"] != pinned:
            raise BundleError(f"{short}: {wrong} ({name} is not the pinned one)")
        if not all(v is None or (isinstance(v, str) and len(v) <= 80 and v.isprintable()) for v in found.values()):
            raise BundleError(f"{short}: {wrong} ({name})")
    if identity["sha256"] != hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest():
        raise BundleError(f"{short}: {wrong} (its digest is not of its parts)")
    return identity


def _plain(value: Any, short: str, name: str, depth: int = 0) -> Any:
    """`value` when it is plain data: numbers, booleans, None, short printable words with no secret shape,
    and lists and tables of them, three deep at most."""
    if value is None or isinstance(value, bool) or finite_number(value):
        return value
    if isinstance(value, str) and len(value) <= 200 and value.isprintable() and secret_in(value) is None:
        return value
    if depth < 3 and isinstance(value, list) and len(value) <= 64:
        return [_plain(v, short, name, depth + 1) for v in value]
    if depth < 3 and isinstance(value, dict) and len(value) <= 64:
        return {_plain(k, short, name, 3): _plain(v, short, name, depth + 1) for k, v in value.items()}
    raise BundleError(f"{short}: {name} holds more than numbers and short words")
