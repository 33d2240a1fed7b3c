"""Encoding what an `EmbedPlan` asks for: all of ``first``, then ``later`` while the budget lasts, a
batch at a time so that progress can be counted and the budget checked."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..feedback import Advance
from ..frontier.embeddings import empty_cache, rows_table
from .backends import EmbeddingBackend
from .plan import EmbedBudget, EmbedPlan

BATCH = 256  # texts per encoder call: the encoder sorts them by length and pads little
PROGRESS_FROM = 512  # fewer texts than this embed in a blink: no progress bar
FLUSH_ROWS = 8192  # rows handed to the cache at a time (12 MB of MiniLM vectors)

Progress = Callable[[str, int | None], AbstractContextManager[Advance]]


@dataclass(frozen=True, eq=False)
class Encoded:
    """New cache rows (sha, model, vector) in the order they were encoded, and how they split."""

    rows: pa.Table
    first: int
    later: int
    seconds: float

    @property
    def count(self) -> int:
        return self.first + self.later


def encode_plan(
    plan: EmbedPlan,
    texts: Mapping[str, str],
    backend: EmbeddingBackend,
    budget: EmbedBudget,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.perf_counter,
    store: Callable[[pa.Table], None] | None = None,
) -> Encoded:
    """Encode ``plan.first`` whole, then ``plan.later`` in order until ``budget`` runs out.
    ``texts``: the text of every sha the run may encode. ``progress(what, total)``: a progress
    context (`Feedback.progress`), opened for a phase of at least `PROGRESS_FROM` texts.
    ``store(rows)``: called every `FLUSH_ROWS` rows and at the end with the new rows, so that an
    interrupted long run keeps what it encoded and memory holds one slice (``Encoded.rows`` is then
    empty); without it the rows are returned."""
    start = clock()
    later = plan.later if budget.rows is None else plan.later[: budget.rows]
    pending = _Pending(backend.model, store)
    with _bar(progress, "embedding descriptions", len(plan.first), len(plan.first)) as advance:
        for batch in _batches(plan.first):
            pending.add(batch, _encode(backend, texts, batch))
            advance(pending.count)
    first = pending.count
    begun = clock()
    if later and not budget.none:
        what = f"embedding older descriptions ({budget.describe()})"
        with _bar(progress, what, len(later), len(later) if budget.unlimited else None) as advance:
            for batch in _batches(later):
                if not budget.allows(pending.count - first, clock() - begun):
                    break
                pending.add(batch, _encode(backend, texts, batch))
                advance(pending.count - first)
    pending.flush()
    return Encoded(pending.kept(), first, pending.count - first, clock() - start)


class _Pending:
    """Encoded rows not yet handed to ``store`` (all of them without one)."""

    def __init__(self, model: str, store: Callable[[pa.Table], None] | None):
        self.model, self.store = model, store
        self.shas: list[str] = []
        self.parts: list[np.ndarray] = []
        self.count = 0
        self.done: list[pa.Table] = []

    def add(self, shas: tuple[str, ...], vectors: np.ndarray) -> None:
        self.shas.extend(shas)
        self.parts.append(vectors)
        self.count += len(shas)
        if self.store is not None and len(self.shas) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.shas:
            return
        rows = rows_table(self.shas, self.model, np.vstack(self.parts))
        self.shas, self.parts = [], []
        if self.store is None:
            self.done.append(rows)
        else:
            self.store(rows)

    def kept(self) -> pa.Table:
        return pa.concat_tables(self.done) if self.done else empty_cache()


def _encode(backend: EmbeddingBackend, texts: Mapping[str, str], batch: tuple[str, ...]) -> np.ndarray:
    return np.asarray(backend.encode([texts[sha] for sha in batch]), dtype=np.float32)


def _batches(shas: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [shas[i : i + BATCH] for i in range(0, len(shas), BATCH)]


def _bar(progress: Progress | None, what: str, count: int, total: int | None) -> AbstractContextManager[Advance]:
    """A progress context for ``count`` texts (``total``: what to show as the whole, None: unknown)."""
    if progress is None or count < PROGRESS_FROM:
        return nullcontext(lambda done: None)
    return progress(what, total)
