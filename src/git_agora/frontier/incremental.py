"""The frame carried from one analysis to the next (`FrameState`): what `frame.build_frame` derived, kept
so that a warm analysis with nothing new reuses it and k new contributions cost O(k) lookups and
sweeps plus whole-array numpy passes, instead of the graph, the verdicts and the evidence rebuilt.

A state names what it was computed from: ``key`` (the frontier's settings and the reader's trust root,
``state_key``), the node shas in node order, their ``log_seq`` and the shas its nodes name as parents or
targets that were no nodes (``dangling``). ``restore`` checks those against the contributions now:

- the same nodes, same keys: the frame as it was (nothing recomputed but what a `Frame` holds by
  reference: the graph's table, the only copy of which is the caller's);
- the earlier nodes are all still nodes, in the same order, and the new ones are not verifications (no
  verdict, target or ``verification`` tag), none of them is a parent or target an earlier node named
  (``dangling``), and no witness record counts (``Root.witnessed`` is None): the new nodes are added
  (``extend``), which gives the frame a cold build gives: their edges and targets
  resolved by binary search in the sorted shas (``order``), effective times pushed down their own
  edges only (no earlier node is their child), evidence added edge by edge in the order the batch
  count adds it (so the floating-point sums are the same), n(v) updated from the earlier counts
  (``followons.updated``), verdicts, standing and statuses unchanged (no new verdict; a new account's
  standing is whether the trust root names it). New nodes dated before the newest earlier one (a
  clock behind, a log pushed late: they sort among the earlier nodes) are added as if they came last,
  then every node is put in its place (``_reordered``): node references renumbered, account codes in
  order of first appearance, and the evidence of their parents summed again in the order a cold build
  adds it. Log positions are read from the rows each time (an older row of an account moves its later
  ones; nothing derived depends on them but the order of an account's own verdicts, which they keep);
- anything else (a verdict, an amendment or identity that changed the root, an earlier node that is
  gone or moved): None, and the caller builds the frame cold.

What stays O(n) on the extend path, and why that is fine: the prefix check (a comparison of the sha
bytes, memory speed; where new rows sort among the earlier ones, the sha keys compared in node order
and the node arrays permuted: numpy passes), the quality percentiles when a new result is scored (they are
ranks among every scored value: one sort of the scored metrics, then the first-parent pointer jumping
of inherited quality), concatenating node arrays, and the views that rank a whole column (top-k).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import HYPOTHESIS, SETUP
from .evidence import STATUSES, WEIGHT_COLUMNS, Verdicts, node_weights, remember_verdicts, verdicts_of
from .followons import FollowOns, updated
from .frame import Frame, inherit_quality, int_column, quality
from .graph import Graph, combined, kind_mask, tag_mask, valid_rows
from .root import Root
from .scored import buildable_mask, in_epoch, is_verification, primary_metric
from .witness import UNWITNESSED

STATE_VERSION = 2  # 2: the flags of the kinds (buildable_kind, own_work, uncounted)
FLAGS: tuple[str, ...] = ("hypothesis", "verification", "buildable_kind", "own_work", "uncounted", "weightless")
FLAGS += ("buildable", "scored", "earlier_epoch", "qualifying")


@dataclass(frozen=True, eq=False)
class FrameState:
    """A frame's derived arrays (module docstring). ``arrays``: node arrays (``n`` long), edges
    (``child``, ``parent``), the verdicts (``v_*``), per account code (``a_*``)."""

    key: str
    sha: pa.Array  # node shas, node order
    dangling: pa.Array  # parent and target shas of nodes that are no node (sorted, unique)
    accounts: pa.Array  # account names by code (a null account is "")
    arrays: Mapping[str, np.ndarray]
    ranked: bool = False

    @property
    def n(self) -> int:
        return len(self.sha)


def state_key(
    direction: str, tolerance: float, weights: Mapping[str, float] | None, root: Root, extra: str = ""
) -> str:
    """What a state is valid for: the frontier's settings and the reader's trust root."""
    witnessed = None
    if root.witnessed is not None:
        digest = hashlib.sha256()
        for buffer in combined(root.witnessed.shas).buffers():
            if buffer is not None:
                digest.update(memoryview(buffer))
        digest.update(np.ascontiguousarray(root.witnessed.times, dtype=np.int64).tobytes())
        witnessed = [digest.hexdigest(), int(root.witnessed.latest)]
    body = {
        "version": STATE_VERSION,
        "direction": direction,
        "tolerance": float(tolerance or 0.0),
        "weights": sorted((str(k), float(v)) for k, v in (weights or {}).items()),
        "accounts": sorted(root.accounts),
        "epoch": None if root.epoch is None else sorted(root.epoch),
        "witnesses": sorted(root.witnesses),
        "witnessed": witnessed,
        "ranks": bool(root.ranks),
        "extra": extra,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


# --- capture --------------------------------------------------------------------------------------


def capture(frame: Frame, key: str, qualifying: np.ndarray, dangling: pa.Array | None = None) -> FrameState:
    """The state of ``frame`` (``qualifying``: the follow-on work mask its n(v) were counted with;
    ``dangling``: see ``dangling_of``, computed when not given)."""
    graph = frame.graph
    verdicts = verdicts_of(graph)
    flags = _pack(
        {
            "hypothesis": frame.hypothesis,
            "verification": frame.verification,
            "buildable_kind": frame.buildable_kind,
            "own_work": frame.own_work,
            "uncounted": frame.uncounted,
            "weightless": frame.weightless,
            "buildable": frame.buildable,
            "scored": frame.scored,
            "earlier_epoch": frame.earlier_epoch,
            "qualifying": qualifying,
        }
    )
    shas = combined(graph.table["sha"])
    accounts = pa.array([], pa.string())
    if graph.n:  # the codes of `graph.build_graph`: first appearance in node order
        accounts = pc.dictionary_encode(pc.fill_null(combined(graph.table["account"]), "")).dictionary
    arrays = {
        "log_seq": frame.log_seq,
        "account": graph.account.astype(np.int32),
        "first_parent": frame.first_parent.astype(np.int32),
        "target": (graph.target if graph.target is not None else np.full(graph.n, -1)).astype(np.int32),
        "effective": frame.timestamp,
        "witness_time": frame.witness_time,
        "priority": frame.priority,
        "follow_ons": frame.follow_ons,
        "score": frame.score,
        "children": frame.children.astype(np.int32),
        "status": _status_codes(frame.status),
        "confirmations": frame.confirmations.astype(np.int32),
        "partials": frame.partials.astype(np.int32),
        "failures": frame.failures.astype(np.int32),
        "q": frame.q,
        "q_inherited": frame.q_inherited,
        "flags": flags,
        "child": graph.child.astype(np.int32),
        "parent": graph.parent.astype(np.int32),
        "order": _sha_order(shas),
        "v_node": verdicts.node,
        "v_target": verdicts.target,
        "v_verdict": _verdict_codes(verdicts.verdict),
        "v_current": verdicts.current,
        "v_verifier": verdicts.verifier,
        "v_run_backed": verdicts.run_backed,
        "v_outranked": verdicts.outranked if verdicts.outranked is not None else np.zeros(len(verdicts.node), bool),
        "a_standing": verdicts.standing,
        "a_trusted": verdicts.trusted if verdicts.trusted is not None else verdicts.standing,
    }
    if dangling is None:
        dangling = dangling_of(graph)
    return FrameState(key, shas, dangling, accounts, arrays, verdicts.ranked)


def dangling_of(graph: Graph) -> pa.Array:
    """The parent and target shas the graph's nodes name that are no node (sorted, unique)."""
    flat = pc.list_flatten(combined(graph.table["parents"])).cast(pa.string())
    targets = combined(graph.table["target"]).cast(pa.string()).drop_null()
    named = pa.concat_arrays([flat, targets])
    missing = named.filter(pa.array(graph.lookup(named) < 0))
    return pc.unique(missing).sort() if len(missing) else pa.array([], pa.string())


