"""Publishing: validate, make the contribution durable locally (commit + log), then push.

`publish_worktree` publishes the work tree as a code-bearing contribution (`git agora push`); `post`
publishes a light one on top of existing contributions (insight, hypothesis, report, verification).
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from ..contribution import (
    DOTGIT_REASON,
    POLICY,
    RESERVED_TAGS,
    RESULT,
    VERIFICATION,
    Contribution,
    ContributionError,
    Verdict,
    check,
    parse_cross_ref,
    parse_metric,
)
from ..errors import AgoraError, ExitCode
from ..lookalike import skeleton
from ..project import Project
from ..refs.sync import PushOutcome, PushResult, push_log
from ..refs.upkeep import maintain_when_loose


class Published(NamedTuple):
    """A contribution written locally; `push` says whether the remote has it (else it is queued)."""

    sha: str
    push: PushResult
    parents: tuple[str, ...] = ()
    measured: tuple[str, float, float | None] | None = None  # push --check: (metric, measured, claimed)

    @property
    def shared(self) -> bool:
        return self.push.outcome in (PushOutcome.PUSHED, PushOutcome.UP_TO_DATE)

    @property
    def exit_code(self) -> int:
        """QUEUED when a configured remote does not have the contribution yet."""
        outcome = self.push.outcome
        return ExitCode.QUEUED if outcome.queued and outcome is not PushOutcome.NO_REMOTE else ExitCode.OK

    def to_dict(self) -> dict:
        return {
            "sha": self.sha,
            "parents": list(self.parents),
            "push": self.push.outcome.value,
            "queued": self.push.queued,
            "detail": self.push.detail,
            **({"measured": {self.measured[0]: self.measured[1]}} if self.measured else {}),
        }


def publish(project: Project, contribution: Contribution, tree: str, timestamp: int | None = None) -> Published:
    """Write the canonical commit (dated `timestamp`, default now or just after the account's previous
    contribution: `Repository.next_timestamp`) and append it to the account log before any network I/O,
    so a failed or interrupted push loses nothing: the log is pushed now or by the next sync."""
    _validate(project, contribution)
    _refuse_case_twin(project, contribution.account)
    _refuse_secrets(contribution)
    _refuse_dotgit(project, contribution, tree)
    _refuse_forge_files(project, contribution, tree)
    _check_membership(project, contribution)
    project.enable_signing()
    when = project.repo.next_timestamp(contribution.account) if timestamp is None else timestamp
    sha = project.repo.write_contribution(contribution, tree, when)
    project.repo.append_to_log(contribution.account, [sha])
    pushed = push_log(project.repo, contribution.account, project.remote)
    maintain_when_loose(project.repo.git, project.repo.objects_path)  # its commits were written loose
    return Published(sha, pushed, contribution.parents)


def _refuse_case_twin(project: Project, account: str) -> None:
    """A new account whose name differs from a known one only by case is refused: their refs would be
    one file on a case-insensitive filesystem. Checked when the account has no log here yet."""
    from ..refs.names import LogRef

    if project.repo.ref(LogRef(account).local) is not None:
        return
    known = {ref.rsplit("/", 1)[1] for ref in project.repo.refs_under("refs/agora/") if "/log/" in ref}
    twins = sorted(name for name in known if name != account and name.lower() == account.lower())
    if twins:
        raise AgoraError(
            f"account {account} differs from the existing account {twins[0]} only by case (their refs would "
            "collide on a case-insensitive filesystem): choose another name; nothing was published"
        )
    alike = sorted(name for name in known if name != account and skeleton(name) == skeleton(account))
    if alike:
        project.feedback.notice(f"account {account} looks like the existing account {alike[0]}: readers will mark it")


def _refuse_secrets(contribution: Contribution) -> None:
    """Nothing that looks like a key or a token is published (`leaks`: a second line of defence)."""
    from ..leaks import secret_in

    kind = secret_in(contribution.to_message())
    if kind is not None:
        raise AgoraError(f"the contribution's text holds what looks like {kind}: remove it; nothing was published")


def _refuse_dotgit(project: Project, contribution: Contribution, tree: str) -> None:
    """A tree that holds a `.git` path is refused (readers would mark it invalid: git cannot check it out)."""
    first = project.repo.commit_info(contribution.parents[0]) if contribution.parents else None
    if first is not None and first.tree == tree:
        return  # the parent's tree, unchanged: not judged again
    from ..refs.trees import dotgit_paths

    found = dotgit_paths(project.repo.common_path, [tree]).get(tree)
    if found is not None:
        raise AgoraError(f"the tree holds {found!r}: {DOTGIT_REASON}; nothing was published")


# what a forge runs: workflows, with the CI's secrets (.gitlab holds the file .gitlab-ci.yml includes)
FORGE_FILES = (".github", ".gitea", ".gitlab-ci.yml", ".gitlab")


def _refuse_forge_files(project: Project, contribution: Contribution, tree: str) -> None:
    """A contribution that adds or changes a forge's CI files (`FORGE_FILES`) relative to its first
    parent is refused, unless the policy in force allows them (`[ci] forge_files = true`): the CI's
    workflow lives on the forge's default branch, never in the record (docs/ci.md). A setup, and a tree
    that keeps its parent's, are not affected."""
    first = project.repo.commit_info(contribution.parents[0]) if contribution.parents else None
    if first is None or first.tree == tree:
        return
    changed = project.repo.git.run("diff-tree", "-r", "--name-only", first.tree, tree, "--", *FORGE_FILES).split()
    if not changed:
        return
    if project.policy(contribution.parents[0]).config.sections.get("ci", {}).get("forge_files") is True:
        return
    raise AgoraError(
        f"the tree changes {changed[0]}{f' and {len(changed) - 1} more' if len(changed) > 1 else ''}, a forge's "
        "CI file: the CI's workflow lives on the forge's default branch (`git agora ci --init`), never in a "
        "contribution; remove it (or the policy allows them: [ci] forge_files = true); nothing was published"
    )


