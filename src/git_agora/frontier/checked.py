"""Run-backed results: a result published with `push --check` carries the run record of that check
(``check`` in Agora-Meta: the measured values, the evaluator identity, the sandbox flag, the duration,
as `records.CheckRecord` reads it). One without it is *unchecked*: a number typed on the
command line. This is a usability signal, not a defence: anyone can write such a record by hand, and
only verification by others (``evidence``) says a claim reproduces. Readers mark an unchecked result
where they would say "unverified", with the one word ``UNCHECKED``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..records import check_backed
from .frame import Frame
from .graph import take_rows
from .views import Row, View, ranked_by_metric

UNCHECKED = "unchecked"
UNVERIFIED = "unverified"


def run_backed(metadata: str | Mapping[str, Any] | None) -> bool:
    """Whether a result's Agora-Meta (JSON text or the object) records the run of `push --check`."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except (json.JSONDecodeError, RecursionError):
            return False
    if not isinstance(metadata, Mapping):
        return False
    return check_backed(metadata)


def run_backed_mask(table: pa.Table, nodes: np.ndarray | None = None) -> np.ndarray:
    """Per row of `table` (or per node of `nodes`): whether it records its check's run (no
    ``metadata`` column: none does)."""
    n = table.num_rows if nodes is None else len(nodes)
    if "metadata" not in table.column_names:
        return np.zeros(n, dtype=bool)
    column = table["metadata"] if nodes is None else take_rows(table["metadata"], nodes)
    return np.fromiter((run_backed(m) for m in column.to_pylist()), dtype=bool, count=n)


def shown_status(status: str, checked: bool | None) -> str:
    """The status a reader shows: an unverified result without its run record is ``unchecked``."""
    return UNCHECKED if status == UNVERIFIED and checked is False else status


def mark_rows(view: View, unchecked: set[str]) -> View:
    """`view` with ``checked`` (False for the shas of `unchecked`, True otherwise) on every row with a metric."""
    rows = (r.with_values(checked=r.sha not in unchecked) if r.metric is not None and r.sha else r for r in view.rows)
    return replace(view, rows=tuple(rows))


def unchecked_shas(table: pa.Table, scored: np.ndarray, among: Iterable[str] | None = None) -> set[str]:
    """The shas of the scored results (a node mask over `table`) that carry no run record; `among`:
    only those of these shas (what a reader shows: the records of the other results are not parsed)."""
    nodes = np.flatnonzero(scored)
    if among is not None:
        wanted = pa.array(sorted(set(among)), pa.string())
        hit = np.asarray(pc.is_in(table["sha"], value_set=wanted).to_numpy(zero_copy_only=False), dtype=bool)
        nodes = np.flatnonzero(hit & np.asarray(scored, dtype=bool))
    backed = run_backed_mask(table, nodes)
    shas = take_rows(table["sha"], nodes[~backed]).to_pylist()
    return set(shas)


def shown_shas(rows: Iterable[Row]) -> set[str]:
    """The shas `mark_rows` marks among `rows` (those with a metric)."""
    return {row.sha for row in rows if row.metric is not None and row.sha}


def shown_statuses(frame: Frame) -> np.ndarray:
    """Per node: its status as readers show it (``shown_status``): an unverified scored result without
    its run record reads ``unchecked``."""
    shown = np.asarray(frame.status, dtype=object).copy()
    nodes = np.flatnonzero(frame.scored)
    unbacked = nodes[~run_backed_mask(frame.graph.table, nodes)]
    shown[unbacked[shown[unbacked] == UNVERIFIED]] = UNCHECKED
    return shown


def best_run_backed(frame: Frame) -> int:
    """The node of the best scored result that carries its run record (by value, then earliest:
    ``views.ranked_by_metric``), -1 when none does."""
    nodes = np.flatnonzero(frame.scored)
    nodes = nodes[run_backed_mask(frame.graph.table, nodes)]
    return int(ranked_by_metric(frame, nodes)[0]) if len(nodes) else -1