# --- restore --------------------------------------------------------------------------------------


def restore(
    state: FrameState,
    contributions: pa.Table,
    key: str,
    *,
    direction: str,
    tolerance: float,
    weights: Mapping[str, float] | None,
    root: Root,
) -> tuple[Frame, FrameState] | None:
    """The frame of ``contributions`` from ``state`` and the state to keep next (the same object when
    nothing was new), or None when it must be built cold (module docstring)."""
    if state.key != key:
        return None
    table = valid_rows(contributions)
    n, old = table.num_rows, state.n
    if n < old:
        return None
    where = _earlier_places(table["sha"], state.sha)
    if where is None:
        return None
    log_seq = int_column(table["log_seq"], -1)
    if n == old:
        if np.array_equal(log_seq, state.arrays["log_seq"]):
            return _frame(state, contributions, table, direction, tolerance, root), state
        kept = replace(state, arrays={**state.arrays, "log_seq": log_seq})  # a row before them that is no node
        return _frame(kept, contributions, table, direction, tolerance, root), kept
    shas = combined(table["sha"])
    is_new = np.ones(n, dtype=bool)
    is_new[where] = False
    new = table.filter(pa.array(is_new)) if old else table
    if root.witnessed is not None or is_verification(new).any():
        return None
    if len(state.dangling) and pc.any(pc.is_in(combined(new["sha"]), value_set=state.dangling)).as_py():
        return None
    if old == 0 or where[-1] == old - 1:  # the new nodes all come after the earlier ones
        grown = extend(state, new, shas, log_seq, weights, direction, root, lambda: primary_metric(table))
    else:
        grown = _inserted(state, table, new, shas, log_seq, where, is_new, weights, direction, root)
    if grown is None:
        return None
    return _frame(grown, contributions, table, direction, tolerance, root), grown