def _check_membership(project: Project, contribution: Contribution) -> None:
    """In a closed project (the policy in force lists `[identity] members`), only members publish, each
    with the key the policy gives them."""
    if not contribution.parents:
        return
    members = project.policy_members(contribution.parents[0])
    if not members:
        return
    if contribution.account not in members:
        raise AgoraError(
            f"{contribution.account} is not a member of this project: the setup's account can add you "
            "with a policy amendment ([identity] members in agora.toml)"
        )
    if str(members[contribution.account]).split()[:2] != project.signing_key.public.split()[:2]:
        raise AgoraError(f"your signing key is not the one the policy lists for {contribution.account}")


def _validate(project: Project, contribution: Contribution) -> None:
    try:
        check(contribution, project.repo.contribution)
    except ContributionError as exc:
        raise AgoraError(str(exc)) from None


def resolve_parents(project: Project, revs: Iterable[str]) -> tuple[str, ...]:
    """Full shas of the named contributions, in order, without repeats."""
    return tuple(dict.fromkeys(project.contribution_sha(rev) for rev in revs))


class Push(NamedTuple):
    """What `publish_worktree` publishes: the work tree with this description and these tags, on top of
    the checked-out contribution and `parents`. With `check_claim`, a clean export is evaluated first and
    the measured metric recorded (a claim the run contradicts is refused). A result must change the tree
    of the contribution it builds on, unless `rerun` says it re-measures it (recorded as `rerun: true`).
    `prediction`, the band the metric was expected in (`LOW..HIGH` or a pair), is recorded in Agora-Meta
    (`with_prediction`). The check runs in the sandbox unless `sandbox` is False (None:
    `ops.evaluate.sandbox_choice`). `new_tags` and `new_metrics` are names meant though close to known
    ones (`_refuse_typos`); a new tag is added to `tags`. `evaluated` (an `ops.evaluate.Evaluated` of this
    very tree, full and under the policy that judges it) stands for the check's evaluation: a caller that
    has just run it publishes its run record without evaluating twice."""

    description: str
    tags: Iterable[str] = (RESULT,)
    parents: Iterable[str] = ()
    metrics: Mapping[str, float] | None = None
    meta: Mapping[str, Any] | None = None
    check_claim: bool = False
    cross_refs: Iterable[str] = ()
    rerun: bool = False
    prediction: str | Sequence[float] | None = None
    sandbox: bool | None = None
    new_tags: Iterable[str] = ()
    new_metrics: Iterable[str] = ()
    evaluated: Any = None


