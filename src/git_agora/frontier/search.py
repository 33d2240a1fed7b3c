"""Search valid contributions by meaning (embeddings) or, without them, by keywords.

- Embedding search: cosine similarity between the query vector and each valid contribution's
  description vector (one model).
- Contributions without a vector (the cache is filled a slice at a time) are not invisible: when the
  table carries descriptions, they are searched by keyword, and those holding at least half of the
  query's keyword weight (``KEYWORD_SHARE``) are merged by rank with the embedding hits, alternating
  (embedding first: its 1st, keyword's 1st, its 2nd, ...), each hit saying which ``method`` found it.
  The two scores are not comparable, so ranks are; the threshold keeps one shared common word from
  pushing out semantic matches. ``coverage`` says how many valid contributions have a vector.
- Keyword fallback: each query word (lower-cased, 2+ letters) weighs its IDF
  ln((N + 1) / (df + 1)) + 1 over the searched contributions' title + description; a contribution
  scores the weight share of the query words it contains, in [0, 1]. Ties: newest first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .claims import Claim, claims_on
from .embeddings import Coverage, QueryEncoder, RowReader, pick_model, vector_index

_WORD = re.compile(r"(?u)\b\w\w+\b")
HIT_COLUMNS = ("sha", "title", "account", "timestamp", "primary_metric")
KEYWORD_SHARE = 0.5  # a contribution without a vector is listed from this share of the query's keyword weight


@dataclass(frozen=True)
class SearchHit:
    """One match: ``score`` is the cosine similarity (embedding) or keyword weight share."""

    sha: str
    title: str
    account: str
    timestamp: int
    metric: float | None
    score: float
    claimed_by: tuple[dict[str, Any], ...] = ()  # active claims on it: {account, until, sha, title}
    method: str = "embedding"  # what found it: embedding | keyword

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "claimed_by": [dict(c) for c in self.claimed_by]}


@dataclass(frozen=True)
class SearchResult:
    """``method``: embedding | keyword (the query's; each hit says what found it); ``model``: the
    embedding model used; ``encoder``: what embedded a text query (``onnxruntime int8``,
    ``sentence-transformers``, ...); ``note``: why keyword search was used, or coverage caveats;
    ``coverage``: valid contributions with a vector of ``model`` (None: no model)."""

    query: str | None
    method: str
    model: str | None
    hits: tuple[SearchHit, ...]
    note: str | None = None
    encoder: str | None = None
    coverage: Coverage | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "method": self.method,
            "model": self.model,
            "encoder": self.encoder,
            "note": self.note,
            "coverage": None if self.coverage is None else self.coverage.to_dict(),
            "hits": [h.to_dict() for h in self.hits],
        }


def search(
    query: str | np.ndarray,
    contributions: pa.Table,
    embeddings: pa.Table | None = None,
    k: int = 10,
    *,
    backend: QueryEncoder | None = None,
    model: str | None = None,
    read: RowReader | None = None,
) -> SearchResult:
    """The ``k`` valid contributions nearest to ``query``.

    ``query`` is a vector (compared with ``model``'s vectors, default the cache's main model) or a
    text. A text is embedded with ``backend`` when one is given and the cache holds vectors of
    ``backend.model``; otherwise keyword search is used and ``note`` says why. ``read`` reads cache
    rows' vectors (`embeddings.RowReader`; default: from the table).
    """
    text = None if isinstance(query, np.ndarray) else str(query)
    if text is None:
        model = pick_model(embeddings, model)
        vector = np.asarray(query, dtype=np.float32)
        found = _by_vector(vector, contributions, embeddings, k, model, None, read)
        return found or SearchResult(None, "embedding", model, (), f"no embeddings of model {model}")
    if backend is not None and embeddings is not None and embeddings.num_rows:
        if pc.any(pc.equal(embeddings["model"], backend.model)).as_py():
            vector = backend.encode([text])[0]
            found = _by_vector(vector, contributions, embeddings, k, backend.model, text, read)
            if found is not None:
                return replace(found, encoder=getattr(backend, "runtime", None))
        why = f"no cached embeddings of model {backend.model}: keyword search"
    elif embeddings is None or embeddings.num_rows == 0:
        why = "no embeddings available: keyword search"
    else:
        why = "no encoder given for a text query: keyword search"
    if backend is None:
        return keyword_search(text, _valid(contributions), k, why)
    coverage = Coverage(0, int(pc.sum(pc.fill_null(contributions["valid"], False)).as_py() or 0))
    note = why if coverage.complete else f"{why}; {coverage.describe()}"
    return replace(keyword_search(text, _valid(contributions), k, note), coverage=coverage)


def _by_vector(
    vector: np.ndarray,
    contributions: pa.Table,
    embeddings: pa.Table | None,
    k: int,
    model: str | None,
    text: str | None,
    read: RowReader | None,
) -> SearchResult | None:
    """The valid contributions nearest by ``model``'s vectors; None when none of them has one. Only
    the sha column is filtered; the hits' fields are taken from the ``k`` rows found. With a text and
    descriptions, those without a vector are merged in by keyword (module docstring)."""
    valid = np.flatnonzero(pc.fill_null(contributions["valid"], False).to_numpy(zero_copy_only=False))
    shas = contributions["sha"]
    if len(valid) < contributions.num_rows:
        shas = shas.take(pa.array(valid))
    index = vector_index(embeddings, shas, model, read)
    present = index.present
    if not present.any():
        return None
    scores = index.similarities(vector)
    coverage = Coverage(int(present.sum()), len(valid))
    order = np.argsort(-scores, kind="stable")[: min(k, coverage.embedded)]
    hits = _hits(contributions, valid[order], scores[order])
    note = None
    if not coverage.complete:
        note = coverage.describe()
        if text is not None and "description" in contributions.column_names:
            unembedded = contributions.take(pa.array(valid[~present])).select([*HIT_COLUMNS, "description"])
            by_word = keyword_search(text, unembedded, k)
            hits = alternate(hits, tuple(h for h in by_word.hits if h.score >= KEYWORD_SHARE))[:k]
            note += "; the others are matched by keyword"
    return SearchResult(text, "embedding", model, hits, note, coverage=coverage)


def alternate(first: tuple[SearchHit, ...], second: tuple[SearchHit, ...]) -> tuple[SearchHit, ...]:
    """Merge two ranked lists by rank: first[0], second[0], first[1], second[1], ... (the rest of the
    longer list after the shorter ends)."""
    merged = [hit for pair in zip(first, second) for hit in pair]
    shorter = min(len(first), len(second))
    return (*merged, *first[shorter:], *second[shorter:])


def _valid(contributions: pa.Table) -> pa.Table:
    """The valid rows, with only the columns keyword search reads (a table read without descriptions is
    searched by title: its caller reads them and searches again when the keyword result is the answer)."""
    if "description" not in contributions.column_names:
        contributions = contributions.append_column("description", pa.nulls(contributions.num_rows, pa.string()))
    valid = pc.fill_null(contributions["valid"], False)
    return contributions.select([*HIT_COLUMNS, "description"]).filter(valid)


def keyword_search(text: str, table: pa.Table, k: int = 10, note: str | None = None) -> SearchResult:
    """Keyword fallback over valid rows (module docstring)."""
    words = sorted(set(_WORD.findall(text.lower())))
    if not words or table.num_rows == 0:
        return SearchResult(text, "keyword", None, (), note)
    n = table.num_rows
    hits = _keyword_hits(table, words)
    score = np.zeros(n)
    total = 0.0
    for word in words:
        idf = float(np.log((n + 1) / (hits[word].sum() + 1)) + 1)
        score += idf * hits[word]
        total += idf
    score /= total
    timestamp = np.asarray(pc.fill_null(table["timestamp"], 0).to_numpy(zero_copy_only=False))
    matched = np.flatnonzero(score > 0)
    order = matched[np.lexsort((-timestamp[matched], -score[matched]))][:k]
    return SearchResult(text, "keyword", None, _hits(table, order, score[order], "keyword"), note)


KEYWORD_CHUNK = 65_536  # rows whose lowercased text is made at once: a million descriptions, twice, is 1 GB


def _keyword_hits(table: pa.Table, words: list[str]) -> dict[str, np.ndarray]:
    """For each word, which rows' title or description hold it as a whole word (any case)."""
    hits = {word: np.zeros(table.num_rows, dtype=bool) for word in words}
    patterns = {word: rf"\b{re.escape(word)}\b" for word in words}
    for start in range(0, table.num_rows, KEYWORD_CHUNK):
        part = table.slice(start, KEYWORD_CHUNK)
        haystack = pc.utf8_lower(
            pc.binary_join_element_wise(pc.fill_null(part["title"], ""), pc.fill_null(part["description"], ""), "\n")
        )
        for word in words:
            found = pc.match_substring_regex(haystack, patterns[word]).to_numpy(zero_copy_only=False)
            hits[word][start : start + part.num_rows] = np.asarray(found, dtype=bool)
    return hits


def _hits(table: pa.Table, order: np.ndarray, scores: np.ndarray, method: str = "embedding") -> tuple[SearchHit, ...]:
    part = table.select(list(HIT_COLUMNS)).take(pa.array(np.asarray(order, dtype=np.int64)))
    return tuple(
        SearchHit(
            r["sha"], r["title"] or "", r["account"], r["timestamp"], r["primary_metric"], float(s), method=method
        )
        for r, s in zip(part.to_pylist(), scores)
    )


def with_claims(result: SearchResult, claims: Sequence[Claim]) -> SearchResult:
    """Each hit with the active claims on it: whoever is already trying this direction, until when."""
    on = claims_on(list(claims))
    if not on:
        return result
    hits = tuple(
        replace(
            hit,
            claimed_by=tuple(
                {"account": c.account, "until": c.until, "sha": c.sha, "title": c.title} for c in on.get(hit.sha, [])
            ),
        )
        for hit in result.hits
    )
    return replace(result, hits=hits)
