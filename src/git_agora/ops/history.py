"""Reading the record: one contribution (`show`), the list (`log`), where a result came from
(`lineage`) and the statistics a paper about the run reports (`stats`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..contribution import POLICY, Contribution, identity_mismatches, parse_cross_ref
from ..errors import AgoraError
from ..frontier.comparable import differences, measured_under, warning
from ..leaks import SECRET_MARK, redact, redact_data, secret_in
from ..project import Project
from ..records import CheckRecord, RunRecord

if TYPE_CHECKING:
    from ..frontier.lineage import Lineage
    from ..frontier.stats import GraphStats
    from ..frontier.verdict_rows import VerdictRow


@dataclass(frozen=True)
class Reference:
    """A parent or a cross-project reference, with what is known of it locally."""

    sha: str
    account: str | None  # None: not a contribution held here
    title: str | None
    url: str | None = None  # cross-project references only

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Evidence:
    """A contribution's evidence as `show` gives it: its row of `frontier.evidence.EVIDENCE`."""

    score: float
    children: int
    cross_children: int
    descendants: int  # n(v), its follow-ons
    status: str | None  # unverified, confirmed, partial, contested, failed, ...
    confirmations: int
    partials: int
    failures: int
    weightless: bool | None  # a verification whose verdict weighs nothing
    checked: bool | None = None  # a result (not a verdict): whether it carries its run record (`frontier.checked`)

    def to_dict(self) -> dict[str, Any]:
        shown = dict(self.__dict__)
        return shown if self.checked is not None else {k: v for k, v in shown.items() if k != "checked"}


@dataclass(frozen=True)
class Shown:
    contribution: Contribution
    evidence: Evidence | None  # None: the commit is rejected
    parents: tuple[Reference, ...]
    cross_refs: tuple[Reference, ...] = field(default=())
    evaluator_note: str | None = None  # set when the claim was made under another evaluator identity
    best: str | None = None  # the best result it was compared with ([eval] comparable_on), if any
    incomparable: tuple[Any, ...] = ()  # `frontier.comparable.Difference`s between it and the best
    run_notes: tuple[str, ...] = ()  # how its evaluation ran: unsandboxed, or a setup's sandbox settings
    witness_time: int | None = None  # when the project's CI first saw it (`ops.witness`), None if it did not
    verdicts: tuple[VerdictRow, ...] = ()  # every verdict on it, newest first, counting or not (`verdict_rows`)
    unsettled_failures: int = 0  # failed reruns on it that do not count yet (accounts without standing)

    @property
    def comparability_warning(self) -> str | None:

        return warning(f"this result and the best ({(self.best or '')[:12]})", self.incomparable)

    def to_dict(self) -> dict:
        c = self.contribution
        return {
            "sha": c.sha,
            "account": c.account,
            "timestamp": c.timestamp,
            "title": c.title,
            "description": c.description,
            "tags": list(c.tags),
            "metrics": dict(c.metrics),
            "metadata": dict(c.metadata),
            "parents": list(c.parents),
            "target": c.target,
            "verdict": c.verdict.value if c.verdict else None,
            "tree": c.tree,
            "cross_refs": list(c.cross_refs),
            "cross_ref_titles": [r.to_dict() for r in self.cross_refs],
            "evidence": self.evidence.to_dict() if self.evidence else None,
            "evaluator_note": self.evaluator_note,
            "run_notes": list(self.run_notes),
            "compared_with_best": self.best,
            "incomparable": [d.to_dict() for d in self.incomparable],
            "witness_time": self.witness_time,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "unsettled_failures": self.unsettled_failures,
        }