def publish_worktree(project: Project, push: Push) -> Published:
    """Publish the work tree (tracked and untracked, non-ignored files) as `push` says. A rerun of a
    result scored under an earlier evaluator (`ops.standing`) re-measures its code under the current
    one: the new result's first parent is the current policy and its second the old result, and its tree
    the old one's with the current policy's `agora.toml` and evaluator files (written into the work tree
    too, when HEAD follows). Two publications of one tree on one parent by one account, at the same
    time, publish one (`_refuse_published_twice`)."""
    from ..workspace import advance_head, check_size, snapshot, with_files_of, write_files

    _ = project.account  # who publishes is the first thing to know
    base = project.base
    draft = _worktree_draft(project, base, push)
    with snapshot(project.repo) as snap:
        check_size(project.repo, snap.tree, project.config.max_file_bytes)
        _check_rerun(project, draft.parents[0], snap.tree, draft.tags, push.rerun)
        moved = _onto_current_epoch(project, base) if push.rerun else None  # an earlier epoch's result
        work = snap if moved is None else with_files_of(project.repo, snap, moved[0].tree, moved[1])
        onto = draft.parents if moved is None else tuple(dict.fromkeys((moved[0].sha, *draft.parents)))
        policy = _policy_for_new_tree(project, onto[0], work.tree, draft.tags)
        once = RESULT in draft.tags and not push.rerun  # a result of one tree on one parent is published once
        if once:
            _refuse_published_twice(project, onto[0], work.tree)  # before the work, then under the lock
        claimed = draft.metrics.get(policy.config.metric) if policy.config.metric else None
        checked = push.check_claim or push.evaluated is not None
        measured, check = (
            _checked_claim(project, policy, work.tree, dict(draft.metrics), push.sandbox, push.evaluated)
            if checked
            else (draft.metrics, None)
        )
        metadata = {**draft.metadata, "check": check} if checked else draft.metadata
        contribution = draft._replace(parents=onto, metrics=measured, metadata=metadata)
        with _publish_lock(project):
            if once:
                _refuse_published_twice(project, onto[0], work.tree)
            published = publish(project, contribution, work.tree)
        metric = policy.config.metric
        if "check" in metadata and metric in measured:
            published = published._replace(measured=(metric, measured[metric], claimed))
        _remember_tags(project, draft.tags)
        if advance_head(project.repo, base, published.sha, work) and moved is not None:
            write_files(project.repo, moved[1])
    project.set_base(published.sha)
    return published


def _worktree_draft(project: Project, base: str, push: Push) -> Contribution:
    """The contribution `push` describes on `base`, checked by the protocol's rules and for typos
    before any work (its tree is the snapshot's)."""
    tags = tuple(dict.fromkeys((*push.tags, *push.new_tags)))
    metadata = with_prediction(push.meta, push.prediction) | ({"rerun": True} if push.rerun else {})
    draft = Contribution(
        account=project.account,
        tags=tags,
        description=push.description,
        parents=resolve_parents(project, [base, *push.parents]),
        metrics=dict(push.metrics or {}),
        metadata=metadata,
        cross_refs=_cross_refs(push.cross_refs),
    )
    _validate(project, draft)
    _refuse_typos(project, base, tags, draft.metrics, push.new_tags, push.new_metrics, not push.check_claim)
    return draft


PUBLISH_LOCK = "publish.lock"


def _publish_lock(project: Project):
    """One publication at a time in this clone (`.git/agora/publish.lock`), so the re-check of
    `_refuse_published_twice` and the write it guards are one step."""
    from pathlib import Path

    from ..locks import file_lock

    return file_lock(Path(project.repo.agora_path, PUBLISH_LOCK), exclusive=True)


def _refuse_published_twice(project: Project, parent: str, tree: str) -> None:
    """Refuse a result this account has already published with this tree on `parent` (a second `push`
    of one tree, say two `push --check` started together, the first of which finished while the second
    evaluated)."""
    from ..refs.names import LogRef

    tip = project.repo.ref(LogRef(project.account).local)
    if tip is None:
        return
    for entry in reversed(project.repo.log_entries(tip)[-RECENT_ENTRIES:]):
        info = project.repo.commit_info(entry)
        if info is not None and info.tree == tree and info.parents[:1] == (parent,):
            raise AgoraError(
                f"this tree is already published by {project.account} on {parent[:12]}: {entry} "
                "(another push of it finished first); nothing published"
            )


