"""Helpers to build small CONTRIBUTIONS tables by hand, and large random ones.

Test modules import them as `frontier_tables` (registered below): a plain `from conftest import ...`
would pick up whichever conftest.py pytest imported last once other test folders have their own.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from git_agora.frontier.root import Root
from git_agora.index.schema import CONTRIBUTIONS


@dataclass(frozen=True)
class Row:
    """One hand-written contribution; `parents` and `target` are names of other rows."""

    name: str
    account: str
    parents: tuple[str, ...] = ()
    tags: tuple[str, ...] = ("result",)
    timestamp: int = 0
    metric: float | None = None
    target: str | None = None
    verdict: str | None = None
    valid: bool = True
    log_seq: int | None = None
    meta: dict | None = None  # Agora-Meta, e.g. {"prediction": [low, high]}
    run: bool = True  # a verdict records its rerun (run_backed); False: an opinion


def sha(name: str) -> str:
    """A stable 40-hex sha for a row name."""
    return name.encode().hex().ljust(40, "0")[:40]


def node(name: str, account: str, *parents: str, t: int = 0, **kw) -> Row:
    """A row; keyword arguments as in Row (tags=, metric=, valid=, log_seq=)."""
    return Row(name, account, tuple(parents), timestamp=t, **kw)


def verify(name: str, account: str, target: str, verdict: str, t: int = 0, **kw) -> Row:
    """A verification of `target` (its parent), tagged as the protocol does."""
    return Row(name, account, (target,), ("verification",), t, target=target, verdict=verdict, **kw)


def table(rows: Sequence[Row]) -> pa.Table:
    """A CONTRIBUTIONS table for the rows, shas derived from their names."""
    seqs: dict[str, int] = {}
    columns: dict[str, list] = {name: [] for name in CONTRIBUTIONS.names}
    for row in rows:
        seq = row.log_seq if row.log_seq is not None else seqs.get(row.account, 0)
        seqs[row.account] = seq + 1
        values = {
            "sha": sha(row.name),
            "account": row.account,
            "timestamp": row.timestamp,
            "log_seq": seq,
            "title": row.name,
            "description": row.name,
            "tags": list(row.tags),
            "metrics": [] if row.metric is None else [("loss", row.metric)],
            "primary_metric": row.metric,
            "metadata": json.dumps(row.meta or {}, sort_keys=True),
            "parents": [sha(p) for p in row.parents],
            "tree": "0" * 40,
            "code_bearing": "result" in row.tags,
            "target": None if row.target is None else sha(row.target),
            "verdict": row.verdict,
            "valid": row.valid,
            "reasons": [] if row.valid else ["test"],
            "policy": None,
            "run_backed": row.run if row.verdict is not None else None,
        }
        for name in CONTRIBUTIONS.names:
            columns[name].append(values[name])
    return pa.table(columns, schema=CONTRIBUTIONS)


def everyone(contributions: pa.Table) -> Root:
    """A trust root holding every account of the table: for tests of the evidence math, where every
    verifier has standing (whose verdicts count is tested in test_standing.py)."""
    return Root(accounts=frozenset(a for a in contributions["account"].to_pylist() if a))


def random_table(n: int, seed: int = 0, accounts: int = 20, merge_share: float = 0.1) -> pa.Table:
    """A random history of n contributions: a setup root, then chains and branches, some merges.

    Most commits build on a recent one (recency-biased), some on any earlier one; a share has a second
    parent; about 10% are verifications of their parent, a few are wip or endorsements.
    """
    rng = np.random.default_rng(seed)
    account = rng.integers(0, accounts, n)
    first = np.maximum(np.arange(n) - 1 - rng.geometric(0.05, n), 0)
    uniform = rng.random(n) < 0.2
    first[uniform] = (rng.random(uniform.sum()) * np.arange(n)[uniform]).astype(np.int64)
    second = (rng.random(n) * np.arange(n)).astype(np.int64)
    kind = rng.choice(
        ["result", "insight", "hypothesis", "wip", "endorsed", "verify"], n, p=[0.55, 0.12, 0.1, 0.08, 0.05, 0.10]
    )
    verdicts = rng.choice(["confirmed", "partial", "failed"], n, p=[0.6, 0.2, 0.2])
    metric = np.round(rng.normal(1.0, 0.05, n), 3)
    rows = []
    for i in range(n):
        name = f"n{i}"
        if i == 0:
            rows.append(node(name, "a0", t=0, tags=("setup",), metric=1.1))
            continue
        parents = [f"n{first[i]}"]
        if kind[i] == "verify":
            who = f"a{account[i]}"
            if who == rows[first[i]].account:
                who = f"a{(account[i] + 1) % accounts}"
            rows.append(verify(name, who, parents[0], str(verdicts[i]), t=i))
            continue
        if rng.random() < merge_share and second[i] != first[i]:
            parents.append(f"n{second[i]}")
        metric_value = float(metric[i]) if kind[i] == "result" else None
        rows.append(node(name, f"a{account[i]}", *parents, t=i, tags=(str(kind[i]),), metric=metric_value))
    return table(rows)


def descendants_by_walk(graph, qualifying) -> list[int]:
    """Per node: a depth-first walk over child edges, counting the distinct qualifying nodes it meets
    (the reference the follow-on counts are checked against)."""
    kids: dict[int, list[int]] = {}
    for c, p in zip(graph.child.tolist(), graph.parent.tolist()):
        kids.setdefault(p, []).append(c)
    counts = []
    for u in range(graph.n):
        seen, stack = set(), [u]
        while stack:
            for c in kids.get(stack.pop(), []):
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        counts.append(sum(bool(qualifying[c]) for c in seen))
    return counts


sys.modules["frontier_tables"] = sys.modules[__name__]
