"""UCB scores and the three work slots: exploit, explore known, explore novel.

    U(v) = 100 Q(v) + C sqrt(ln(N + 1) / (n(v) + 1)) + 100 D / sqrt(1 + rho(v))

- Q(v): quality percentile in [0, 1], direction-aware (``frame.quality``). A node without a metric
  takes the Q of its nearest scored ancestor along first parents (the work it started from), or 0.
  Without any metric in the project Q is 0 everywhere and the slots say so.
- n(v): follow-on work on v, the paper's descendant count (``evidence.follow_ons``, read as
  ``Frame.follow_ons``: no endorsements, wip or failed verifications). N: the number of valid
  contributions, less the verifications whose verdict weighs nothing (``counted``).
- rho(v): near-duplicates, contributions whose description vector has cosine >= 0.90 with v, counted
  in the clustered window (``clusters``). Unknown (no clusters or no vector) counts as 0.
- C = c0 (1 + k * bunching). bunching in [0, 1] is the share of the other scored results lying within
  ``bunch_tolerances`` reproduction tolerances of the best value (when the tolerance is 0: within
  ``bunch_iqr_fraction`` of the interquartile range). When everyone sits at the best, improvements
  are within noise, so exploration is worth more. With fewer than two results bunching is 0.
- D: the diversity weight.

Slots (parents are never invalid, wip, endorsements, verifications or failed-verified work):

- exploit: scored nodes with Q >= exploit_q (or, when none, the best scored ones), highest U first:
  reproduce or refine the leaders.
- explore known: promising work (Q >= explore_q) in thin clusters (size <= thin_cluster), highest U
  first. Without clusters: promising work with at most ``few_follow_ons`` follow-ons. Empty
  without any metric.
- explore novel: untouched nodes (n = 0) in singleton or very small clusters (size <= novel_cluster),
  highest U first. Without clusters: untouched nodes, highest U first.

A node appears in at most one slot (exploit, then explore known, then explore novel). Explore slots
only look at the clustered window (the most recent work) when clusters exist.

Contested results (``Root.ranks``, `[verdicts] format = 2`): they stay in the exploit slot's pool, but
their suggestion says ``action: verify`` (rerun it with `git agora verify`, not build on it), and the
explore slots leave them out: a contested result is never offered as a parent. Without ranks the
suggestion says to settle it with a rerun before building on it, ``action: build``.

Explore settings (``[ucb] format = 2``; off by default, the paper's behaviour):

- ``explore_quality = "lineage"``: the explore slots judge each node by the better of its own Q and its
  first parent's (``lineage_quality``), so an untouched step away from a leader, worse alone (one of
  two changes that only pay together), ranks as a direction worth one more step, while work far from
  every leader stays low. Such suggestions say where their quality comes from (``quality_source``
  ``parent``). The exploit slot is unchanged.
- ``explore_scored = true``: the explore slots suggest only results with a metric of their own, not
  insights or hypotheses whose quality is inherited.
- ``explore_slots = "novel"``: the two settings above apply to the explore-novel slot only; explore
  known is ranked and filled as the paper has it (insights on leaders included). ``"both"``, the default,
  applies them to both explore slots.

Exploit order (``[ucb] format = 2``): ``exploit_rank = "quality"`` lists the exploit slot's pool best first
(``by_quality``: by metric, the mean over draws where replicates count, confirmed first at equal value,
then fewer follow-ons, then newest) instead of by U, so exploit turns refine the best while the explore
slots do the exploring; U is still shown. ``"ucb"``, the paper's order, is the default.

Replicates (``[ucb] format = 2``, ``replicate_within`` > 0; off by default, the paper's behaviour): a
result tagged ``replicate`` repeats its first parent's setting under another seed. Then Q ranks each
result by the mean of its own value and its replicates' (its author's, another account's once
confirmed), replicates are never suggested as parents (build on the original), and an exploit
suggestion whose mean lies within ``replicate_within`` tolerances of the best mean, with fewer than
``replicates`` replicates, says ``action: replicate``: rerun it under another seed before building on
it, since its lead is within noise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow.compute as pc

from ..contribution import REPLICATE
from .clusters import Clustering
from .frame import Frame, inherit_quality, quality
from .graph import tag_mask
from .ucb_params import UcbParams


@dataclass(frozen=True)
class Suggestion:
    """A parent to build on. ``ucb`` is U(v); ``quality`` is Q(v) and ``quality_source`` says where it
    came from (own | inherited | parent | none); ``follow_ons`` is n(v); ``cluster``/``cluster_size`` are null
    without clusters; ``duplicates`` is rho(v), null when unknown; ``reason`` is one readable line."""

    sha: str
    title: str
    account: str
    metric: float | None
    status: str
    ucb: float
    quality: float
    quality_source: str
    follow_ons: int
    cluster: int | None
    cluster_size: int | None
    duplicates: int | None
    reason: str
    claimed_by: tuple[dict[str, Any], ...] = ()  # active claims on it: {account, until, sha, title}
    action: str = "build"  # or "replicate": rerun it under another seed first; "verify": contested (ranks)
    replicates: int | None = None  # its replicates, when the project counts them

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "claimed_by": [dict(c) for c in self.claimed_by]}


@dataclass(frozen=True)
class Slot:
    """One slot: name (exploit | explore_known | explore_novel), purpose, suggestions, note."""

    name: str
    purpose: str
    suggestions: tuple[Suggestion, ...]
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "purpose": self.purpose,
            "note": self.note,
            "suggestions": [s.to_dict() for s in self.suggestions],
        }


@dataclass(frozen=True)
class Slots:
    """The three slots and the constants used: C (exploration), bunching, N, params."""

    exploration_c: float
    bunching: float
    n_total: int
    params: UcbParams
    slots: tuple[Slot, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "params": self.params.to_dict(), "slots": [s.to_dict() for s in self.slots]}

    def __getitem__(self, name: str) -> Slot:
        for slot in self.slots:
            if slot.name == name:
                return slot
        raise KeyError(name)


# --------------------------------------------------------------------------- formula


def bunching(frame: Frame, params: UcbParams) -> float:
    """Share of the other scored results within the bunching width of the best (module docstring)."""
    loss = frame.loss()[frame.scored]
    if len(loss) < 2:
        return 0.0
    with np.errstate(over="ignore", invalid="ignore"):  # any finite floats: a difference may overflow to inf
        if frame.tolerance > 0:
            width = params.bunch_tolerances * frame.tolerance
        else:
            q1, q3 = 2 * np.percentile(loss / 2, [25, 75])  # halved: interpolating never overflows
            width = params.bunch_iqr_fraction * q3 - params.bunch_iqr_fraction * q1
        near = int((loss - loss.min() <= width).sum()) - 1
    return near / (len(loss) - 1)


def exploration_constant(frame: Frame, params: UcbParams) -> tuple[float, float]:
    """``(C, bunching)`` with C = c0 (1 + k * bunching)."""
    b = bunching(frame, params)
    return params.c0 * (1.0 + params.k * b), b


def counted(frame: Frame) -> int:
    """N, the contributions UCB counts: every valid one but verifications whose verdict weighs nothing
    (an opinion or a newcomer's verdict must not move a slot) and witness records (bookkeeping, not work)."""
    return frame.n - int(frame.weightless.sum()) - int(frame.uncounted.sum())


def ucb_scores(q: np.ndarray, n: np.ndarray, rho: np.ndarray, total: int, c: float, d: float) -> np.ndarray:
    """U(v) for arrays of Q, n(v) and rho(v) (rho < 0, unknown, counts as 0): the one place the
    formula is written (module docstring); the slots rank every node through it."""
    rho = np.maximum(rho, 0)
    return 100.0 * q + c * np.sqrt(np.log(total + 1) / (n + 1.0)) + 100.0 * d / np.sqrt(1.0 + rho)


# --------------------------------------------------------------------------- slots


@dataclass(frozen=True, eq=False)
class _Context:
    frame: Frame
    clustering: Clustering | None
    params: UcbParams
    c: float
    cluster: np.ndarray
    size: np.ndarray
    replicas: Replicas | None = None
    stepped: np.ndarray | None = None  # explore slots: nodes whose Q is their parent's (lineage promise)

    def for_explore(self) -> _Context:
        """The context the explore slots rank in: Q is the lineage promise when the project asks for it."""
        if self.params.explore_quality != "lineage":
            return self
        lineage = lineage_quality(self.frame)
        return replace(self, frame=replace(self.frame, q_inherited=lineage), stepped=lineage > self.frame.q_inherited)

    def ucb(self, nodes: np.ndarray, rho: np.ndarray, d: float) -> np.ndarray:
        """U(v) of ``nodes`` through ``ucb_scores``, with Q inherited along first parents."""
        f = self.frame
        return ucb_scores(f.q_inherited[nodes], f.follow_ons[nodes], rho, counted(f), self.c, d)

    def rho(self, nodes: np.ndarray) -> np.ndarray:
        if self.clustering is None:
            return np.full(len(nodes), -1, dtype=np.int64)
        return self.clustering.duplicates(nodes, self.frame.n)

    def top(self, nodes: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``count`` nodes of highest U, exactly, computing rho only for a shortlist: U lies between
        its value without the diversity term (D = 0) and its value at rho = 0, so a node whose ceiling is
        below the count-th full U cannot enter."""
        if len(nodes) == 0 or count <= 0:
            return nodes[:0], np.zeros(0), np.zeros(0, dtype=np.int64)
        nodes = by_base_ucb(self.frame, nodes, self.c)
        no_rho = np.zeros(len(nodes))
        ceiling = self.ucb(nodes, no_rho, self.params.d)
        shortlist = min(len(nodes), first_shortlist(count))
        while True:
            rho = self.rho(nodes[:shortlist])
            full = self.ucb(nodes[:shortlist], rho, self.params.d)
            pick = np.lexsort((-self.frame.timestamp[nodes[:shortlist]], -full))[:count]
            if shortlist == len(nodes) or ceiling[shortlist] < full[pick].min():
                return nodes[pick], full[pick], rho[pick]
            shortlist = min(len(nodes), shortlist * 4)


def by_base_ucb(frame: Frame, nodes: np.ndarray, c: float) -> np.ndarray:
    """``nodes`` by U without its diversity term (D = 0, which needs no vector), highest first, newest
    first among equals: the order in which the slots read near-duplicate counts."""
    base = ucb_scores(frame.q_inherited[nodes], frame.follow_ons[nodes], np.zeros(len(nodes)), counted(frame), c, 0.0)
    return nodes[np.lexsort((-frame.timestamp[nodes], -base))]


def first_shortlist(count: int) -> int:
    """How many of the best nodes by base U a slot of ``count`` reads rho of first (x4 per extra round)."""
    return max(4 * count, 64)


def exploit_shortlist(frame: Frame, params: UcbParams = UcbParams()) -> np.ndarray:
    """The nodes whose vectors the exploit slot reads (for rho): its pool's first shortlist and one
    round more, by base U (by quality where ``exploit_rank = "quality"``). The explore slots read only
    the clustered window when clusters exist."""
    pool, _ = exploit_pool(frame, frame.buildable, params)
    if params.exploit_rank == "quality":
        ranked = by_quality(frame, pool)
    else:
        ranked = by_base_ucb(frame, pool, exploration_constant(frame, params)[0])
    return ranked[: 4 * first_shortlist(params.per_slot)]  # a margin: replicate means may reorder the raw values


def plan_slots(
    frame: Frame, clustering: Clustering | None, params: UcbParams = UcbParams(), replicas: Replicas | None = None
) -> Slots:
    """Compute C and fill the three slots (module docstring). ``replicas``: ``Replicas.of(frame)`` when the
    caller has it already (only read when replicates count)."""
    replicas = (replicas or Replicas.of(frame)) if params.replicating else None
    if replicas is not None:
        frame = replicas.frame
    c, b = exploration_constant(frame, params)
    if clustering is None:
        cluster, size = np.full(frame.n, -1, dtype=np.int64), np.zeros(frame.n, dtype=np.int64)
    else:
        cluster, size = clustering.cluster_of(frame.n)
    ctx = _Context(frame, clustering, params, c, cluster, size, replicas)
    exploit, taken = _exploit(ctx, frame.buildable)
    allowed = frame.buildable.copy()
    allowed[taken] = False
    if frame.graph.root.ranks:  # a contested result is offered to verify (exploit), never to build on
        allowed &= frame.status != "contested"
    explore = ctx.for_explore()
    scored_only = frame.scored if params.explore_scored else np.ones(frame.n, dtype=bool)
    known_ctx, known_allowed = (explore, allowed & scored_only) if params.explore_slots == "both" else (ctx, allowed)
    known, taken = _explore_known(known_ctx, known_allowed)
    allowed[taken] = False
    novel, _ = _explore_novel(explore, allowed & scored_only)
    return Slots(c, b, counted(frame), params, (exploit, known, novel))


def lineage_quality(frame: Frame) -> np.ndarray:
    """Each node's Q, or its first parent's own Q when that is higher: a step away from a leader is as
    promising as the leader for one more step, though it scored worse alone (the module docstring)."""
    parent = frame.first_parent
    parent_q = np.where(parent >= 0, frame.q[np.maximum(parent, 0)], np.nan)
    return np.fmax(frame.q_inherited, np.nan_to_num(parent_q, nan=0.0))


def _exploit(ctx: _Context, allowed: np.ndarray) -> tuple[Slot, np.ndarray]:
    f, p = ctx.frame, ctx.params
    purpose = "reproduce or refine the leaders"
    if not f.has_metric:
        return Slot("exploit", purpose, (), "no metric reported yet: nothing to exploit"), np.zeros(0, np.int64)
    pool, note = exploit_pool(f, allowed, p)
    if p.exploit_rank == "quality":
        return _fill_in_order(ctx, "exploit", purpose, by_quality(f, pool)[: p.per_slot], note)
    return _fill(ctx, "exploit", purpose, pool, note)


def by_quality(frame: Frame, nodes: np.ndarray) -> np.ndarray:
    """``nodes`` best first (``exploit_rank = "quality"``): by metric (the mean over draws where replicates
    count), confirmed before unverified before contested at equal value, then fewer follow-ons, then newest."""
    status = frame.status[nodes]
    status = np.where(status == "confirmed", 0, np.where(status == "contested", 2, 1))
    keys = (-frame.timestamp[nodes], frame.follow_ons[nodes], status, frame.loss()[nodes])
    return nodes[np.lexsort(keys)]


def exploit_pool(frame: Frame, allowed: np.ndarray, params: UcbParams) -> tuple[np.ndarray, str | None]:
    """Scored nodes of quality at least ``exploit_q`` (when none: every scored node, and a note why)."""
    pool = np.flatnonzero(allowed & frame.scored & (frame.q >= params.exploit_q))
    if len(pool):
        return pool, None
    return np.flatnonzero(
        allowed & frame.scored
    ), f"no result reaches quality {params.exploit_q:.0%}: showing the best available"


def _explore_known(ctx: _Context, allowed: np.ndarray) -> tuple[Slot, np.ndarray]:
    f, p = ctx.frame, ctx.params
    purpose = "develop promising work in thin clusters"
    if not f.has_metric:
        note = "no metric reported yet: promising work cannot be judged; see explore_novel"
        return Slot("explore_known", purpose, (), note), np.zeros(0, np.int64)
    promising = allowed & (f.q_inherited >= p.explore_q)
    if ctx.clustering is None:
        pool = np.flatnonzero(promising & (f.follow_ons <= p.few_follow_ons))
        thin_note = (
            f"no clusters (too few embeddings): thin means at most {p.few_follow_ons} follow-on(s) "
            "instead of a small cluster"
        )
        return _fill(ctx, "explore_known", purpose, pool, thin_note)
    pool = np.flatnonzero(promising & (ctx.size > 0) & (ctx.size <= p.thin_cluster))
    return _fill(ctx, "explore_known", purpose, pool, None)


def _explore_novel(ctx: _Context, allowed: np.ndarray) -> tuple[Slot, np.ndarray]:
    f, p = ctx.frame, ctx.params
    purpose = "try untouched directions"
    untouched = allowed & (f.follow_ons == 0)
    if ctx.clustering is None:
        note = "no clusters (too few embeddings): untouched nodes ranked by U without cluster sizes"
        return _fill(ctx, "explore_novel", purpose, np.flatnonzero(untouched), note)
    pool = np.flatnonzero(untouched & (ctx.size > 0) & (ctx.size <= p.novel_cluster))
    return _fill(ctx, "explore_novel", purpose, pool, None)


def _fill(ctx: _Context, name: str, purpose: str, pool: np.ndarray, note: str | None) -> tuple[Slot, np.ndarray]:
    """The slot of the ``per_slot`` nodes of ``pool`` of highest U."""
    nodes, scores, rho = ctx.top(pool, ctx.params.per_slot)
    return _slot(ctx, name, purpose, nodes, scores, rho, note)


def _fill_in_order(
    ctx: _Context, name: str, purpose: str, nodes: np.ndarray, note: str | None
) -> tuple[Slot, np.ndarray]:
    """The slot of ``nodes`` in the order given, each with its U."""
    rho = ctx.rho(nodes)
    return _slot(ctx, name, purpose, nodes, ctx.ucb(nodes, rho, ctx.params.d), rho, note)


def _slot(
    ctx: _Context, name: str, purpose: str, nodes: np.ndarray, scores: np.ndarray, rho: np.ndarray, note: str | None
) -> tuple[Slot, np.ndarray]:
    suggestions = tuple(_suggestion(ctx, name, int(v), float(u), int(r)) for v, u, r in zip(nodes, scores, rho))
    if not suggestions and note is None:
        note = "no node qualifies for this slot"
    return Slot(name, purpose, suggestions, note), nodes


def _suggestion(ctx: _Context, name: str, node: int, ucb: float, rho: int) -> Suggestion:
    f = ctx.frame
    row = f.rows([node])[0]
    source = "own" if f.scored[node] else ("inherited" if f.has_metric and f.q_inherited[node] > 0 else "none")
    if ctx.stepped is not None and ctx.stepped[node]:
        source = "parent"
    q = float(f.q_inherited[node])
    cluster = int(ctx.cluster[node]) if ctx.cluster[node] >= 0 else None
    size = int(ctx.size[node]) if cluster is not None else None
    duplicates = rho if rho >= 0 else None
    parts = [
        f"quality {round(100 * q)}%"
        + {
            "own": "",
            "inherited": " (inherited from its first-parent line)",
            "parent": " (its parent's: one step away from it, worth another)",
            "none": " (no metric)",
        }[source],
        f"{int(f.follow_ons[node])} follow-on(s)",
    ]
    if row["metric"] is not None:
        parts.insert(1, f"metric {row['metric']:g}")
    if cluster is not None:
        parts.append(f"cluster {cluster} of size {size}")
    action, replicates = "build", None
    if ctx.replicas is not None and f.scored[node]:
        replicates = int(ctx.replicas.count[node])
        parts.append(f"mean of {replicates + 1} draw(s)")
        if name == "exploit" and ctx.replicas.within_noise(node, ctx.params) and replicates < ctx.params.replicates:
            action = "replicate"
            parts.append("within the noise of the best: replicate it under another seed before building on it")
    if duplicates is not None:
        parts.append(f"{duplicates} near-duplicate(s)")
    if f.status[node] == "contested" and f.graph.root.ranks:
        action = "verify"
        parts.append(
            f"verification: contested: verify it (git agora verify {row['sha'][:12]}) instead of building on it: "
            "it does not lead until the trust root's rerun or more reruns settle it"
        )
    elif f.status[node] == "contested":
        parts.append("verification: contested: settle it with a rerun (git agora verify) before building on it")
    elif f.status[node] != "unverified":
        parts.append(f"verification: {f.status[node]}")
    reason = ", ".join(parts) + f"; U = {ucb:.1f}"
    return Suggestion(
        row["sha"],
        row["title"],
        row["account"],
        row["metric"],
        str(f.status[node]),
        ucb,
        q,
        source,
        int(f.follow_ons[node]),
        cluster,
        size,
        duplicates,
        reason,
        action=action,
        replicates=replicates,
    )


@dataclass(frozen=True, eq=False)
class Replicas:
    """Replicates read as extra draws of their original (module docstring): ``frame`` is the frame with
    the metric of each original replaced by its mean over draws, Q recomputed from it, and replicates
    neither scored nor buildable; ``count`` is each node's number of replicates that count: its own
    author's, and another account's once confirmed (so that nobody moves another's standing with an
    unchecked draw)."""

    frame: Frame
    count: np.ndarray

    @classmethod
    def of(cls, frame: Frame) -> Replicas:
        parent = frame.first_parent
        replica = tag_mask(frame.table, REPLICATE) & frame.scored & (parent >= 0)
        replica[replica] &= frame.scored[parent[replica]]
        originals = parent[replica]
        while replica[originals].any():  # a replicate of a replicate is another draw of the first original
            originals = np.where(replica[originals], parent[originals], originals)
        draws = np.flatnonzero(replica)
        accounts = frame.table["account"]
        own = pc.fill_null(pc.equal(accounts.take(draws), accounts.take(originals)), False).to_numpy(
            zero_copy_only=False
        )
        counts = own | (frame.status[draws] == "confirmed")  # another account's draw counts once confirmed
        draws, originals = draws[counts], originals[counts]
        count = np.bincount(originals, minlength=frame.n)
        total = np.where(frame.scored, frame.metric, 0.0)
        np.add.at(total, originals, frame.metric[draws])
        mean = np.where(frame.scored, total / (count + 1), np.nan)
        scored = frame.scored & ~replica
        mean[replica] = np.nan
        q = quality(mean, scored, frame.direction)
        averaged = replace(
            frame,
            metric=mean,
            scored=scored,
            buildable=frame.buildable & ~replica,
            q=q,
            q_inherited=inherit_quality(q, parent),
        )
        return cls(averaged, count)

    def within_noise(self, node: int, params: UcbParams) -> bool:
        """Whether the node's standing among the leaders is within noise: it lies within
        ``replicate_within`` tolerances of the best mean, and so does at least one other original (a
        lone leader has nobody to be told apart from)."""
        f = self.frame
        loss = f.loss()
        edge = np.nanmin(loss[f.scored]) + params.replicate_within * f.tolerance
        return bool((loss[f.scored] <= edge).sum() >= 2 and loss[node] <= edge)