def _earlier_places(column: pa.ChunkedArray | pa.Array, earlier: pa.Array) -> np.ndarray | None:
    """The node number now of each earlier node, in their order (increasing: canonical order is a total
    order that new rows do not change), or None when one is no longer a node. The shas are joined into
    one array only when the earlier ones are not all first (a warm analyze with nothing new copies none)."""
    count = len(earlier)
    if _same_prefix(column, earlier):
        return np.arange(count, dtype=np.int64)
    shas = combined(column)
    now, before = _keys(shas), _keys(earlier)
    if now is not None and before is not None and now.dtype == before.dtype:
        return _merged_places(now, before)
    found = pc.index_in(earlier, value_set=shas)
    if found.null_count:
        return None
    where = np.asarray(found.to_numpy(zero_copy_only=False), dtype=np.int64)
    return where if (np.diff(where) > 0).all() else None


def _merged_places(now: np.ndarray, before: np.ndarray) -> np.ndarray | None:
    """``_earlier_places`` of sha keys, both in node order: the earlier ones are the nodes now with the
    new ones taken out, so each mismatch from the start is a new node (memory-speed comparisons in
    chunks that start small after each mismatch and double up to `MERGE_CHUNK` keys: linear in the
    nodes plus the new ones, however close together they sit); None when more mismatch than there are
    new nodes (an earlier node is gone or moved)."""
    extra = len(now) - len(before)
    inserted: list[int] = []
    at, size = 0, 64  # at: in `before`; its key sits at `at + len(inserted)` now while they agree
    while at < len(before):
        shift = len(inserted)
        end = min(at + size, len(before))
        differ = np.flatnonzero(now[at + shift : end + shift] != before[at:end])
        if not len(differ):
            at, size = end, min(2 * size, MERGE_CHUNK)
            continue
        if shift == extra:
            return None
        at += int(differ[0])
        inserted.append(at + shift)
        size = 64
    where = np.delete(np.arange(len(now), dtype=np.int64), inserted)[: len(before)]
    return where if np.array_equal(now[where], before) else None


MERGE_CHUNK = 1 << 16


def _inserted(
    state: FrameState,
    table: pa.Table,
    new: pa.Table,
    shas: pa.Array,
    log_seq: np.ndarray,
    where: np.ndarray,
    is_new: np.ndarray,
    weights: Mapping[str, float] | None,
    direction: str,
    root: Root,
) -> FrameState | None:
    """``state`` with new nodes some of which sort among its own (dated before the newest earlier node:
    a clock behind, a log pushed late). Extended as if they came last (``extend``), then put in node
    order (``_reordered``): what depends on node order is redone as a cold build does it."""
    placed = np.concatenate([where, np.flatnonzero(is_new)])  # node number now of each node as extended
    appended = pa.concat_arrays([state.sha, combined(new["sha"])])
    metric = primary_metric(table)
    grown = extend(state, new, appended, log_seq[placed], weights, direction, root, lambda: metric[placed])
    if grown is None:
        return None
    return _reordered(grown, placed, table, shas, is_new, weights)


# node arrays that only move with their nodes (q and q_inherited: ranks of values, the same in any order)
_MOVED_ALONG: tuple[str, ...] = ("log_seq", "effective", "witness_time", "priority", "q", "q_inherited")
_MOVED_ALONG += ("follow_ons", "children", "status", "confirmations", "partials", "failures")