RECENT_ENTRIES = 200  # how far back in the account's log a duplicate publication is looked for


def _onto_current_epoch(project: Project, base: str):
    """When `base` was scored under another evaluator than the current policy's
    (`ops.standing.current_policy`): that policy, and the paths either policy fixes (what a rerun of
    `base` takes from it). Else None. An amendment is its own policy in force, so the index's policy
    column names every candidate: only their rows are read, none without an amendment."""
    import pyarrow.compute as pc

    from ..policy import load_policy
    from .indexing import load, load_rows
    from .standing import ROOT_COLUMNS, current_policy

    policies = pc.unique(load(project, ("policy",)).contributions["policy"]).drop_null().to_pylist()
    if set(policies) <= {project.setup}:
        return None
    candidates = load_rows(project, ROOT_COLUMNS, [project.setup, *policies])
    current = current_policy(project.setup, candidates.filter(pc.fill_null(candidates["valid"], False)))
    old = project.policy(base)
    if current == old.sha:
        return None
    policy = load_policy(project.repo, current)
    return None if policy.evaluator_key == old.evaluator_key else (policy, {*old.protected, *policy.protected})


def _policy_for_new_tree(project: Project, base: str, tree: str, tags: tuple[str, ...]):
    """The policy that judges a new tree built on `base`; refuses a tree that changes agora.toml or an
    evaluator file, unless this is a policy amendment by the setup's account (then its own policy)."""
    from ..config import ConfigError
    from ..policy import changed_protected_files, load_policy_of_tree

    policy = project.policy(base)
    changed = changed_protected_files(project.repo, tree, policy)
    setup_account = project.contribution(project.setup).account
    if POLICY in tags:
        if project.account != setup_account:
            raise AgoraError(f"only the setup's account ({setup_account}) may publish a policy amendment")
        try:
            amended = load_policy_of_tree(project.repo, tree)
        except ConfigError as exc:
            raise AgoraError(f"the amended policy: {exc}") from None
        problem = amended.config.unpinned_ci_problem()
        if problem:
            raise AgoraError(f"the amended policy: {problem}")
        return amended
    if changed:
        raise AgoraError(
            f"this tree changes {', '.join(changed)}, which the project's policy fixes: restore "
            f"{'it' if len(changed) == 1 else 'them'} (git checkout {base[:12]} -- {' '.join(changed)}), or ask "
            f"{setup_account} for a policy amendment"
        )
    return policy


def _check_rerun(project: Project, parent: str, tree: str, tags: tuple[str, ...], rerun: bool) -> None:
    info = project.repo.commit_info(parent)
    assert info is not None
    if rerun and info.tree != tree:
        raise AgoraError(f"--rerun, but the work tree differs from {parent[:12]}'s: publish it as a change instead")
    if not rerun and RESULT in tags and info.tree == tree:
        raise AgoraError(
            f"nothing changed: the work tree equals {parent[:12]}'s; pass --rerun if this result re-measures it"
        )


def _checked_claim(
    project: Project, policy, tree: str, claimed: dict[str, float], sandbox: bool | None, evaluated: Any = None
) -> tuple[dict[str, float], dict]:
    """Evaluate the tree (or take `evaluated`, a run of it: `_given_evaluation`); fill in the metric;
    refuse a claim the run contradicts. Returns the metrics and what to record (`Evaluation.record`:
    numbers and fixed words, never the evaluator's free text)."""
    from ..evaluate import evaluate_tree
    from .evaluate import sandbox_choice

    if evaluated is not None:
        evaluation = _given_evaluation(project, policy, tree, evaluated)
    else:
        sandboxed = sandbox_choice(project, sandbox)
        evaluation = evaluate_tree(project.repo, policy, tree, feedback=project.feedback, sandbox=sandboxed)
    run, config = evaluation.run, policy.config
    if not run.ok:
        raise AgoraError(f"push --check: {run.error}; nothing published")
    metrics = dict(claimed)
    if config.metric:
        measured = run.metrics[config.metric]
        if config.metric in claimed and abs(claimed[config.metric] - measured) > config.tolerance + 1e-12:
            raise AgoraError(
                f"push --check: you claim {config.metric}={claimed[config.metric]:.6g} but a clean run measured "
                f"{measured:.6g} (tolerance {config.tolerance:g}); nothing published"
            )
        metrics[config.metric] = measured
    from ..records import CheckRecord

    ran = evaluation.record(config.evaluation, config.metric)  # a published claim ran to the end: no reason
    check = CheckRecord(
        ran["measured"], ran["evaluator"], ran["output"], ran["duration_s"], ran["sandbox"], ran["limits"]
    )
    return metrics, check.to_metadata()


