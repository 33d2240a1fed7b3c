"""What a scored result is, which ones set a new best, and which one is the best: one definition for
``stats``, ``lineage`` and ``analyze`` (and anything else that counts results).

- *Verification*: a row with a verdict, a target or the ``verification`` tag (it re-measures someone
  else's result, so its metric is not a result of its own).
- *Buildable*: a valid contribution of no kind that may not be built on (``Kind.buildable``: a
  verification, wip, an endorsement, a witness record), whose verification status is not ``failed``
  (the status the newest verdict of each verifier gives, ``evidence.verification_status``). Work a
  worker may be pointed at as a parent.
- *Scored result*: a buildable contribution that reports the primary metric, judged by a policy of the
  current evaluator epoch (``root.Root.epoch``; results of earlier epochs are listed apart, never
  compared with the current ones).
- *New best*, in time order (``graph.chronological_order``): the first scored result, then every scored
  result that beats the best so far by more than the tolerance (direction-aware, the rule of
  ``ProjectConfig.better``). With tolerance 0 every strict improvement counts (*strict* new bests);
  with the project's tolerance gains within the noise do not (*noise-aware* new bests).
- *The best result*: the latest noise-aware new best. A later result within the tolerance of it does
  not replace it.
- *May lead* (``may_lead``): with ranks (``root.Root.ranks``, `[verdicts] format = 2`), a contested
  result stays scored (ranked among the leaders, marked) but is neither a new best nor the best, so no
  summary, `clone` or slot points at it as the result to build on until a rerun settles it; without
  ranks every scored result may lead. A failed result never leads (it is not scored).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import VERIFICATION
from .evidence import verdicts_of, verification_status
from .graph import Graph, kind_mask, signed, take_rows, time_column, time_keys, time_order


def is_verification(table: pa.Table) -> np.ndarray:
    """Per row: a verification (a verdict, a target or the ``verification`` tag)."""
    return kind_mask(table, lambda kind: kind.name == VERIFICATION)


def buildable_mask(
    table: pa.Table, status: Sequence[str] | np.ndarray, buildable_kind: np.ndarray | None = None
) -> np.ndarray:
    """Per row: valid, of no kind that may not be built on (``buildable_kind``, computed when not given),
    and not failed-verified (``status`` per row)."""
    valid = np.asarray(pc.fill_null(table["valid"], False).to_numpy(zero_copy_only=False), dtype=bool)
    if buildable_kind is None:
        buildable_kind = ~kind_mask(table, lambda kind: not kind.buildable)
    return valid & buildable_kind & (np.asarray(status, dtype=object) != "failed")


def scored_mask(table: pa.Table, status: Sequence[str] | np.ndarray, epoch: frozenset[str] | None = None) -> np.ndarray:
    """Per row: a scored result (module docstring); ``status`` is each row's verification status,
    ``epoch`` the policies of the current evaluator (``root.Root.epoch``)."""
    return buildable_mask(table, status) & _present(table["primary_metric"]) & in_epoch(table, epoch)


def in_epoch(table: pa.Table, epoch: frozenset[str] | None) -> np.ndarray:
    """Per row: judged by a policy of the current evaluator epoch (every row when ``epoch`` is None)."""
    if epoch is None:
        return np.ones(table.num_rows, dtype=bool)
    found = pc.is_in(table["policy"], value_set=pa.array(sorted(epoch), pa.string()))
    return np.asarray(pc.fill_null(found, False).to_numpy(zero_copy_only=False), dtype=bool)


def may_lead(scored: np.ndarray, status: Sequence[str] | np.ndarray, ranks: bool) -> np.ndarray:
    """Per row: a scored result that may be a new best or the best (module docstring): with ``ranks``,
    not contested."""
    if not ranks:
        return np.asarray(scored, dtype=bool)
    return np.asarray(scored, dtype=bool) & (np.asarray(status, dtype=object) != "contested")


def leading_nodes(graph: Graph) -> np.ndarray:
    """Per node of ``graph``: a scored result (``scored_nodes``) that may lead (``may_lead``)."""
    status = verification_status(verdicts_of(graph), graph.n)[0]
    return may_lead(scored_mask(graph.table, status, graph.root.epoch), status, graph.root.ranks)


def scored_nodes(graph: Graph) -> np.ndarray:
    """Per node of ``graph``: a scored result, with the status its counting verdicts give, in the
    current evaluator epoch."""
    status = verification_status(verdicts_of(graph), graph.n)[0]
    return scored_mask(graph.table, status, graph.root.epoch)


def primary_metric(table: pa.Table) -> np.ndarray:
    """The primary metric per row as float64, nan where not reported."""
    values = pc.fill_null(table["primary_metric"], np.nan).to_numpy(zero_copy_only=False)
    return np.array(values, dtype=np.float64)


def in_time(table: pa.Table, nodes: np.ndarray) -> np.ndarray:
    """``nodes`` (rows of ``table``) in time order."""
    nodes = np.asarray(nodes, dtype=np.int64)
    keys = take_rows(table.select([time_column(table), "log_seq"]), nodes)  # the numbers; shas only for ties
    return nodes[time_order(*time_keys(keys), lambda at: take_rows(table["sha"], nodes[at]).to_pylist())]


def new_best_mask(values: np.ndarray, direction: str, tolerance: float = 0.0) -> np.ndarray:
    """For values in time order: True where a value sets a new best (module docstring).

    The best so far only moves when a new best is set, so a run of gains each within the tolerance
    never adds up to a new best.
    """
    mask = np.zeros(len(values), dtype=bool)
    good = signed(values, direction)
    candidates = np.arange(len(good))
    if tolerance >= 0 and len(good):  # a new best beats every earlier value: only records can be one
        before = np.fmax.accumulate(np.r_[-np.inf, good[:-1]])
        candidates = np.flatnonzero((good > before) | np.isnan(before))
    best = -np.inf
    for i, value in zip(candidates.tolist(), good[candidates].tolist()):
        if value - best > tolerance:
            mask[i] = True
            best = value
    return mask


def new_best_nodes(
    table: pa.Table, scored: np.ndarray, direction: str, tolerance: float = 0.0, values: np.ndarray | None = None
) -> np.ndarray:
    """The scored rows that set a new best, in time order (tolerance 0: strict new bests). ``values``: the
    metric per row to compare (default the primary metric; a replicate-aware reader passes means)."""
    order = in_time(table, np.flatnonzero(scored))
    values = primary_metric(table) if values is None else values
    return order[new_best_mask(values[order], direction, tolerance)]


def best_node(
    table: pa.Table, scored: np.ndarray, direction: str, tolerance: float = 0.0, values: np.ndarray | None = None
) -> int:
    """The best result: the latest noise-aware new best; -1 when nothing is scored."""
    records = new_best_nodes(table, scored, direction, tolerance, values)
    return int(records[-1]) if len(records) else -1


def _present(column: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), dtype=bool)