def _reordered(
    grown: FrameState,
    placed: np.ndarray,
    table: pa.Table,
    shas: pa.Array,
    is_new: np.ndarray,
    weights: Mapping[str, float] | None,
) -> FrameState:
    """A state whose node ``i`` is node ``placed[i]`` now, in node order, as a cold build gives it:
    node references renumbered, edges sorted by (child, parent), account codes in order of first
    appearance and the verdicts in their order, the evidence of the parents of new nodes summed again
    in edge order."""
    a = grown.arrays
    n = len(placed)
    back = np.empty(n, dtype=np.int64)  # node now -> node as extended
    back[placed] = np.arange(n)

    def renumbered(nodes: np.ndarray) -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        return np.where(nodes >= 0, placed[np.maximum(nodes, 0)], -1)

    # accounts: codes by first appearance in node order (a new node can come before its account's
    # earlier first, and so before other accounts' firsts)
    appearing = np.argsort(_first_places(a["account"], placed, n - int(is_new.sum())), kind="stable")
    recode = np.zeros(len(grown.accounts), dtype=np.int64)
    recode[appearing] = np.arange(len(appearing))
    account = recode[a["account"].astype(np.int64)[back]]

    # edges sorted by (child, parent): the earlier ones still are (their nodes keep their order)
    width = max(n, 1)
    edge_keys = renumbered(a["child"]) * width + renumbered(a["parent"])
    added = np.asarray(a["child"]) >= n - int(is_new.sum())  # the new nodes' edges, as extended
    earlier_keys, new_keys = edge_keys[~added], np.sort(edge_keys[added])
    edge_keys = np.insert(earlier_keys, np.searchsorted(earlier_keys, new_keys), new_keys)
    child, parent = edge_keys // width, edge_keys % width

    # verdicts in (verifier, target) order, as before within each pair (their times did not change)
    verifier, v_target = recode[np.asarray(a["v_verifier"], np.int64)], renumbered(a["v_target"])
    by_verifier = np.lexsort((np.arange(len(verifier)), v_target, verifier))

    flags = _unpack(a["flags"])
    flags = {name: flags[name][back] for name in FLAGS}
    score = np.asarray(a["score"], np.float64)[back]
    _sum_again(score, table, is_new, child, parent, account, flags["weightless"], weights)
    arrays = {
        **{name: a[name][back] for name in _MOVED_ALONG},
        "account": account.astype(np.int32),
        "first_parent": renumbered(a["first_parent"][back]).astype(np.int32),
        "target": renumbered(a["target"][back]).astype(np.int32),
        "score": score,
        "flags": _pack(flags),
        "child": child.astype(np.int32),
        "parent": parent.astype(np.int32),
        "order": placed[np.asarray(a["order"], np.int64)].astype(np.int32),
        "v_node": renumbered(a["v_node"])[by_verifier],
        "v_target": v_target[by_verifier],
        "v_verifier": verifier[by_verifier],
        **{
            name: np.asarray(a[name])[by_verifier] for name in ("v_verdict", "v_current", "v_run_backed", "v_outranked")
        },
        "a_standing": np.asarray(a["a_standing"])[appearing],
        "a_trusted": np.asarray(a["a_trusted"])[appearing],
    }
    arrays = {name: np.asarray(value).astype(np.asarray(a[name]).dtype, copy=False) for name, value in arrays.items()}
    return FrameState(grown.key, shas, grown.dangling, grown.accounts.take(pa.array(appearing)), arrays, grown.ranked)


def _first_places(codes: np.ndarray, placed: np.ndarray, earlier: int) -> np.ndarray:
    """Per account code, the node number now of its first node: codes as extended (``codes``, the
    earlier nodes' by first appearance, then the new nodes'), ``placed`` each node's number now."""
    codes = np.asarray(codes, dtype=np.int64)
    first = np.full(int(codes.max()) + 1 if len(codes) else 0, len(placed), dtype=np.int64)
    old = codes[:earlier]
    if len(old):  # code c first appears where the running maximum of the codes reaches c
        rising = np.flatnonzero(np.r_[True, np.diff(np.maximum.accumulate(old)) > 0])
        first[old[rising]] = placed[rising]
    np.minimum.at(first, codes[earlier:], placed[earlier:])
    return first


def _sum_again(
    score: np.ndarray,
    table: pa.Table,
    is_new: np.ndarray,
    child: np.ndarray,
    parent: np.ndarray,
    account: np.ndarray,
    weightless: np.ndarray,
    weights: Mapping[str, float] | None,
) -> None:
    """The evidence of each parent of a new node summed again over its children in edge order, as the
    cold build's bincount sums it (a new child among older ones changes the order of the additions)."""
    touched = np.unique(parent[is_new[child]])
    if not len(touched):
        return
    edges = np.flatnonzero(np.isin(parent, touched) & (account[child] != account[parent]))
    children = np.unique(child[edges])
    none = np.zeros(0, np.int64)
    weighed = table.select(WEIGHT_COLUMNS).take(pa.array(children))  # not every column of a million rows
    weight = node_weights(Graph(weighed, account[children], none, none), weights)
    weight[weightless[children]] = 0.0
    at = np.searchsorted(children, child[edges])
    sums = np.bincount(parent[edges], weights=weight[at], minlength=len(score))
    score[touched] = sums[touched]


