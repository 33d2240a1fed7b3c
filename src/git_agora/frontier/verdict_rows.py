"""Every verdict on its target: who gave it, what it says and measured, whether it counts and why not.

One rule decides whose verdicts count: ``evidence.current_verdicts`` (``Verdicts.counts``, in the words
of ``Verdicts.weightless``). This module only lays it out per target, for `show`, `analyze` and the
site, so that a verdict that weighs nothing is still seen where it matters, on what it verifies:

- ``verdict_rows``: per target node, its verdicts newest first (``VerdictRow``).
- ``unsettled_failures``: per node, the failed reruns that do not count yet: current, run-backed (the
  rerun record `git agora verify` writes) and from accounts without standing. Only current verdicts
  are counted, one per account and target, so the number counts accounts, never posts. A signal to
  settle with a rerun that counts; it changes no status, and ends once a counting verdict fails it (with
  ranks, once the trust root gives it any counting verdict).
- ``standing_of``: whether an account's verdicts count, why, and what would make them count (with ranks,
  ``Root.ranks``: only the trust root's confirmation gives standing, and a derived account's verdict
  that the root's outranks shows ``evidence.OUTRANKED`` as its why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.compute as pc

from ..contribution import SETUP
from .evidence import Verdicts
from .graph import Graph, tag_mask


@dataclass(frozen=True)
class VerdictRow:
    """One verdict on a target. ``metric``: the value it measured (the verdict's primary metric), None
    when it reports none (an opinion); ``why``: why it weighs nothing, None when it counts."""

    sha: str
    target: str
    account: str
    verdict: str
    metric: float | None
    timestamp: int
    run_backed: bool
    counts: bool
    why: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def verdict_rows(graph: Graph, verdicts: Verdicts, targets: Sequence[int] | np.ndarray) -> dict[int, list[VerdictRow]]:
    """The verdicts on each of ``targets`` (nodes), newest first (timestamp, then log position); a
    target without any is absent."""
    targets = np.asarray(targets, dtype=np.int64)
    at = np.flatnonzero(np.isin(verdicts.target, targets))
    if not len(at):
        return {}
    part = graph.rows(verdicts.node[at], ["sha", "account", "timestamp", "log_seq", "primary_metric"])
    timestamp = np.asarray(pc.fill_null(part["timestamp"], 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    seq = np.asarray(pc.fill_null(part["log_seq"], -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    target_shas = graph.rows(verdicts.target[at], ["sha"])["sha"].to_pylist()
    why = verdicts.weightless(at)
    counts = verdicts.counts[at]
    shas, accounts, metrics = (part[c].to_pylist() for c in ("sha", "account", "primary_metric"))
    out: dict[int, list[VerdictRow]] = {}
    for i in np.lexsort((-seq, -timestamp)).tolist():
        row = VerdictRow(
            shas[i], target_shas[i], accounts[i] or "", str(verdicts.verdict[at[i]]), metrics[i],
            int(timestamp[i]), bool(verdicts.run_backed[at[i]]), bool(counts[i]), why[i],
        )  # fmt: skip
        out.setdefault(int(verdicts.target[at[i]]), []).append(row)
    return out


def unsettled(verdicts: Verdicts) -> np.ndarray:
    """Per verdict: a failed rerun that does not count yet (current, run-backed, its account without
    standing) on a target no counting verdict has failed already (that one settled it), nor, with ranks,
    one the trust root gave a counting verdict (the root's verdict decides its status)."""
    no_standing = ~verdicts.standing[verdicts.verifier]
    failed = verdicts.verdict == "failed"
    settled = np.zeros(int(verdicts.target.max()) + 1 if len(verdicts.target) else 0, dtype=bool)
    settled[verdicts.target[verdicts.counts & failed]] = True
    if verdicts.ranked:  # with ranks a counting verdict of the trust root decides the status: nothing to settle
        assert verdicts.trusted is not None
        settled[verdicts.target[verdicts.counts & verdicts.trusted[verdicts.verifier]]] = True
    return verdicts.current & verdicts.run_backed & no_standing & failed & ~settled[verdicts.target]


def unsettled_failures(verdicts: Verdicts, n: int) -> np.ndarray:
    """Per node: how many failed reruns that do not count yet it has received (``unsettled``)."""
    return np.bincount(verdicts.target[unsettled(verdicts)], minlength=n).astype(np.int64)


def unsettled_note(count: int, sha: str) -> str | None:
    """The signal `show` and `analyze` give for ``count`` such failures on ``sha``; None for none."""
    if not count:
        return None
    reruns = "1 failed rerun that does not count yet" if count == 1 else f"{count} failed reruns that do not count yet"
    return f"{reruns}: settle it with a rerun that counts (git agora verify {sha[:12]})"


@dataclass(frozen=True)
class Standing:
    """Whether ``account``'s verdicts count (``counts``), ``because`` (a sentence), and, when they do
    not, what would make them count (``remedy``)."""

    account: str
    counts: bool
    because: str
    remedy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def standing_of(graph: Graph, verdicts: Verdicts, account: str) -> Standing:
    """Why `account`'s run-backed verdicts count (it founded the project, the trust root names it, or a
    counting verdict confirmed work of its own), or that they do not yet and what would change that."""
    nodes = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(graph.table["account"], account), False), dtype=bool))
    code = int(graph.account[nodes[0]]) if len(nodes) else -1
    if code >= 0 and tag_mask(graph.table, SETUP)[nodes].any():
        return Standing(account, True, f"{account} founded the project")
    if account in graph.root.accounts:
        return Standing(account, True, f"{account} is a member (the policy's [identity] members or [ci] accounts)")
    if code >= 0 and code < len(verdicts.standing) and verdicts.standing[code]:
        if verdicts.ranked:
            return Standing(
                account,
                True,
                f"{account} has work the trust root confirmed by a rerun (its verdicts rank below the root's: "
                "they do not count against a verdict of the founder, a member or a CI account)",
            )
        return Standing(account, True, f"{account} has confirmed work (its own result confirmed by a counting rerun)")
    if verdicts.ranked:
        remedy = (
            f"it counts once the trust root (the founder, a member or a CI account) confirms one of {account}'s "
            "results with a rerun (git agora verify); an established account's confirmation gives no standing"
        )
    else:
        remedy = (
            f"it counts once an account with standing (the founder, a member, or an established account) "
            f"confirms one of {account}'s results with a rerun (git agora verify)"
        )
    return Standing(account, False, f"{account} has no confirmed work yet", remedy)
