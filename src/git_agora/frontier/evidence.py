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
- Follow-ons n(u) (the paper's "follow-on work on u", its descendant count; the ``descendants`` column):
  every node reachable from u through child edges, counted once however many paths lead to it, that is
  follow-on work: not wip, not an endorsement, not a failed, replaced or ignored verification.
  Other nodes are not counted but are still walked through (a result built on a wip commit is
  follow-on work of the wip's parent). ``follow_ons`` is the one home of this rule: views and UCB
  read it from here (``Frame.follow_ons``).
- Status: `unverified` (no current verdict), `confirmed` / `partial` / `failed` when every current
  verdict (one per verifier) agrees, `contested` when they disagree.

Only rows with valid == true take part; the output has one row per valid contribution, in table order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import NON_PROPAGATING_TAGS, VERDICT_WEIGHTS, contribution_weight
from .descendants import count_descendants
from .graph import Graph, build_graph, combined, tag_mask

EVIDENCE = pa.schema(
    [
        ("sha", pa.string()),
        ("score", pa.float64()),
        ("children", pa.int64()),
        ("cross_children", pa.int64()),
        ("descendants", pa.int64()),
        ("status", pa.string()),
        ("confirmations", pa.int64()),
        ("failures", pa.int64()),
    ]
)

_TAG_SEPARATOR = "\x1f"


@dataclass(frozen=True, eq=False)
class Verdicts:
    """The usable verdicts of a graph, one entry per verification commit.

    Usable: a known verdict on a valid contribution of another account. `current` marks the newest
    verdict of each (verifier, target) pair; the others are replaced.
    """

    node: np.ndarray  # int64 node of the verification commit
    target: np.ndarray  # int64 node it verifies
    verdict: np.ndarray  # object array of "confirmed" / "partial" / "failed"
    current: np.ndarray  # bool

    def current_counts(self, verdict: str, n: int) -> np.ndarray:
        """Per node: how many current verdicts of this kind it has received."""
        chosen = self.current & (self.verdict == verdict)
        return np.bincount(self.target[chosen], minlength=n).astype(np.int64)


# counts n(v) for a graph and its follow-on work mask; ``count_descendants`` unless a caller keeps a cache
FollowOnCounter = Callable[[Graph, np.ndarray], np.ndarray]

STATUSES = np.array(["unverified", "contested", "confirmed", "partial", "failed"], dtype=object)


def evidence(
    contributions: pa.Table,
    weights: Mapping[str, float] | None = None,
    *,
    counter: FollowOnCounter | None = None,
) -> pa.Table:
    """One EVIDENCE row per valid contribution: score, child counts, descendants, verification status.

    `weights` are tag weights (default DEFAULT_TAG_WEIGHTS), passed on to `contribution_weight`;
    `counter` computes n(v) from the graph and ``follow_on_work`` (default ``count_descendants``; a
    cache may answer instead, with the same numbers).
    """
    return pa.table(evidence_columns(build_graph(contributions), weights, counter), schema=EVIDENCE)


def evidence_columns(
    graph: Graph, weights: Mapping[str, float] | None = None, counter: FollowOnCounter | None = None
) -> dict[str, Any]:
    """The EVIDENCE columns as node-aligned arrays (``sha`` an Arrow column, ``status`` an object array
    of five shared strings), for callers that already hold the graph."""
    verdicts = current_verdicts(graph)
    weight = node_weights(graph, weights)
    weight[discarded_verifications(graph, verdicts)] = 0.0
    n = graph.n
    cross = graph.cross_edges()
    status, confirmations, failures = verification_status(verdicts, n)
    return {
        "sha": graph.table["sha"],
        "score": np.bincount(graph.parent[cross], weights=weight[graph.child[cross]], minlength=n),
        "children": np.bincount(graph.parent, minlength=n).astype(np.int64),
        "cross_children": np.bincount(graph.parent[cross], minlength=n).astype(np.int64),
        "descendants": follow_ons(graph, verdicts, counter),
        "status": status,
        "confirmations": confirmations,
        "failures": failures,
    }


def current_verdicts(graph: Graph) -> Verdicts:
    """The usable verdicts, each marked current when it is its verifier's newest on that target."""
    table = graph.table
    node = np.flatnonzero(pc.is_valid(table["verdict"]).to_numpy(zero_copy_only=False))
    rows = table.select(["sha", "target", "verdict", "timestamp", "log_seq"]).take(node)
    target = graph.target[node] if graph.target is not None else graph.lookup(rows["target"])
    verdict = np.asarray(rows["verdict"].to_pylist(), dtype=object)
    verifier = graph.account[node]
    target_account = np.where(target >= 0, graph.account[np.maximum(target, 0)], -1)
    usable = np.isin(verdict, list(VERDICT_WEIGHTS)) & (target >= 0) & (target_account != verifier)
    node, target, verdict, verifier = node[usable], target[usable], verdict[usable], verifier[usable]
    rows = rows.filter(usable)
    newest_last = np.lexsort(
        (
            np.asarray(rows["sha"].to_pylist(), dtype=str),
            rows["log_seq"].fill_null(-1).to_numpy(),
            rows["timestamp"].fill_null(np.iinfo(np.int64).min).to_numpy(),
            target,
            verifier,
        )
    )
    node, target, verdict, verifier = (a[newest_last] for a in (node, target, verdict, verifier))
    current = np.ones(len(node), dtype=bool)
    current[:-1] = (verifier[1:] != verifier[:-1]) | (target[1:] != target[:-1])
    return Verdicts(node, target, verdict, current)


def discarded_verifications(graph: Graph, verdicts: Verdicts) -> np.ndarray:
    """Boolean per node: a verification commit whose verdict does not count (replaced or not usable)."""
    is_verification = pc.is_valid(graph.table["verdict"]).to_numpy(zero_copy_only=False)
    discarded = np.asarray(is_verification, dtype=bool).copy()
    discarded[verdicts.node[verdicts.current]] = False
    return discarded


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
    """Per node: whether it is follow-on work on its ancestors (not wip, not an endorsement, not a
    verification whose verdict is failed, replaced or ignored)."""
    propagating = ~np.logical_or.reduce([tag_mask(graph.table, tag) for tag in sorted(NON_PROPAGATING_TAGS)])
    failed = pc.fill_null(pc.equal(graph.table["verdict"], "failed"), False).to_numpy(zero_copy_only=False)
    return propagating & ~np.asarray(failed, dtype=bool) & ~discarded_verifications(graph, verdicts)


def follow_ons(graph: Graph, verdicts: Verdicts, counter: FollowOnCounter | None = None) -> np.ndarray:
    """n(v), the follow-on work on v: how many distinct nodes reachable from v through child edges are
    follow-on work (``follow_on_work``); the paper's descendant count (module docstring)."""
    return (counter or count_descendants)(graph, follow_on_work(graph, verdicts))


def verification_status(verdicts: Verdicts, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node: status (an object array of the five shared ``STATUSES`` strings), current confirmed
    count, current failed count."""
    confirmed = verdicts.current_counts("confirmed", n)
    partial = verdicts.current_counts("partial", n)
    failed = verdicts.current_counts("failed", n)
    kinds = (confirmed > 0).astype(np.int8) + (partial > 0) + (failed > 0)
    code = np.select([kinds == 0, kinds > 1, confirmed > 0, partial > 0], [0, 1, 2, 3], default=4).astype(np.int8)
    return STATUSES[code], confirmed, failed