def extend(
    state: FrameState,
    new: pa.Table,
    shas: pa.Array,
    log_seq: np.ndarray,
    weights: Mapping[str, float] | None,
    direction: str,
    root: Root,
    metric: Callable[[], np.ndarray],
) -> FrameState | None:
    """``state`` with the ``new`` rows added after its own nodes (``restore`` checked they may be):
    ``shas`` and ``log_seq`` of every node in that order, ``metric()`` the primary metric of each (asked
    only when a new result is scored: its rank moves every other)."""
    a = state.arrays
    old, n = state.n, len(shas)
    k = n - old
    order = _grown_order(a["order"], shas, old)
    if order is None:
        return None

    # accounts: codes in order of first appearance, as dictionary_encode gives them cold
    names = pc.fill_null(combined(new["account"]), "")
    known = np.asarray(pc.fill_null(pc.index_in(names, value_set=state.accounts), -1).to_numpy(), dtype=np.int64)
    accounts = state.accounts
    if (known < 0).any():
        unseen = names.filter(pa.array(known < 0))
        fresh = pc.unique(unseen)
        known[known < 0] = len(accounts) + pc.index_in(unseen, value_set=fresh).to_numpy()
        accounts = pa.concat_arrays([accounts, fresh])
    account = np.concatenate([a["account"].astype(np.int64), known])

    # edges of the new nodes, sorted by (child, parent) after the earlier ones; first parents
    parents = combined(new["parents"])
    flat = pc.list_flatten(parents).cast(pa.string())
    parent = _find(shas, order, flat)
    child = old + pc.list_parent_indices(parents).to_numpy().astype(np.int64)
    first = np.full(k, -1, dtype=np.int64)
    if len(child):
        starts = np.flatnonzero(np.r_[True, child[1:] != child[:-1]])
        first[child[starts] - old] = parent[starts]
        first[first == np.arange(old, n)] = -1
    keep = (parent >= 0) & (parent != child)
    edge_keys = np.unique(child[keep] * max(n, 1) + parent[keep])
    new_child, new_parent = edge_keys // max(n, 1), edge_keys % max(n, 1)
    dangling = state.dangling
    if (parent < 0).any():
        dangling = pc.unique(pa.concat_arrays([dangling, flat.filter(pa.array(parent < 0))])).sort()

    # effective times: their own time, or one second after a parent's, pushed down the new edges only
    effective = np.concatenate(
        [a["effective"], np.asarray(pc.fill_null(new["timestamp"], 0).to_numpy(zero_copy_only=False), np.int64)]
    )
    _push_later(effective, new_parent, new_child)

    # evidence: weights of the new children added edge by edge (as the batch bincount adds them)
    slice_graph = Graph(new, known, np.zeros(0, np.int64), np.zeros(0, np.int64))
    weight = node_weights(slice_graph, weights)
    cross = account[new_child] != account[new_parent]
    score = a["score"].astype(np.float64).copy()
    score = np.concatenate([score, np.zeros(k)])
    np.add.at(score, new_parent[cross], weight[new_child[cross] - old])
    children = np.concatenate([a["children"].astype(np.int64), np.zeros(k, np.int64)])
    children += np.bincount(new_parent, minlength=n)

    flags = _unpack(a["flags"])
    propagating = ~kind_mask(new, lambda kind: not kind.propagates)
    qualifying = np.concatenate([flags["qualifying"], propagating])  # no new verification: none failed or discarded

    # verdicts are those of before; a new account has standing when the trust root names it
    trusted_now = np.zeros(len(accounts) - len(state.accounts), dtype=bool)
    if len(trusted_now):
        fresh_names = accounts.slice(len(state.accounts)).to_pylist()
        setups = set(pc.fill_null(names, "").filter(pa.array(tag_mask(new, SETUP))).to_pylist())
        trusted_now = np.array([x in root.accounts or x in setups for x in fresh_names], dtype=bool)
    standing = np.concatenate([a["a_standing"], trusted_now])
    trusted = np.concatenate([a["a_trusted"], trusted_now])

    # the new nodes' masks and metric
    status_new = np.zeros(k, dtype=np.int8)  # unverified: no verdict is on them
    buildable_kind = ~kind_mask(new, lambda kind: not kind.buildable)
    buildable = buildable_mask(new, STATUSES[status_new], buildable_kind)
    metric_new = primary_metric(new)
    measured = buildable & ~np.isnan(metric_new)
    current = in_epoch(new, root.epoch)
    grown_flags = {
        "hypothesis": tag_mask(new, HYPOTHESIS),
        "verification": np.zeros(k, bool),
        "buildable_kind": buildable_kind,
        "own_work": ~kind_mask(new, lambda kind: not kind.work),
        "uncounted": kind_mask(new, lambda kind: not kind.counted),
        "weightless": np.zeros(k, bool),
        "buildable": buildable,
        "scored": measured & current,
        "earlier_epoch": measured & ~current,
    }
    flags = {name: np.concatenate([flags[name], grown_flags[name]]) for name in grown_flags} | {
        "qualifying": qualifying
    }
    first_parent = np.concatenate([a["first_parent"].astype(np.int64), first])
    if grown_flags["scored"].any():  # ranks among every scored value: all of them move
        q = quality(metric(), flags["scored"], direction)
        q_inherited = inherit_quality(q, first_parent)
    else:
        q = np.concatenate([a["q"], np.full(k, np.nan)])
        q_inherited = _inherit_new(a["q_inherited"], first, old)

    graph = Graph(
        pa.table({"sha": shas}),  # what the follow-on update reads: the nodes' shas
        account,
        np.concatenate([a["child"].astype(np.int64), new_child]),
        np.concatenate([a["parent"].astype(np.int64), new_parent]),
        first_parent,
        np.concatenate([a["target"].astype(np.int64), np.full(k, -1, np.int64)]),
    )
    previous = FollowOns(state.sha, _unpack(a["flags"])["qualifying"], a["follow_ons"])
    follow = updated(graph, qualifying, previous)
    if follow is None:
        return None  # more changes than an update is worth: the cold build counts them in one batch

    zeros = np.zeros(k, np.int32)
    arrays = {
        "log_seq": log_seq,
        "account": account.astype(np.int32),
        "first_parent": first_parent.astype(np.int32),
        "target": np.concatenate([a["target"], np.full(k, -1, np.int32)]),
        "effective": effective,
        "witness_time": np.full(n, UNWITNESSED, np.int64),
        "priority": effective,
        "follow_ons": follow,
        "score": score,
        "children": children.astype(np.int32),
        "status": np.concatenate([a["status"], status_new]),
        "confirmations": np.concatenate([a["confirmations"], zeros]),
        "partials": np.concatenate([a["partials"], zeros]),
        "failures": np.concatenate([a["failures"], zeros]),
        "q": q,
        "q_inherited": q_inherited,
        "flags": _pack(flags),
        "child": graph.child.astype(np.int32),
        "parent": graph.parent.astype(np.int32),
        "order": order,
        **{name: a[name] for name in a if name.startswith("v_")},
        "a_standing": standing,
        "a_trusted": trusted,
    }
    return FrameState(state.key, shas, dangling, accounts, arrays, state.ranked)


