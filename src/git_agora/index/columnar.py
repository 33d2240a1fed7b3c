"""The rows of ordinary commits read a block at a time by Arrow's kernels: `quick`'s values without a
Python step per commit.

A rebuild reads a million contributions, and `quick` spends about 20 us on each in Python (decoding
the record, the trailer expression, the JSON of its metadata, the row). Here a block's records are one
Arrow array: one regular expression (RE2, matching only) says which have the plain shape, string
kernels cut them into fields, and the rules are masks over columns. A commit is taken only where every
rule is decided without its values leaving Arrow; the rest (a verification, a setup, a hypothesis with
a metric, nested metadata, a secret's hint, a clock out of range, a description without a printable
ASCII character, anything over a limit) are left to `quick` and the general path, which give the same
values for what is taken here (the tests hold all three to each other).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import GRAMMAR, HYPOTHESIS, KINDS, LIMITS, POLICY, READABLE_FORMATS, VERIFICATION
from ..leaks import SECRET_HINTS
from . import listing, reader
from .quick import TRAILER_PATTERN

TO_END = 2**31 - 1  # `binary_slice`'s stop: without one, pyarrow 26 fails on some arrays ("Negative buffer resize")
FORMAT_MARK = f"\n\n{GRAMMAR[0].key}: "
_FORMATS = "|".join(READABLE_FORMATS)
_PARENTS = "(?: [0-9a-f]{40})+"  # a root is a setup: left to the general path; RE2 counts no further
SHAPE = (  # a `git log` record (`reader._FORMAT`) of a commit this module may take
    rf"\A[0-9a-f]{{40}} [0-9a-f]{{40}} [0-9]{{1,18}}{_PARENTS}\n[^\n\x1f]*\x1f[^\n]*\n"
    rf"(?s:.*){re.escape(FORMAT_MARK)}(?:{_FORMATS})\n{TRAILER_PATTERN}\z"
)
_NOT_STORABLE = r"\.\.|\.\z|\.lock\z|\A(?i:head|fetch_head|orig_head|merge_head)\z"  # `storable_account`
_JSON_TEXT = r'"[^"\\\x00-\x1f]*"'
_JSON_SCALAR = rf"(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|{_JSON_TEXT}|true|false|null)"
_JSON_VALUE = rf"(?:{_JSON_SCALAR}|\[(?:{_JSON_SCALAR}(?:,{_JSON_SCALAR})*)?\])"
FLAT_OBJECT = rf"\A\{{(?:{_JSON_TEXT}:{_JSON_VALUE}(?:,{_JSON_TEXT}:{_JSON_VALUE})*)?\}}\z"
"""JSON `json.loads` reads as a dict whose values are scalars or lists of them: no nesting past the
limit, and no mapping under a key (`records.carries_run` is False for it: a rerun is a mapping)."""
_RULED_ELSEWHERE = (HYPOTHESIS, VERIFICATION)  # the rules decided here (`_rules`); the other kinds' are not
_RULED = [name for name, kind in KINDS.items() if kind.rule is not None and name not in _RULED_ELSEWHERE]
_KEYS = {t.field: f"{t.key}: " for t in GRAMMAR}


def transport(records: pa.Array) -> pa.Array:
    """`reader.is_transport` of each record (a binary array: bytes are compared as bytes)."""
    log_tail = pc.binary_slice(records, -reader.LOG_BLOCK_LENGTH, TO_END)
    identity_tail = pc.binary_slice(records, -reader.IDENTITY_WITHIN, TO_END)
    return pc.or_(pc.starts_with(log_tail, reader.LOG_BLOCK), pc.match_substring(identity_tail, reader.IDENTITY_BLOCK))


_ENTRY_KEY_ANY_CASE = "".join(f"[{c.upper()}{c}]" if c.isalpha() else re.escape(c) for c in listing.ENTRY_KEY.decode())
_PLAIN_LINES = r"\A[0-9a-f]{40} [0-9a-f]{40} [0-9]* (?:[0-9a-f]{40}(?: [0-9a-f]{40})*)?\n[^\n]*\n"
_LOG_MESSAGE = rf"\A{listing.LOG_MESSAGE.pattern.decode()}\z"


def log_links(records: pa.Array) -> pa.Table:
    """`listing.log_links` of these records (a binary array: matched as bytes, as it matches them); those
    whose first two lines are not plain (`git log` prints them plain) are read by it."""
    named = pc.greater(pc.count_substring_regex(records, _ENTRY_KEY_ANY_CASE), 0)
    records = records.filter(named)
    plain = pc.match_substring_regex(records, _PLAIN_LINES)
    odd = listing.log_links(records.filter(pc.invert(plain)).to_pylist())
    records = records.filter(plain)
    once = pc.equal(pc.count_substring_regex(records, _ENTRY_KEY_ANY_CASE), 1)
    header, _, message = _parts(pc.split_pattern(records, "\n", max_splits=2), 3)
    fields = pc.split_pattern(header, " ")
    parent = pc.list_element(fields, 3)
    entry = pc.if_else(
        pc.and_(once, pc.match_substring_regex(message, _LOG_MESSAGE)), pc.binary_slice(message, -41, -1), None
    )
    columns = [pc.list_element(fields, 0), pc.if_else(pc.equal(parent, b""), None, parent), entry]
    links = pa.table([c.cast(pa.string()) for c in columns], schema=listing.LINKS)
    return pa.concat_tables([links, odd]) if odd.num_rows else links


def rows(records: pa.Array, schema: pa.Schema, primary_metric: str | None, now: int) -> tuple[pa.Table, list[bytes]]:
    """The rows (`schema`: `parallel.WORK`) of the records (a binary array) this module takes, and the
    records it leaves to the per-commit path. Which rows come first is free: the pipeline sorts them."""
    texts, left = _decoded(records)
    taken = pc.match_substring_regex(texts, SHAPE)
    fields = _Fields(texts.filter(taken), primary_metric)
    keep = _rules(fields, now)
    if not pc.all(keep).as_py():
        left += pc.filter(texts.filter(taken), pc.invert(keep)).cast(pa.binary()).to_pylist()
    left += pc.filter(texts, pc.invert(taken)).cast(pa.binary()).to_pylist()
    return _table(fields, keep, schema), left


def _decoded(records: pa.Array) -> tuple[pa.Array, list[bytes]]:
    """The records as UTF-8 strings, and those that are not UTF-8 (`reader` reads them with
    replacement characters)."""
    try:
        return records.cast(pa.string()), []
    except pa.ArrowInvalid:
        valid = pa.array([_is_utf8(record) for record in records.to_pylist()])
        return records.filter(valid).cast(pa.string()), records.filter(pc.invert(valid)).to_pylist()


def _is_utf8(record: bytes) -> bool:
    try:
        record.decode()
    except UnicodeDecodeError:
        return False
    return True


class _Fields:
    """The fields of records of the plain shape, each a column (a repeated trailer: its values and the
    row each belongs to)."""

    def __init__(self, texts: pa.Array, primary_metric: str | None) -> None:
        self.count, self.text = len(texts), texts
        header, people, message = _parts(pc.split_pattern(texts, "\n", max_splits=2), 3)
        head_fields = pc.split_pattern(header, " ")
        self.sha, self.tree, stamp = (pc.list_element(head_fields, i) for i in range(3))
        self.timestamp = stamp.cast(pa.int64())
        self.parents = pc.list_slice(head_fields, 3)
        self.author, self.committer = _parts(pc.split_pattern(people, "\x1f", max_splits=1), 2)
        self.head, block = _parts(pc.split_pattern(message, FORMAT_MARK, max_splits=1, reverse=True), 2)
        lines = pc.split_pattern(block, "\n")
        self.declared = pc.list_element(lines, 0)
        self._lines = pc.list_flatten(lines)
        self._row_of = pc.list_parent_indices(lines).to_numpy()
        self.account = self.single("account")
        self.meta = self.single("meta")
        self.tags, self.tag_rows = self.repeated("tag")
        self.refs, self.ref_rows = self.repeated("ref")
        metrics, self.metric_rows = self.repeated("metric")
        self.metric_names, values = _parts(pc.split_pattern(metrics, "=", max_splits=1), 2)
        self.metric_values = values.cast(pa.float64())
        self.target = self.single("target")
        self.verdict = self.single("verdict")
        primary = pc.equal(self.metric_names, primary_metric or "")
        self.primary, self.primary_rows = self.metric_values.filter(primary), self.metric_rows[primary.to_numpy(False)]

    def repeated(self, field: str) -> tuple[pa.Array, np.ndarray]:
        """The values of a trailer's lines and the row of each."""
        key = _KEYS[field]
        found = pc.starts_with(self._lines, key)
        return pc.utf8_slice_codeunits(self._lines.filter(found), len(key)), self._row_of[found.to_numpy(False)]

    def single(self, field: str) -> pa.Array:
        """A trailer that occurs at most once: its value on each row, null where it is absent."""
        values, at = self.repeated(field)
        return _scattered(values, at, self.count)

    def counts(self, rows_of: np.ndarray) -> np.ndarray:
        """How many values each row has, of values that belong to rows `rows_of`."""
        return np.bincount(rows_of, minlength=self.count)

    def tagged(self, *tags: str) -> np.ndarray:
        """Whether each row has one of `tags`."""
        return self.counts(self.tag_rows[pc.is_in(self.tags, pa.array(tags)).to_numpy(False)]) > 0