def show(project: Project, rev: str) -> Shown:
    """One contribution with its evidence score, verification status, parents and cited commits."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..followons_cache import cached_counter
    from ..frontier.checked import run_backed
    from ..frontier.evidence import EVIDENCE, current_verdicts, evidence_columns
    from ..frontier.graph import build_graph
    from ..frontier.verdict_rows import unsettled_note
    from .indexing import FRAME_COLUMNS, load
    from .standing import account_key_notes, root_and_config

    c = project.contribution(rev)
    contributions = load(project, FRAME_COLUMNS).contributions
    root, policy = root_and_config(project, contributions)
    graph = build_graph(contributions, root)
    node = int(graph.lookup(pa.array([c.sha], pa.string()))[0]) if c.sha else -1
    verdicts = current_verdicts(graph)
    columns = evidence_columns(graph, project.config.tag_weights, cached_counter(project.repo), verdicts)
    table = pa.table(columns, schema=EVIDENCE)
    rows = table.filter(pc.equal(table["sha"], c.sha)).to_pylist()
    score = Evidence(**{k: v for k, v in rows[0].items() if k != "sha"}) if rows else None
    if score is not None and c.metrics and not c.is_verification:
        score = replace(score, checked=run_backed(c.metadata))  # `frontier.checked`: a usability signal
    parents = tuple(_reference(project, sha) for sha in c.parents)
    cited = tuple(_reference(project, ref.sha, ref.url) for ref in map(parse_cross_ref, c.cross_refs))
    best, incomparable = _against_best(project, c, contributions, table, root) if score else (None, ())
    notes = (
        _unchecked_notes(score)
        + _run_notes(project, c)
        + _weight_notes(verdicts, c, node)
        + _look_alike_notes(contributions, c)
    )
    notes += _identity_notes(project, c) + account_key_notes(project, policy, c.account)
    witnessed = graph.table["witness_time"][node].as_py() if node >= 0 else None
    notes += _witness_notes(root, witnessed) + _secret_notes(c)
    received, unsettled = _verdicts_on(graph, verdicts, node)
    notes += tuple(filter(None, [unsettled_note(unsettled, c.sha or "")]))
    evaluator = _evaluator_note(project, c)
    return Shown(
        _readable(c), score, parents, cited, evaluator, best, incomparable, notes, witnessed, received, unsettled
    )


def _verdicts_on(graph, verdicts, node: int) -> tuple[tuple[VerdictRow, ...], int]:
    """Every verdict on `node` (newest first, counting or not) and its failed reruns that do not count yet."""
    from ..frontier.verdict_rows import unsettled_failures, verdict_rows

    if node < 0:
        return (), 0
    rows = tuple(verdict_rows(graph, verdicts, [node]).get(node, ()))
    return rows, int(unsettled_failures(verdicts, graph.n)[node])


def _readable(c: Contribution) -> Contribution:
    """What readers are shown of `c`: each secret-shaped part of its text redacted (`leaks.redact`),
    never republished (a terminal may be a public CI log, JSON may go to an agent that posts it)."""
    return c._replace(
        account=redact(c.account),
        description=redact(c.description),
        metrics={redact(name): value for name, value in c.metrics.items()},
        metadata=redact_data(c.metadata),
        meta_text=None if c.meta_text is None else redact(c.meta_text),
    )


def _secret_notes(c: Contribution) -> tuple[str, ...]:
    """The mark of a contribution whose text looks like a secret (a writer would have refused it)."""
    meta = c.meta_text if c.meta_text is not None else json.dumps(c.metadata, default=str)
    text = "\n".join([c.account, c.description, *c.metrics, meta])
    kind = secret_in(text)
    return (f"{SECRET_MARK}: what looks like {kind} is shown redacted",) if kind else ()


def _witness_notes(root, witnessed: int | None) -> tuple[str, ...]:
    """When the project's CI first saw it; said only in a project whose CI witnesses."""
    if root.witnessed is None:
        return ()
    if witnessed is None:
        return ("not witnessed by the project's CI yet: its priority rests on its claimed time",)
    return (f"witnessed by the project's CI at {datetime.fromtimestamp(witnessed, UTC):%Y-%m-%d %H:%M:%S} UTC",)