def _frame(
    state: FrameState, contributions: pa.Table, table: pa.Table, direction: str, tolerance: float, root: Root
) -> Frame:
    """The `Frame` a state describes, over the valid rows `table` of `contributions`."""
    a = state.arrays
    witnessed = a["witness_time"] != UNWITNESSED
    table = (
        table.append_column("effective_time", pa.array(a["effective"], pa.int64()))
        .append_column("witness_time", pa.array(a["witness_time"], pa.int64(), mask=~witnessed))
        .append_column("priority", pa.array(a["priority"], pa.int64()))
    )
    graph = Graph(
        table,
        a["account"].astype(np.int64),
        a["child"].astype(np.int64),
        a["parent"].astype(np.int64),
        a["first_parent"].astype(np.int64),
        a["target"].astype(np.int64),
        root,
    )
    remember_verdicts(
        graph,
        Verdicts(
            np.asarray(a["v_node"], np.int64),
            np.asarray(a["v_target"], np.int64),
            _VERDICT_TEXTS[np.asarray(a["v_verdict"], np.int64)],
            np.asarray(a["v_current"], bool),
            np.asarray(a["v_verifier"], np.int64),
            np.asarray(a["v_run_backed"], bool),
            np.asarray(a["a_standing"], bool),
            np.asarray(a["v_outranked"], bool),
            np.asarray(a["a_trusted"], bool),
            state.ranked,
        ),
    )
    flags = _unpack(a["flags"])
    return Frame(
        contributions=contributions,
        graph=graph,
        direction=direction,
        tolerance=float(tolerance or 0.0),
        timestamp=np.asarray(a["effective"], np.int64),
        priority=np.asarray(a["priority"], np.int64),
        log_seq=np.asarray(a["log_seq"], np.int64),
        metric=primary_metric(table),
        hypothesis=flags["hypothesis"],
        verification=flags["verification"],
        buildable_kind=flags["buildable_kind"],
        own_work=flags["own_work"],
        uncounted=flags["uncounted"],
        witness_time=np.asarray(a["witness_time"], np.int64),
        first_parent=a["first_parent"].astype(np.int64),
        follow_ons=np.asarray(a["follow_ons"], np.int64),
        score=np.asarray(a["score"], np.float64),
        children=a["children"].astype(np.int64),
        status=STATUSES[np.asarray(a["status"], np.int64)],
        confirmations=a["confirmations"].astype(np.int64),
        partials=a["partials"].astype(np.int64),
        failures=a["failures"].astype(np.int64),
        weightless=flags["weightless"],
        buildable=flags["buildable"],
        scored=flags["scored"],
        earlier_epoch=flags["earlier_epoch"],
        q=np.asarray(a["q"], np.float64),
        q_inherited=np.asarray(a["q_inherited"], np.float64),
    )