def _given_evaluation(project: Project, policy, tree: str, evaluated: Any):
    """The `Evaluation` behind `evaluated` (an `ops.evaluate.Evaluated`), when it is a full run of `tree`
    under `policy`'s evaluator; refused otherwise (its record would describe another run)."""
    from ..evaluate.identity import policy_identity
    from ..evaluate.run import Evaluation

    if evaluated.tree != tree:
        raise AgoraError("the given evaluation is of another tree than the one published; nothing published")
    if evaluated.quick:
        raise AgoraError("a quick run is not comparable: it cannot back a result; nothing published")
    if evaluated.evaluator.get("sha256") != policy_identity(project.repo, policy).get("sha256"):
        raise AgoraError("the given evaluation ran another evaluator than the project's; nothing published")
    return Evaluation(evaluated.run, evaluated.evaluator, False, evaluated.sandbox, evaluated.limits or {})


def post(
    project: Project,
    description: str,
    tags: Iterable[str],
    parents: Iterable[str] = (),
    targets: Iterable[str] = (),
    verdict: str | None = None,
    metrics: Mapping[str, float] | None = None,
    meta: Mapping[str, Any] | None = None,
    cross_refs: Iterable[str] = (),
    prediction: str | Sequence[float] | None = None,
    timestamp: int | None = None,
    new_tags: Iterable[str] = (),
    new_metrics: Iterable[str] = (),
) -> Published:
    """Publish a light contribution (the first parent's tree) on top of `parents` (default: the
    checked-out contribution), dated `timestamp` (default now). A target or verdict makes it a
    verification of that target; `prediction`, `new_tags` and `new_metrics` as in `publish_worktree`."""
    metadata = with_prediction(meta, prediction)
    tag_list = list(dict.fromkeys((*tags, *new_tags)))
    target_shas = tuple(project.contribution_sha(rev) for rev in targets)
    if (target_shas or verdict) and VERIFICATION not in tag_list:
        tag_list.insert(0, VERIFICATION)
    target = target_shas[0] if target_shas else None
    parent_shas = resolve_parents(project, [*parents, *target_shas[:1]] or [project.base])
    try:
        contribution = Contribution(
            account=project.account,
            tags=tuple(tag_list),
            description=description,
            parents=parent_shas,
            metrics=dict(metrics or {}),
            metadata=metadata,
            target=target,
            extra_targets=target_shas[1:],
            verdict=Verdict(verdict) if verdict else None,
            cross_refs=_cross_refs(cross_refs),
        )
    except ValueError as exc:
        raise AgoraError(str(exc)) from None
    _refuse_typos(project, parent_shas[0], contribution.tags, contribution.metrics, new_tags, new_metrics)
    first = project.repo.commit_info(parent_shas[0])
    assert first is not None
    published = publish(project, contribution, first.tree, timestamp)
    _remember_tags(project, contribution.tags)
    return published


def _refuse_typos(
    project: Project,
    parent: str,
    tags: Iterable[str],
    metrics: Mapping[str, float],
    new_tags: Iterable[str],
    new_metrics: Iterable[str],
    notice_missing: bool = True,
) -> None:
    """Refuse a tag or metric name that looks like a typo of a known one (`ops.names`), unless meant;
    a result without the project's metric gets a notice. The policy in force for `parent` (its
    agora.toml) is read only for a tag that is not reserved, or when there are metrics or a result."""
    tags = tuple(tags)
    if set(tags) <= RESERVED_TAGS and not metrics and RESULT not in tags:
        return  # a plain post: nothing to read, nothing more to import
    from .names import refuse_mistyped_metrics, refuse_mistyped_tags

    refuse_mistyped_tags(project, tags, set(new_tags), lambda: project.policy(parent).config.tag_weights)
    if not metrics and RESULT not in tags:
        return
    config = project.policy(parent).config
    fields = config.evaluation.declared_output
    refuse_mistyped_metrics(metrics, set(new_metrics), config.metric, fields)
    if notice_missing and RESULT in tags and config.metric and config.metric not in metrics:
        project.feedback.notice(
            f"this result carries no {config.metric} (the project's metric): readers cannot rank it; "
            f"measure it with push --check, or give --metric {config.metric}=VALUE"
        )