def _identity_notes(project: Project, c: Contribution) -> tuple[str, ...]:
    """A format 1 commit whose Git author or committer is not its account's `ACCOUNT <ACCOUNT@agora>`
    (git-agora writes exactly that) is flagged: plain `git log` names someone else than the account that
    counts. From format 2 on, such a commit is invalid, with the same words as its reason."""
    info = project.repo.commit_info(c.sha) if c.sha and c.format == "1" else None
    if info is None:
        return ()
    return tuple(identity_mismatches(c.account, info.author, info.committer))


def _look_alike_notes(contributions, c: Contribution) -> tuple[str, ...]:
    from .standing import account_look_alikes

    earlier = account_look_alikes(contributions).get(c.account)
    return (f"account {c.account} looks like {earlier}, an earlier account",) if earlier else ()


def _weight_notes(verdicts, c: Contribution, node: int) -> tuple[str, ...]:
    """Why a verdict weighs nothing (replaced, an opinion, from an account with no confirmed work)."""
    if c.verdict is None or c.sha is None:
        return ()
    at = (verdicts.node == node).nonzero()[0]
    if not len(at):
        return ("this verdict weighs nothing: it does not verify a valid contribution of another account",)
    why = verdicts.weightless()[int(at[0])]
    return (f"this verdict weighs nothing: {why}",) if why else ()


def _unchecked_notes(score: Evidence | None) -> tuple[str, ...]:
    """An unverified result without the run record of `push --check` says so (`frontier.checked`)."""
    if not score or score.checked is not False or score.status != "unverified":
        return ()
    return ("unchecked: no run record (published without `push --check`); nobody has reproduced it",)


def _run_notes(project: Project, c: Contribution) -> tuple[str, ...]:
    """A verdict or checked claim that ran unsandboxed says so; a setup or amendment says how its
    evaluations run (network, limits)."""
    record = RunRecord.read(c.metadata) if c.is_verification else CheckRecord.read(c.metadata)
    sandboxed = record.sandbox if record else None
    notes = []
    if sandboxed is False:
        what = "this verdict" if c.is_verification else "this claim's check"
        notes.append(f"{what} ran unsandboxed: its author ran the code as itself, with its files and network")
    if c.sha is not None and (c.is_setup or POLICY in c.tags):
        spec = project.policy_config(c.sha).evaluation
        if spec.configured:
            limits = ", ".join(f"{k} {v}" for k, v in spec.limits.dump().items())
            network = "network allowed ([eval] network = true)" if spec.network else "no network"
            notes.append(f"evaluations run in the sandbox: {network}; {limits}")
    return tuple(notes)


def _evaluator_note(project: Project, c: Contribution) -> str | None:
    """Whether the claim's recorded evaluator identity differs from the one its policy gives today."""
    from ..evaluate.identity import policy_identity
    from .verify import claimed_evaluator

    claimed = claimed_evaluator(c)
    if claimed is None or c.sha is None:
        return None
    now = str(policy_identity(project.repo, project.policy(c.sha))["sha256"])
    if claimed == now:
        return None
    return f"claimed under evaluator {claimed[:12]}, the project's evaluator is now {now[:12]}: verify before comparing"


def _against_best(project: Project, c: Contribution, contributions, evidence_table, root) -> tuple[str | None, tuple]:
    """The best result and the `[eval] comparable_on` fields on which `c` was measured differently
    from it (both read from the recorded evaluator outputs); (None, ()) when there is nothing to compare."""
    import pyarrow.compute as pc

    from ..frontier.frame import build_frame
    from ..frontier.views import best

    config = project.config
    fields = config.evaluation.comparable_on
    if not fields or not c.metrics:
        return None, ()
    frame = build_frame(
        contributions, evidence_table, direction=config.direction, tolerance=config.tolerance, weights=None, root=root
    )
    top = best(frame)
    if top is None or top.sha == c.sha:
        return None, ()
    theirs = frame.table.filter(pc.equal(frame.table["sha"], top.sha))["metadata"].to_pylist()[0]
    return top.sha, differences([measured_under(c.metadata, fields), measured_under(theirs, fields)], fields)