# --- helpers --------------------------------------------------------------------------------------

_VERDICT_TEXTS = np.array([None, "confirmed", "partial", "failed"], dtype=object)


def _verdict_codes(verdict: np.ndarray) -> np.ndarray:
    codes = np.zeros(len(verdict), np.int8)
    for code, text in enumerate(_VERDICT_TEXTS.tolist()):
        if text is not None:
            codes[verdict == text] = code
    if len(verdict) and not all(t in ("confirmed", "partial", "failed") for t in set(verdict.tolist())):
        raise ValueError("a usable verdict is confirmed, partial or failed")
    return codes


def _status_codes(status: np.ndarray) -> np.ndarray:
    codes = np.zeros(len(status), np.int8)
    for code, text in enumerate(STATUSES.tolist()):
        codes[status == text] = code
    return codes


def _pack(flags: Mapping[str, np.ndarray]) -> np.ndarray:
    packed = np.zeros(len(next(iter(flags.values()))), np.uint16)
    for bit, name in enumerate(FLAGS):
        packed |= np.asarray(flags[name], dtype=bool).astype(np.uint16) << bit
    return packed


def _unpack(packed: np.ndarray) -> dict[str, np.ndarray]:
    packed = np.asarray(packed, np.uint16)
    return {name: (packed >> bit) & 1 == 1 for bit, name in enumerate(FLAGS)}


def _same_prefix(shas: pa.ChunkedArray | pa.Array, earlier: pa.Array) -> bool:
    """Are ``earlier`` the first shas of ``shas``? (One comparison of the bytes when both are plain.)"""
    count = len(earlier)
    if count > len(shas):
        return False
    if count == 0:
        return True
    return bool(pc.all(pc.equal(shas.slice(0, count), earlier)).as_py())