def _remember_tags(project: Project, tags: Iterable[str]) -> None:
    """A published tag that is not reserved joins the kept list of used tags (`ops.names`)."""
    if not set(tags) <= RESERVED_TAGS:
        from .names import remember_tags

        remember_tags(project, tags)


def with_prediction(meta: Mapping[str, Any] | None, prediction: str | Sequence[float] | None) -> dict[str, Any]:
    """`meta` with the predicted band under `prediction` (`frontier.bands`' rule: two finite
    numbers, low <= high); a band that does not parse, or a second, different one in `meta`, is refused."""
    metadata = dict(meta or {})
    if prediction is None and "prediction" not in metadata:  # frontier.bands.PREDICTION
        return metadata
    from ..frontier.bands import PREDICTION, as_band, parse_band

    if PREDICTION in metadata and as_band(metadata[PREDICTION]) is None:
        shown = json.dumps(metadata[PREDICTION], default=str)
        raise AgoraError(f"--meta prediction={shown} is not a band [LOW, HIGH] with LOW <= HIGH; nothing published")
    if prediction is None:
        return metadata
    try:
        band = parse_band(prediction) if isinstance(prediction, str) else as_band(prediction)
    except ValueError as exc:
        raise AgoraError(f"--predict {exc}; nothing published") from None
    if band is None:
        raise AgoraError(f"--predict {prediction!r} is not a band (LOW, HIGH) with LOW <= HIGH; nothing published")
    if PREDICTION in metadata and as_band(metadata[PREDICTION]) != band:
        raise AgoraError("two different predictions (--predict and --meta prediction): give one")
    metadata[PREDICTION] = list(band)
    return metadata


def read_record(source: str, text: str) -> dict[str, Any]:
    """The JSON object of a contribution record read from `source` (for the error message)."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AgoraError(f"{source} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(record, dict):
        raise AgoraError(f"{source}: a contribution record is a JSON object")
    return record


def record_fields(project: Project, record: Mapping[str, Any]) -> dict[str, Any]:
    """The paper's minimal contribution record (Appendix B) as `post` arguments:
    {agent_id, parent_hashes, tags, description, value: {metric_value, ...free keys}, target, verdict}."""
    agent = record.get("agent_id")
    if agent is not None and project.account_option is None and not project.configured_account:
        project.account_option = str(agent)
    if agent is not None and str(agent) != project.account:
        raise AgoraError(f"the record is for agent {agent!r} but you publish as {project.account!r}")
    value = record.get("value") or {}
    if not isinstance(value, dict):
        raise AgoraError("the record's value must be a JSON object")
    metrics: dict[str, float] = {}
    meta: dict[str, Any] = {}
    for key, item in value.items():
        if key == "metric_value":
            metrics[project.config.metric or "metric"] = _number(item)
        else:
            meta[key] = json.loads(json.dumps(item))
    return {
        "description": record.get("description"),
        "tags": tuple(record.get("tags") or ()),
        "parents": tuple(record.get("parent_hashes") or ()),
        "metrics": metrics,
        "meta": meta,
        "targets": (record["target"],) if record.get("target") else (),
        "verdict": record.get("verdict"),
    }


def _number(value: Any) -> float:
    try:
        return parse_metric(f"metric={value}")[1]
    except ContributionError as exc:
        raise AgoraError(f"metric_value: {exc}") from None


def _cross_refs(refs: Iterable[str]) -> tuple[str, ...]:
    try:
        return tuple(parse_cross_ref(ref).text for ref in refs)
    except ContributionError as exc:
        raise AgoraError(str(exc)) from None