def _reference(project: Project, sha: str, url: str | None = None) -> Reference:
    found = project.repo.contribution(sha)
    if found is not None:
        return Reference(sha, redact(found.account), redact(found.title), url)
    info = project.repo.commit_info(sha)
    return Reference(sha, None, redact(info.message.split("\n", 1)[0]) if info else None, url)


@dataclass(frozen=True)
class LogEntry:
    sha: str
    account: str | None
    timestamp: int
    title: str
    tags: tuple[str, ...]
    metrics: dict[str, float]
    parents: tuple[str, ...]
    target: str | None
    verdict: str | None
    reasons: tuple[str, ...]  # why it is rejected; empty when valid
    looks_like: str | None = None  # an earlier account this one's name looks like (`lookalike`)

    def to_dict(self) -> dict:
        return {**self.__dict__, "tags": list(self.tags), "parents": list(self.parents), "reasons": list(self.reasons)}


def log(
    project: Project, accounts: Iterable[str] = (), tags: Iterable[str] = (), limit: int = 50, rejected: bool = False
) -> list[LogEntry]:
    """Contributions newest first (`rejected`: the invalid commits and why), filtered by account and tag."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .indexing import LOG_COLUMNS, load
    from .standing import account_look_alikes

    table = load(project, LOG_COLUMNS).contributions
    marked = account_look_alikes(table)
    table = table.filter(pc.invert(table["valid"]) if rejected else table["valid"])
    if accounts := list(accounts):
        table = table.filter(pc.is_in(table["account"], value_set=pa.array(accounts, pa.string())))
    if wanted := set(tags):
        mask = [bool(wanted.intersection(t)) for t in table["tags"].to_pylist()]
        table = table.filter(pa.array(mask, pa.bool_()))
    table = table.sort_by([("timestamp", "descending"), ("sha", "descending")]).slice(0, limit)
    columns = ["sha", "account", "timestamp", "title", "tags", "metrics", "parents", "target", "verdict", "reasons"]
    return [
        LogEntry(
            r["sha"],
            r["account"],
            r["timestamp"],
            r["title"],
            tuple(r["tags"]),
            dict(r["metrics"] or []),
            tuple(r["parents"]),
            r["target"],
            r["verdict"],
            tuple(r["reasons"]),
            marked.get(r["account"]),
        )
        for r in table.select(columns).to_pylist()
    ]


def lineage(project: Project, rev: str) -> Lineage:
    """Ancestry of a contribution (`frontier.lineage.Lineage`): size, accounts, cross-account edges,
    reproduced ancestors and the milestone path of new bests."""
    from ..frontier.lineage import lineage as ancestry
    from .indexing import GRAPH_COLUMNS, load
    from .standing import reader_root

    target = project.contribution_sha(rev)
    config = project.config
    contributions = load(project, GRAPH_COLUMNS).contributions
    root = reader_root(project, contributions)
    try:
        return ancestry(contributions, target, direction=config.direction, tolerance=config.tolerance, root=root)
    except KeyError:
        raise AgoraError(f"{rev} is not a valid contribution (see `git agora log --rejected`)") from None


def titles(project: Project) -> dict[str, str]:
    """Title of every indexed commit, by sha (for rendering lineage and stats)."""
    from .indexing import load

    table = load(project, ("sha", "title")).contributions
    return dict(zip(table["sha"].to_pylist(), table["title"].to_pylist()))


def stats(project: Project) -> GraphStats:
    """Graph statistics of the project (`frontier.stats.GraphStats`), as the paper's section 4.6 defines them."""
    from ..frontier.stats import graph_stats
    from .indexing import GRAPH_COLUMNS, load
    from .standing import reader_root

    config = project.config
    contributions = load(project, GRAPH_COLUMNS).contributions
    return graph_stats(
        contributions, direction=config.direction, tolerance=config.tolerance, root=reader_root(project, contributions)
    )
