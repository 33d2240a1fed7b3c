"""What each page shows, as plain values (no Arrow, no numpy): `git_agora.ops.site` fills these from
the library's results and the pages render them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SiteInfo:
    """What every page shows in its header and footer."""

    name: str
    metric: str | None
    direction: str
    tolerance: float
    generated: str  # when the site was built (UTC), for the footer
    best_sha: str | None
    lineage_rule: str  # which results have a lineage page (said where one is missing)


@dataclass(frozen=True, slots=True)
class Ref:
    """A link to a contribution: `known` when the site has a page for it."""

    sha: str
    title: str | None
    account: str | None
    known: bool = True


@dataclass(frozen=True, slots=True)
class VerdictInfo:
    """One verification of a result: who, which verdict, the claimed and the reproduced value."""

    verification: Ref
    target: Ref
    verdict: str
    timestamp: int
    weight: str  # "counts", or "does not count: " and why (superseded, an opinion, a newcomer's)
    claimed: float | None
    reproduced: float | None
    unsettled: bool = False  # a failed rerun that does not count yet (its account has no standing)


@dataclass(frozen=True, slots=True)
class Evidence:
    score: float
    children: int
    follow_ons: int
    status: str
    confirmations: int
    failures: int


@dataclass(slots=True)
class ContributionView:
    """Everything on one contribution's page."""

    sha: str
    account: str | None
    timestamp: int | None
    title: str
    description: str
    tags: tuple[str, ...]
    metrics: tuple[tuple[str, float], ...]
    trailers: tuple[str, ...]
    valid: bool
    reasons: tuple[str, ...]
    parents: tuple[Ref, ...]
    children: tuple[Ref, ...]  # at most a page's worth; `children_total` counts them all
    children_total: int
    evidence: Evidence | None  # None: a rejected commit
    scored: bool
    new_best: bool
    verdicts: tuple[VerdictInfo, ...]  # verifications it received, newest first
    verifies: VerdictInfo | None  # when it is a verification: what it says of its target
    code_bearing: bool
    first_parent: str | None
    files: tuple[tuple[str, str], ...] | None  # (status, path) against the first parent; None: not read
    diff: str | None  # the patch (scored results); None: not built
    diff_left_out: int = 0  # bytes of the patch left out
    lineage: bool = False  # a lineage page exists
    cross_refs: tuple[str, ...] = ()
    unsettled: str | None = None  # its failed reruns that do not count yet, as `show` says it; None: none


@dataclass(frozen=True)
class RatchetData:
    """Every plotted result in time order: columns of equal length. `status`: confirmed, partial,
    contested, unverified or failed (failed results are not scored: drawn, not counted)."""

    times: list[int]
    values: list[float]
    status: list[str]
    shas: list[str]
    titles: list[str]
    accounts: list[str]
    new_best: list[bool]
    scored_total: int  # scored results in the project (plotted or not)
    failed_total: int
    note: str | None  # e.g. sampling at large sizes


@dataclass(frozen=True)
class ClusterMap:
    """The 2-D projection of the recent window's description vectors."""

    available: bool
    why: str | None  # when not available
    warning: str | None  # the convergence (monoculture) warning
    model: str | None
    coverage: float
    explained: tuple[float, float]
    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    cluster: list[int] = field(default_factory=list)
    score: list[float] = field(default_factory=list)
    shas: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    accounts: list[str] = field(default_factory=list)
    metric: list[float | None] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)  # diversity's cluster rows (id, size, label, ...)
    summary: dict[str, Any] = field(default_factory=dict)  # count, top_share, effective_count, evenness, window


@dataclass(frozen=True)
class LineageView:
    """One result's ancestry as a graph: nodes in time order, parent edges among the drawn nodes."""

    sha: str
    title: str
    size: int
    accounts: tuple[str, ...]
    edges_total: int
    cross_account_edges: int
    reproduced_total: int
    scored_ancestors: int
    reproduced_scored_ancestors: int
    milestones: tuple[tuple[Ref, float, int], ...]  # (who, value, timestamp), time order
    nodes: list[dict[str, Any]]  # sha, title, account, t, metric, scored, milestone, reproduced
    edges: list[tuple[int, int, bool]]  # (child, parent, cross-account) as indices into nodes
    note: str | None  # when the ancestry is too large to draw whole


@dataclass(frozen=True)
class ListRow:
    """A row of the contributions list."""

    sha: str
    account: str | None
    timestamp: int | None
    title: str
    tags: tuple[str, ...]
    metric: float | None
    status: str | None  # None: rejected
