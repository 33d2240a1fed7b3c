"""Evidence: what other accounts have built on each contribution, and what verifiers said about it.

Rules (design.md section 5; weights from `git_agora.contribution`):

- Score `S(u) = sum of w(v) over direct children v of u with a(v) != a(u)`: a child from the same
  account (self-citation) adds nothing. `w` is `contribution_weight`: a verification weighs its verdict
  (+20 confirmed, +10 partial, -20 failed), wip and endorsements weigh 0, anything else the largest
  weight among its tags.
- Verdicts: the newest verdict of a verifier on a target replaces the earlier ones ("newest" = largest
  (timestamp, log_seq), then sha). A replaced verification stays in history but weighs nothing and is not
  downstream work. A verdict on one's own work, or on a commit that is not a valid contribution, is
  ignored the same way (the index already marks self-verification invalid; this is a second guard).
- Verdicts that count (docs/protocol.md, "Whose verdicts count"): a current verdict counts only when it
  records the rerun behind it (``run_backed``: measured values, evaluator identity, sandbox flag,
  duration, as `git agora verify` writes them) and its verifier has standing: trusted from the start
  (the setup's account and ``graph.root.accounts``) or established (a contribution of its own, not a
  verification, is confirmed by a counting verdict). Any other verdict is shown with why it weighs
  nothing (``Verdicts.weightless``) and is treated as a replaced one: no weight, no status, not
  follow-on work.
- Follow-ons n(u) (the paper's "follow-on work on u", its descendant count; the ``descendants`` column):
  every node reachable from u through child edges, counted once however many paths lead to it, that is
  follow-on work: not wip, not an endorsement, not a failed, replaced or ignored verification.
  Other nodes are not counted but are still walked through (a result built on a wip commit is
  follow-on work of the wip's parent). ``follow_ons`` is the one home of this rule: views and UCB
  read it from here (``Frame.follow_ons``).
- Status, from the counting verdicts (one per verifier): `unverified` (none), `confirmed` / `partial` /
  `failed` when they all agree, `contested` when they disagree. One failure disputes a result confirmed
  by another account (contested: it stays scored, marked); it does not delete it.
- Ranks (``Root.ranks``, `[verdicts] format = 2`, docs/protocol.md "Whose verdicts count"): standing has
  two ranks. The trust root (the setup's account and ``graph.root.accounts``) outranks the accounts it
  minted: an account is *derived* when the trust root's current run-backed verdicts on a contribution of
  its own (not a verification) all say confirmed; one round, never through another derived account.
  Where a counting verdict of the trust root is on a target, a derived verdict of another kind than the
  root's is *outranked* (``OUTRANKED``): it weighs nothing, so the status is the root verdicts' status;
  derived verdicts of the root's kinds still count. Without a root verdict, derived accounts contest
  each other. Without ranks (format 1) standing is the least fixed point of ``established``.

Only rows with valid == true take part; the output has one row per valid contribution, in table order.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import SETUP, VERDICT_WEIGHTS, VERIFICATION, contribution_weight
from .descendants import count_descendants
from .graph import Graph, build_graph, combined, kind_mask, tag_mask
from .root import Root

EVIDENCE = pa.schema(
    [
        ("sha", pa.string()),
        ("score", pa.float64()),
        ("children", pa.int64()),
        ("cross_children", pa.int64()),
        ("descendants", pa.int64()),
        ("status", pa.string()),
        ("confirmations", pa.int64()),
        ("partials", pa.int64()),
        ("failures", pa.int64()),
        ("weightless", pa.bool_()),  # a verification whose verdict weighs nothing (replaced, an opinion, ...)
    ]
)

_TAG_SEPARATOR = "\x1f"


# why a verdict weighs nothing: fixed words, shown on the verdict and on its target (``frontier.verdict_rows``)
REPLACED = "superseded by a newer verdict of the same account"
OPINION = "an opinion: no rerun behind it"
NEWCOMER = "from an account with no confirmed work yet"
OUTRANKED = "outranked by the trust root's verdict on this result"


@dataclass(frozen=True, eq=False)
class Verdicts:
    """The usable verdicts of a graph, one entry per verification commit, and which of them count.

    Usable: a known verdict on a valid contribution of another account. `current` marks the newest
    verdict of each (verifier, target) pair; the others are replaced. `counts` marks the current ones
    that record their rerun (`run_backed`) and come from a trusted or established account (`standing`,
    per account code), unless the trust root's verdict outranks them (`outranked`, with ranks only):
    only those weigh in status, evidence and follow-on counts. `trusted`: per account code, the trust
    root; `ranked`: whether the ranks apply (``Root.ranks``).
    """

    node: np.ndarray  # int64 node of the verification commit
    target: np.ndarray  # int64 node it verifies
    verdict: np.ndarray  # object array of "confirmed" / "partial" / "failed"
    current: np.ndarray  # bool
    verifier: np.ndarray  # int64 account code of the verifier
    run_backed: np.ndarray  # bool: records its rerun (`records.carries_run`)
    standing: np.ndarray  # bool per account code: trusted from the start or established
    outranked: np.ndarray | None = None  # bool per verdict: a derived verdict the root's overrules (ranks)
    trusted: np.ndarray | None = None  # bool per account code: the trust root (default: ``standing``)
    ranked: bool = False

    def __post_init__(self) -> None:
        if self.outranked is None:
            object.__setattr__(self, "outranked", np.zeros(len(self.node), dtype=bool))
        if self.trusted is None:
            object.__setattr__(self, "trusted", self.standing)

    @property
    def counts(self) -> np.ndarray:
        assert self.outranked is not None
        return self.current & self.run_backed & self.standing[self.verifier] & ~self.outranked

    def current_counts(self, verdict: str, n: int) -> np.ndarray:
        """Per node: how many counting verdicts of this kind it has received."""
        chosen = self.counts & (self.verdict == verdict)
        return np.bincount(self.target[chosen], minlength=n).astype(np.int64)

    def weightless(self, at: np.ndarray | None = None) -> list[str | None]:
        """Per verdict (or per verdict number in ``at``): why it weighs nothing (superseded, an opinion,
        from a newcomer), None when it counts."""
        assert self.outranked is not None
        pick = slice(None) if at is None else np.asarray(at, dtype=np.int64)
        why: list[str | None] = []
        for current, run, standing, outranked in zip(
            self.current[pick].tolist(),
            self.run_backed[pick].tolist(),
            self.standing[self.verifier[pick]].tolist(),
            self.outranked[pick].tolist(),
        ):
            parts = [] if current else [REPLACED]
            parts += [] if run else [OPINION]
            parts += [] if standing else [NEWCOMER]
            parts += [OUTRANKED] if outranked else []
            why.append("; ".join(parts) or None)
        return why


# counts n(v) for a graph and its follow-on work mask; ``count_descendants`` unless a caller keeps a cache
FollowOnCounter = Callable[[Graph, np.ndarray], np.ndarray]

STATUSES = np.array(["unverified", "contested", "confirmed", "partial", "failed"], dtype=object)


def evidence(
    contributions: pa.Table,
    weights: Mapping[str, float] | None = None,
    *,
    counter: FollowOnCounter | None = None,
    root: Root | None = None,
) -> pa.Table:
    """One EVIDENCE row per valid contribution: score, child counts, descendants, verification status.

    `weights` are tag weights (default `contribution.default_weights`), passed on to `contribution_weight`;
    `counter` computes n(v) from the graph and ``follow_on_work`` (default ``count_descendants``; a
    cache may answer instead, with the same numbers); `root`: whose verdicts count from the start
    (``graph.build_graph``).
    """
    return pa.table(evidence_columns(build_graph(contributions, root), weights, counter), schema=EVIDENCE)


def evidence_columns(
    graph: Graph,
    weights: Mapping[str, float] | None = None,
    counter: FollowOnCounter | None = None,
    verdicts: Verdicts | None = None,
) -> dict[str, Any]:
    """The EVIDENCE columns as node-aligned arrays (``sha`` an Arrow column, ``status`` an object array
    of five shared strings), for callers that already hold the graph (and its ``current_verdicts``)."""
    verdicts = verdicts_of(graph) if verdicts is None else verdicts
    weight = node_weights(graph, weights)
    discarded = discarded_verifications(graph, verdicts)
    weight[discarded] = 0.0
    n = graph.n
    cross = graph.cross_edges()
    status, confirmations, partials, failures = verification_status(verdicts, n)
    return {
        "sha": graph.table["sha"],
        "score": np.bincount(graph.parent[cross], weights=weight[graph.child[cross]], minlength=n),
        "children": np.bincount(graph.parent, minlength=n).astype(np.int64),
        "cross_children": np.bincount(graph.parent[cross], minlength=n).astype(np.int64),
        "descendants": follow_ons(graph, verdicts, counter),
        "status": status,
        "confirmations": confirmations,
        "partials": partials,
        "failures": failures,
        "weightless": discarded,
    }


_VERDICTS: weakref.WeakKeyDictionary[Graph, Verdicts] = weakref.WeakKeyDictionary()


def verdicts_of(graph: Graph) -> Verdicts:
    """``current_verdicts(graph)``, computed once per graph (evidence, the views, the summary and the
    site's verdict tables read the same one); forgotten with the graph."""
    found = _VERDICTS.get(graph)
    if found is None:
        found = _VERDICTS[graph] = current_verdicts(graph)
    return found


def remember_verdicts(graph: Graph, verdicts: Verdicts) -> None:
    """What ``verdicts_of(graph)`` answers, when the caller kept it from an earlier build of the same
    graph (``incremental``)."""
    _VERDICTS[graph] = verdicts


def current_verdicts(graph: Graph) -> Verdicts:
    """The usable verdicts, each marked current when it is its verifier's newest on that target, and the
    accounts whose verdicts count (``standing``)."""
    table = graph.table
    node = np.flatnonzero(pc.is_valid(table["verdict"]).to_numpy(zero_copy_only=False))
    rows = table.select(["sha", "target", "verdict", "timestamp", "log_seq", "run_backed"]).take(node)
    target = graph.target[node] if graph.target is not None else graph.lookup(rows["target"])
    verdict = np.asarray(rows["verdict"].to_pylist(), dtype=object)
    verifier = graph.account[node]
    target_account = np.where(target >= 0, graph.account[np.maximum(target, 0)], -1)
    usable = np.isin(verdict, list(VERDICT_WEIGHTS)) & (target >= 0) & (target_account != verifier)
    node, target, verdict, verifier = node[usable], target[usable], verdict[usable], verifier[usable]
    rows = rows.filter(usable)
    run_backed = np.asarray(pc.fill_null(rows["run_backed"], False).to_numpy(zero_copy_only=False), dtype=bool)
    newest_last = np.lexsort(
        (
            np.asarray(rows["sha"].to_pylist(), dtype=str),
            rows["log_seq"].fill_null(-1).to_numpy(),
            rows["timestamp"].fill_null(np.iinfo(np.int64).min).to_numpy(),
            target,
            verifier,
        )
    )
    node, target, verdict, verifier, run_backed = (
        a[newest_last] for a in (node, target, verdict, verifier, run_backed)
    )
    current = np.ones(len(node), dtype=bool)
    current[:-1] = (verifier[1:] != verifier[:-1]) | (target[1:] != target[:-1])
    if not graph.root.ranks:
        standing = established(graph, target, verdict, verifier, current & run_backed)
        return Verdicts(node, target, verdict, current, verifier, run_backed, standing)
    trusted = trusted_from_the_start(graph)
    root_kinds = kinds_by_target(target, verdict, current & run_backed & trusted[verifier], graph.n)
    standing = minted(graph, root_kinds, trusted)
    outranked = outranked_by_root(target, verdict, current & run_backed & standing[verifier], root_kinds)
    outranked &= ~trusted[verifier]
    return Verdicts(node, target, verdict, current, verifier, run_backed, standing, outranked, trusted, True)


def trusted_from_the_start(graph: Graph) -> np.ndarray:
    """Per account code: the setup's account, or one the trust root names (``graph.root.accounts``)."""
    size = int(graph.account.max()) + 1 if graph.n else 0
    trusted = np.zeros(size, dtype=bool)
    named = pa.array(sorted(graph.root.accounts), pa.string())
    in_root = pc.fill_null(pc.is_in(graph.table["account"], value_set=named), False).to_numpy(zero_copy_only=False)
    trusted[graph.account[np.asarray(in_root, dtype=bool) | tag_mask(graph.table, SETUP)]] = True
    return trusted


def established(
    graph: Graph, target: np.ndarray, verdict: np.ndarray, verifier: np.ndarray, backed: np.ndarray
) -> np.ndarray:
    """Per account code: trusted from the start, or established: a contribution of its own (not a
    verification) is confirmed by a current, run-backed verdict of an account already trusted or
    established. The least fixed point, one vectorised round per link of the longest chain."""
    standing = trusted_from_the_start(graph)
    confirms = backed & (verdict == "confirmed") & own_work(graph)[target]
    while True:
        reached = graph.account[target[confirms & standing[verifier]]]
        new = np.unique(reached[~standing[reached]])
        if not len(new):
            return standing
        standing[new] = True


VERDICT_KINDS = ("confirmed", "partial", "failed")


def kinds_by_target(target: np.ndarray, verdict: np.ndarray, chosen: np.ndarray, n: int) -> np.ndarray:
    """Per node and verdict kind (``VERDICT_KINDS``): whether one of the ``chosen`` verdicts on it says so."""
    kinds = np.zeros((n, len(VERDICT_KINDS)), dtype=bool)
    for column, kind in enumerate(VERDICT_KINDS):
        kinds[target[chosen & (verdict == kind)], column] = True
    return kinds


def own_work(graph: Graph) -> np.ndarray:
    """Per node: a contribution of its author's own, not a verification (what a confirmation can establish)."""
    return ~(pc.is_valid(graph.table["verdict"]).to_numpy(zero_copy_only=False) | tag_mask(graph.table, VERIFICATION))


def minted(graph: Graph, root_kinds: np.ndarray, trusted: np.ndarray) -> np.ndarray:
    """With ranks, per account code: the trust root, or derived: the trust root's counting verdicts on a
    contribution of its own all say confirmed (``root_kinds``: ``kinds_by_target`` of the root's current,
    run-backed verdicts). One round from the root: a derived account's confirmation mints nothing."""
    standing = trusted.copy()
    confirmed_only = root_kinds[:, 0] & ~root_kinds[:, 1] & ~root_kinds[:, 2]
    standing[graph.account[np.flatnonzero(confirmed_only & own_work(graph))]] = True
    return standing


def outranked_by_root(
    target: np.ndarray, verdict: np.ndarray, counted: np.ndarray, root_kinds: np.ndarray
) -> np.ndarray:
    """Per verdict: one of ``counted`` on a target the trust root gave a counting verdict, whose kind none of
    the root's verdicts on it has (the caller keeps the root's own verdicts out)."""
    if not len(target):
        return np.zeros(0, dtype=bool)
    column = np.array([VERDICT_KINDS.index(v) for v in verdict.tolist()], dtype=np.int64)
    has_root = root_kinds[target].any(axis=1)
    same_kind = root_kinds[target, column]
    return counted & has_root & ~same_kind


def discarded_verifications(graph: Graph, verdicts: Verdicts) -> np.ndarray:
    """Boolean per node: a verification commit whose verdict does not count (not usable, replaced, an
    opinion or from an account without standing)."""
    is_verification = pc.is_valid(graph.table["verdict"]).to_numpy(zero_copy_only=False)
    discarded = np.asarray(is_verification, dtype=bool).copy()
    discarded[verdicts.node[verdicts.counts]] = False
    return discarded


WEIGHT_COLUMNS = ("tags", "verdict")  # what `node_weights` reads of a graph's table


def node_weights(graph: Graph, weights: Mapping[str, float] | None = None) -> np.ndarray:
    """Per node: its weight w(v), before replaced or ignored verdicts are zeroed.

    `contribution_weight` is called once per distinct (tags, verdict) combination, not once per row.
    """
    tags = pc.fill_null(pc.binary_join(graph.table["tags"], _TAG_SEPARATOR), "")
    verdicts = pc.fill_null(graph.table["verdict"], "")
    tag_keys = pc.dictionary_encode(combined(tags))
    verdict_keys = pc.dictionary_encode(combined(verdicts))
    n_verdicts = max(len(verdict_keys.dictionary), 1)
    pairs = tag_keys.indices.to_numpy().astype(np.int64) * n_verdicts + verdict_keys.indices.to_numpy()
    combos, inverse = np.unique(pairs, return_inverse=True)
    combo_weight = np.zeros(len(combos))
    tag_texts = tag_keys.dictionary.to_pylist()
    verdict_texts = verdict_keys.dictionary.to_pylist()
    for i, combo in enumerate(combos.tolist()):
        combo_tags = tuple(filter(None, tag_texts[combo // n_verdicts].split(_TAG_SEPARATOR)))
        verdict = verdict_texts[combo % n_verdicts] or None
        if verdict is not None and verdict not in VERDICT_WEIGHTS:
            continue  # an unknown verdict: ignored, weighs nothing
        combo_weight[i] = contribution_weight(combo_tags, verdict, weights)
    return combo_weight[inverse.ravel()]


def follow_on_work(graph: Graph, verdicts: Verdicts) -> np.ndarray:
    """Per node: whether it is follow-on work on its ancestors (of no kind that does not propagate,
    ``Kind.propagates``: wip, an endorsement, a witness record; not a verification whose verdict is
    failed, replaced or ignored)."""
    propagating = ~kind_mask(graph.table, lambda kind: not kind.propagates)
    failed = pc.fill_null(pc.equal(graph.table["verdict"], "failed"), False).to_numpy(zero_copy_only=False)
    return propagating & ~np.asarray(failed, dtype=bool) & ~discarded_verifications(graph, verdicts)


def follow_ons(graph: Graph, verdicts: Verdicts, counter: FollowOnCounter | None = None) -> np.ndarray:
    """n(v), the follow-on work on v: how many distinct nodes reachable from v through child edges are
    follow-on work (``follow_on_work``); the paper's descendant count (module docstring)."""
    return (counter or count_descendants)(graph, follow_on_work(graph, verdicts))


def verification_status(verdicts: Verdicts, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per node: status (an object array of the five shared ``STATUSES`` strings) and the counting
    confirmed, partial and failed verdicts."""
    confirmed = verdicts.current_counts("confirmed", n)
    partial = verdicts.current_counts("partial", n)
    failed = verdicts.current_counts("failed", n)
    kinds = (confirmed > 0).astype(np.int8) + (partial > 0) + (failed > 0)
    code = np.select([kinds == 0, kinds > 1, confirmed > 0, partial > 0], [0, 1, 2, 3], default=4).astype(np.int8)
    return STATUSES[code], confirmed, partial, failed