def _parts(lists: pa.Array, count: int) -> list[pa.Array]:
    return [pc.list_element(lists, i) for i in range(count)]


def _scattered(values: pa.Array, at: np.ndarray, count: int) -> pa.Array:
    """`values` placed at rows `at` (each row at most once), null elsewhere."""
    where = np.full(count, -1, np.int64)
    where[at] = np.arange(len(at))
    return values.take(pa.array(where, mask=where < 0))


def _rules(f: _Fields, now: int) -> pa.Array:
    """Whether each row's values are decided here: every rule `quick.row_values` applies passed."""
    head = f.head
    plain_head = pc.and_(
        pc.invert(pc.match_substring_regex(head, f"{re.escape(FORMAT_MARK)}|---|\\x00")),  # as `quick` reads
        pc.match_substring_regex(head, "[!-~]"),  # not blank by any reading of whitespace
    )
    small = pc.less_equal(pc.binary_length(head), LIMITS.description_bytes // 4)
    dated = pc.and_(
        pc.greater_equal(f.timestamp, LIMITS.earliest_time),
        pc.less_equal(f.timestamp, now + LIMITS.future_slack_s),
    )
    identity = pc.binary_join_element_wise(f.account, " <", f.account, "@agora>", "")
    same_person = pc.or_(
        pc.equal(f.declared, "1"),
        pc.and_(pc.equal(f.author, identity), pc.equal(f.committer, identity)),
    )
    masks = [plain_head, small, dated, same_person]
    masks.append(pc.invert(pc.match_substring_regex(f.account, _NOT_STORABLE)))
    masks.append(pc.invert(pc.match_substring_regex(f.text, SECRET_HINTS)))  # `quick` scans the message
    flat = pc.and_(
        pc.match_substring_regex(f.meta, FLAT_OBJECT), pc.less_equal(pc.binary_length(f.meta), LIMITS.meta_bytes)
    )
    masks.append(pc.fill_null(flat, True))  # no metadata: `{}`
    ok = np.logical_and.reduce([m.to_numpy(False) for m in masks])
    ok &= _verification_rule(f)
    ok &= f.counts(f.tag_rows) <= LIMITS.tags
    ok &= pc.list_value_length(f.parents).to_numpy(False) <= LIMITS.parents
    ok &= f.counts(f.ref_rows) <= LIMITS.cross_refs
    metric_counts = f.counts(f.metric_rows)
    ok &= metric_counts <= LIMITS.metrics
    ok &= ~f.tagged(*_RULED)
    ok &= ~f.tagged(HYPOTHESIS) | (metric_counts == 0)
    finite = pc.is_finite(f.metric_values).to_numpy(False)
    ok[f.metric_rows[~finite]] = False
    ok[_repeated_names(f)] = False
    return pa.array(ok)


def _verification_rule(f: _Fields) -> np.ndarray:
    """`contribution._verification_rule` passed, or not needed (no target, verdict or verification tag)."""
    tagged = f.tagged(VERIFICATION)
    targeted = f.target.is_valid().to_numpy(False)
    judged = f.verdict.is_valid().to_numpy(False)
    on_target = pc.and_(pc.equal(pc.list_value_length(f.parents), 1), pc.equal(pc.list_element(f.parents, 0), f.target))
    passed = tagged & targeted & judged & pc.fill_null(on_target, False).to_numpy(False)
    return np.where(tagged | targeted | judged, passed, True)


def _repeated_names(f: _Fields) -> np.ndarray:
    """The rows that name a metric twice (`quick` leaves them)."""
    if len(f.metric_names) < 2:
        return np.zeros(0, np.int64)
    codes = pc.dictionary_encode(f.metric_names).indices.to_numpy().astype(np.int64)
    keys = np.sort(f.metric_rows.astype(np.int64) * (int(codes.max()) + 1) + codes)
    return keys[1:][keys[1:] == keys[:-1]] // (int(codes.max()) + 1)


def _table(f: _Fields, keep: pa.Array, schema: pa.Schema) -> pa.Table:
    """The taken rows as `parallel.local_rows` builds them."""
    rows = np.flatnonzero(keep.to_numpy(False))
    count = len(rows)
    title = pc.list_element(pc.split_pattern(f.head, "\n", max_splits=1), 0)
    tags = _lists(f.tags, f.tag_rows, f.count)
    refs = _lists(f.refs, f.ref_rows, f.count)
    metric_offsets = _offsets(f.metric_rows, f.count)
    metrics = pa.MapArray.from_arrays(metric_offsets, f.metric_names, f.metric_values)
    primary = _scattered(f.primary, f.primary_rows, f.count)
    columns = {
        "sha": f.sha,
        "account": f.account,
        "timestamp": f.timestamp,
        "title": title,
        "description": f.head,
        "tags": tags,
        "metrics": metrics,
        "primary_metric": primary.cast(pa.float64()),
        "metadata": pc.fill_null(f.meta, "{}"),
        "parents": f.parents,
        "tree": f.tree,
        "reasons": _lists(pa.array([], pa.string()), np.zeros(0, np.int64), f.count),  # none: the rules passed
        "refs": refs,
        "parsed_account": f.account,
        "amends": pa.array(f.tagged(POLICY)),
        "declared_format": f.declared.cast(pa.int8()),
        "target": f.target,
        "verdict": f.verdict,
        "verifies": f.target,
        "run_backed": pc.if_else(f.verdict.is_valid(), False, None),  # a flat object holds no rerun
    }
    picked = pa.array(rows, pa.int64())
    out = []
    for field in schema:
        column = columns.get(field.name)
        if column is None:  # decided by the other commits: starts as `parallel._column` starts it
            column = pa.repeat(False, count) if field.type == pa.bool_() else pa.nulls(count, field.type)
        else:
            column = column.take(picked).cast(field.type)
        out.append(column)
    return pa.table(out, schema=schema)


def _offsets(rows_of: np.ndarray, count: int) -> pa.Array:
    offsets = np.zeros(count + 1, np.int32)
    np.cumsum(np.bincount(rows_of, minlength=count), out=offsets[1:])
    return pa.array(offsets)


def _lists(values: pa.Array, rows_of: np.ndarray, count: int) -> pa.Array:
    return pa.ListArray.from_arrays(_offsets(rows_of, count), values)