def _keys(shas: pa.Array) -> np.ndarray | None:
    """The shas as one fixed-width bytes array (zero copy), None when their lengths differ."""
    if len(shas) == 0:
        return np.zeros(0, dtype="S1")
    if shas.null_count or shas.type != pa.string():
        return None
    offsets = np.frombuffer(shas.buffers()[1], dtype=np.int32, count=len(shas) + 1, offset=shas.offset * 4)
    width = int(offsets[1] - offsets[0])
    if width <= 0 or int(offsets[-1] - offsets[0]) != width * len(shas):
        return None
    if not (np.diff(offsets) == width).all():
        return None
    data = np.frombuffer(shas.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return data.view(f"S{width}")


def _sha_order(shas: pa.Array) -> np.ndarray:
    """Node numbers sorted by sha (what ``_find`` searches); empty when the shas are not one width."""
    keys = _keys(shas)
    return np.zeros(0, np.int32) if keys is None else np.argsort(keys, kind="stable").astype(np.int32)


def _grown_order(order: np.ndarray, shas: pa.Array, old: int) -> np.ndarray | None:
    """``order`` with the nodes from ``old`` on inserted in their places (None: shas of mixed width)."""
    keys = _keys(shas)
    if keys is None or len(order) != old:
        return None
    added = np.arange(old, len(keys), dtype=np.int64)
    added = added[np.argsort(keys[old:], kind="stable")]
    places = np.searchsorted(keys[:old], keys[added], sorter=order)
    return np.insert(order, places, added).astype(np.int32)


def _find(shas: pa.Array, order: np.ndarray, wanted: pa.Array) -> np.ndarray:
    """Node of each of ``wanted`` (-1 where none): binary search in the sorted shas."""
    keys = _keys(shas)
    if not len(wanted):
        return np.zeros(0, np.int64)
    if keys is None or len(order) != len(keys):
        found = pc.index_in(wanted, value_set=shas)
        return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    width = keys.dtype.itemsize
    query = np.array([s if s is not None and len(s) == width else "" for s in wanted.to_pylist()], dtype=f"S{width}")
    at = np.searchsorted(keys, query, sorter=order)
    at = np.minimum(at, len(order) - 1)
    node = order[at].astype(np.int64)
    return np.where(keys[node] == query, node, -1) if len(order) else np.full(len(query), -1, np.int64)


def _push_later(times: np.ndarray, parents: np.ndarray, children: np.ndarray) -> None:
    """Raise each child's time to one second after its parents' along these edges, to the fixed point
    (``graph.effective_times``, for edges into new nodes only)."""
    edges = np.arange(len(children))
    while len(edges):
        late = times[parents[edges]] >= times[children[edges]]
        edges = edges[late]
        if not len(edges):
            return
        np.maximum.at(times, children[edges], times[parents[edges]] + 1)
        moved = np.isin(parents, np.unique(children[edges]))
        edges = np.flatnonzero(moved)


def _inherit_new(q_inherited: np.ndarray, first: np.ndarray, old: int) -> np.ndarray:
    """Inherited quality of the new nodes (none scored): that of their first parent, followed through
    the new nodes to an earlier one (pointer jumping), else 0."""
    k = len(first)
    value = np.zeros(k)
    before = first < old  # an earlier node, or none (-1)
    value[before & (first >= 0)] = q_inherited[first[before & (first >= 0)]]
    hop = np.where(before, np.arange(k), first - old)
    while not before[hop].all():
        hop = np.where(before[hop], hop, hop[hop])
    return np.concatenate([q_inherited, value[hop]])


_NODE_ARRAYS: tuple[str, ...] = (
    "log_seq",
    "account",
    "first_parent",
    "target",
    "effective",
    "witness_time",
    "priority",
)
_NODE_ARRAYS += ("follow_ons", "score", "children", "status", "confirmations", "partials", "failures", "q")
_NODE_ARRAYS += ("q_inherited", "flags", "order")


def fits(state: FrameState) -> bool:
    """Are a state's arrays of the lengths its nodes and accounts give, and do its node and account
    references point inside them? (A file damaged or edited by hand must not make a reader index out
    of range: such a state counts as missing.)"""
    a, n, m = state.arrays, state.n, len(state.accounts)
    try:
        if any(len(a[name]) != n for name in _NODE_ARRAYS) or len(a["child"]) != len(a["parent"]):
            return False
        if len(a["a_standing"]) != m or len(a["a_trusted"]) != m:
            return False
        verdicts = len(a["v_node"])
        if any(len(a[name]) != verdicts for name in a if name.startswith("v_")):
            return False
        ranges = [("child", 0, n), ("parent", 0, n), ("order", 0, n), ("v_node", 0, n), ("v_target", 0, n)]
        ranges += [("first_parent", -1, n), ("target", -1, n), ("account", 0, m), ("v_verifier", 0, m)]
        ranges += [("status", 0, len(STATUSES)), ("v_verdict", 0, len(_VERDICT_TEXTS))]
        return all(
            not len(a[name]) or (int(a[name].min()) >= low and int(a[name].max()) < high) for name, low, high in ranges
        )
    except (KeyError, TypeError, ValueError):
        return False


def exact(state: FrameState, other: FrameState) -> bool:
    """Do two states hold the same arrays (the differential tests' comparison)?"""
    if state.key != other.key or not state.sha.equals(other.sha) or state.ranked != other.ranked:
        return False
    if not state.dangling.equals(other.dangling) or not state.accounts.equals(other.accounts):
        return False
    if set(state.arrays) != set(other.arrays):
        return False
    return all(
        np.array_equal(state.arrays[k], other.arrays[k], equal_nan=_floats(state.arrays[k])) for k in state.arrays
    )


def _floats(array: np.ndarray) -> bool:
    return np.asarray(array).dtype.kind == "f"


__all__ = ["FrameState", "capture", "restore", "state_key", "dangling_of", "exact", "fits", "replace"]
