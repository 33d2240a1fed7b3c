"""Index rows: each commit's own values, the rules over the whole set, and the derived tables.

Rows are a pure function of the set of commits (never of the order they were fetched in), so an
index updated after many fetches equals one rebuilt from scratch, byte for byte.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import (
    LIMITS,
    PENDING_FUTURE,
    POLICY,
    SETUP,
    encode_metadata,
    identity_problems,
    intrinsic_problems,
    time_problems,
    verified_target,
)
from ..leaks import redact
from ..records import carries_run
from .listing import NOT_LISTED, listed_mask
from .schema import ACCOUNTS, EDGES, TAGS, VERDICTS

SECOND_SETUP = "a second setup: this clone's project root is pinned to another setup"
CASE_TWIN = "an account that differs only by case from the earlier account"


@dataclass(frozen=True)
class Known:
    """What validation needs to know about an already indexed commit."""

    account: str | None  # None: the commit is not a contribution
    tree: str
    policy: str | None = None  # the setup or amendment whose policy judges it


def not_listed(account: str) -> str:
    return f"{NOT_LISTED} ({account}): another account's log carries it, or none yet"


class Row(NamedTuple):
    """One commit's own values, by name, as either row path gives them (`parallel.row_values`): the
    contributions table's columns but those the other commits decide (log_seq, code_bearing, valid,
    policy: `parallel.local_rows` starts them empty), then what the graph rules need. A column is built
    from the field of its name, so the order here is free: what a commit that is no contribution lacks
    comes last, with its empty value."""

    sha: str
    timestamp: int
    title: str
    description: str
    parents: list[str]
    tree: str
    reasons: list[str]
    account: str | None = None
    tags: Sequence[str] = ()
    metrics: Sequence[tuple[str, float]] = ()
    primary_metric: float | None = None
    metadata: str = "{}"
    target: str | None = None
    verdict: str | None = None
    run_backed: bool | None = None
    refs: Sequence[str] = ()  # the Agora-Ref trailers (the cross_refs table)
    parsed_account: str | None = None  # the parsed account, also when the row itself failed
    setup: bool = False  # tagged setup
    amends: bool = False  # tagged policy: an amendment when its account is the root setup's
    verifies: str | None = None  # the target of a verification
    declared_format: int | None = None  # the Agora-Format it declares


def local_values(raw, c, primary_metric: str | None, now: int) -> Row:
    """The row of one contribution as far as it depends on that commit alone: `reasons` holds the time,
    intrinsic and Git identity problems; graph problems, the log listing, `code_bearing`, `valid` and
    `policy` need the other commits (`parallel.graph_rows`)."""
    return Row(
        sha=raw.sha,
        account=c.account,
        timestamp=raw.timestamp,
        title=_bounded(redact(c.title)),
        description=_bounded(redact(c.description)),
        tags=list(c.tags[: LIMITS.tags]),
        metrics=list(c.metrics.items())[: LIMITS.metrics],
        primary_metric=c.metrics.get(primary_metric) if primary_metric else None,
        metadata=redact(c.meta_text if c.meta_text is not None else encode_metadata(c.metadata)),
        parents=list(c.parents),
        tree=raw.tree,
        target=c.target,
        verdict=c.verdict.value if c.verdict else None,
        reasons=time_problems(raw.timestamp, now)
        + intrinsic_problems(c)
        + identity_problems(c.format, c.account, raw.author, raw.committer),
        run_backed=carries_run(c.metadata) if c.verdict else None,
        refs=list(c.cross_refs[: LIMITS.cross_refs]),
        parsed_account=c.account,
        setup=c.is_setup,
        amends=POLICY in c.tags,
        verifies=verified_target(c),
        declared_format=int(c.format),
    )


def _bounded(text: str) -> str:
    """At most the description limit of text (an oversize commit is invalid; the index stays small).
    Text is redacted before (`leaks.redact`: readers never republish a secret-shaped part, and a cut
    never leaves half of one unredacted)."""
    limit = LIMITS.description_bytes
    return (
        text
        if len(text) <= limit // 4 or len(text.encode()) <= limit
        else text.encode()[:limit].decode(errors="ignore")
    )


def not_a_contribution_values(raw, problem: str, parsed=None) -> Row:
    """The row of a commit that is no contribution (with why); `parsed`: the contribution it decoded as
    when reading its values failed."""
    row = Row(
        sha=raw.sha,
        timestamp=raw.timestamp,
        title=_bounded(redact(raw.message.split("\n", 1)[0])),
        description=_bounded(redact(raw.message.strip())),
        parents=list(raw.parents),
        tree=raw.tree,
        reasons=[problem],
    )
    if parsed is None:
        return row
    return row._replace(
        parsed_account=parsed.account,
        setup=parsed.is_setup,
        amends=POLICY in parsed.tags,
        verifies=verified_target(parsed),
        declared_format=int(parsed.format),
    )


def finalize(
    contributions: pa.Table, root: str | None = None, presorted: bool = False, now: int | None = None
) -> pa.Table:
    """Apply the rules that depend on the whole set or on the reader's clock, and order rows canonically.

    - a row *pending* because it was dated in the future stops being pending once `now` reaches it;
    - exactly one setup root: `root` (the setup this clone pinned) when given, else the earliest setup
      (time, then sha) without other problems; any other setup is invalid, whatever its timestamp;
    - of accounts whose names differ only by case (one ref file on a case-insensitive filesystem), the
      one holding the setup keeps its rows, else the one with the earliest contribution (time, then sha);
      the others' are invalid (claimed times: a backdated twin of another account still wins);
    - log_seq: each contribution's position in its account's history (time, then sha).
    Vectorised: only the (few) setup rows are visited one by one.
    """

    table = contributions if presorted else contributions.sort_by([("timestamp", "ascending"), ("sha", "ascending")])
    table = _recheck_pending(table, int(time.time()) if now is None else now)
    table = _case_twins(table, root)
    setup_rows = tagged(table, SETUP)
    column = table.column("reasons")
    before = {int(i): column[int(i)].as_py() for i in setup_rows}
    shas = table.column("sha")
    after, root_found = {}, False
    for i, reasons in before.items():
        current = [r for r in reasons if r != SECOND_SETUP]
        is_root = shas[i].as_py() == root if root else not root_found and not current
        if is_root:
            root_found = True
        else:
            current.append(SECOND_SETUP)
        after[i] = current
    if after != before:  # rare: a second setup appeared, or an earlier one arrived
        reasons = column.to_pylist()
        for i, current in after.items():
            reasons[i] = current
        reasons_array = pa.array(reasons, pa.list_(pa.string()))
        table = table.set_column(table.schema.get_field_index("reasons"), "reasons", reasons_array)
        valid = pc.equal(pc.list_value_length(reasons_array), 0)
        table = table.set_column(table.schema.get_field_index("valid"), "valid", valid)
    return table.set_column(
        table.schema.get_field_index("log_seq"), "log_seq", _account_positions(table.column("account"))
    )


def tagged(table: pa.Table, tag: str) -> np.ndarray:
    """The rows whose tags hold `tag`, ascending."""
    tags = table.column("tags").combine_chunks()
    hit = pc.equal(pc.list_flatten(tags), tag).to_numpy(zero_copy_only=False)
    return np.unique(pc.list_parent_indices(tags).to_numpy()[hit])


def case_twin_groups(accounts: Iterable[str]) -> list[list[str]]:
    """The accounts that share one name but for case, each group sorted, only groups of two or more."""
    groups: dict[str, list[str]] = {}
    for account in set(accounts):
        groups.setdefault(account.lower(), []).append(account)
    return [sorted(group) for group in groups.values() if len(group) > 1]


def _case_twins(table: pa.Table, root: str | None) -> pa.Table:
    """Rows of an account whose name differs only by case from an earlier account (`finalize`) carry
    CASE_TWIN with that account's name. Decided for the groups whose rows are all here (a rebuild; an
    update revisits a whole group when one of its accounts has new rows, `store._case_twin_keys`); a
    row outside them keeps what it has. The account holding the setup (`root`, else any setup) always
    keeps its rows: a twin dated before it would otherwise invalidate the whole project."""
    encoded = pc.dictionary_encode(table.column("account").combine_chunks())
    groups = case_twin_groups(a for a in encoded.dictionary.to_pylist() if a is not None)
    if not groups:
        return table
    replacements: dict[int, str | None] = {}
    codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    code_of = {name: i for i, name in enumerate(encoded.dictionary.to_pylist())}
    timestamps, shas = table.column("timestamp").to_numpy(), table.column("sha")
    for group in groups:
        rows = {name: np.flatnonzero(codes == code_of[name]) for name in group}
        first = {name: min((int(timestamps[i]), shas[int(i)].as_py()) for i in found) for name, found in rows.items()}
        holder = [name for name in group if _holds_setup(table, rows[name], root)]
        earliest = holder[0] if holder else min(group, key=lambda name: (first[name], name))
        for name in group:
            reason = None if name == earliest else f"{CASE_TWIN} {earliest}"
            replacements.update(dict.fromkeys(rows[name].tolist(), reason))
    return replace_reason(table, CASE_TWIN, replacements)


def _holds_setup(table: pa.Table, rows: np.ndarray, root: str | None) -> bool:
    """Whether these rows (one account's) hold the root setup (`root`; without one, any setup)."""
    part = table.select(["sha", "tags"]).take(pa.array(rows, pa.int64()))
    if root is not None:
        return root in part["sha"].to_pylist()
    return any(SETUP in tags for tags in part["tags"].to_pylist())


def _recheck_pending(table: pa.Table, now: int) -> pa.Table:
    """Drop the pending reason of rows whose committer time the clock has reached (time_problems)."""
    timestamps = table.column("timestamp").to_numpy()
    return _drop_reason(table, PENDING_FUTURE, lambda i: timestamps[i] <= now + LIMITS.future_slack_s)


def clear_listed(table: pa.Table, listed: Mapping[str, set[str]]) -> pa.Table:
    """Rows that were not listed in their account's log and now are: drop that reason."""

    if not rows_with_reason(table, NOT_LISTED) or not listed:
        return table
    now_listed = listed_mask(table, listed)
    return _drop_reason(table, NOT_LISTED, lambda i: now_listed[i].as_py())


def rows_with_reason(table: pa.Table, prefix: str) -> list[int]:
    """The rows holding a reason that starts with `prefix` (a vectorised search)."""

    reasons = table.column("reasons").combine_chunks()
    flat = pc.starts_with(pc.list_flatten(reasons), prefix).to_numpy(zero_copy_only=False)
    return [int(i) for i in np.unique(pc.list_parent_indices(reasons).to_numpy()[flat])]


def _drop_reason(table: pa.Table, prefix: str, due: Callable[[int], bool]) -> pa.Table:
    """Remove the reasons starting with `prefix` from the rows where `due(row)`; revalidate those rows."""
    return replace_reason(table, prefix, {i: None for i in rows_with_reason(table, prefix) if due(i)})


def replace_reason(table: pa.Table, prefix: str, replacements: Mapping[int, str | None]) -> pa.Table:
    """In each given row, replace the reasons starting with `prefix` by the new one (None: drop it),
    then recompute `valid` from the reasons."""
    if not replacements:
        return table
    values = table.column("reasons").combine_chunks().to_pylist()
    for i, new in replacements.items():
        kept = [r for r in values[i] if not r.startswith(prefix)]
        values[i] = kept + ([new] if new else [])
    array = pa.array(values, pa.list_(pa.string()))
    table = table.set_column(table.schema.get_field_index("reasons"), "reasons", array)
    return table.set_column(table.schema.get_field_index("valid"), "valid", pc.equal(pc.list_value_length(array), 0))


def pending_until(table: pa.Table) -> int | None:
    """The earliest committer time among pending rows (None: nothing is pending)."""

    reasons = table.column("reasons").combine_chunks()
    flat = pc.starts_with(pc.list_flatten(reasons), PENDING_FUTURE).to_numpy(zero_copy_only=False)
    rows = np.unique(pc.list_parent_indices(reasons).to_numpy()[flat])
    return int(table.column("timestamp").to_numpy()[rows].min()) if len(rows) else None


def _account_positions(accounts: pa.ChunkedArray) -> pa.Array:
    """For each row, how many earlier rows have the same account (null account: null)."""

    encoded = pc.dictionary_encode(accounts.combine_chunks())
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    missing = np.asarray(encoded.indices.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    codes = np.where(missing, -1, codes).astype(np.int64)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    positions = np.empty(len(codes), dtype=np.int64)
    positions[order] = np.arange(len(codes)) - group_start
    return pa.array(positions, pa.int64(), mask=missing)


def derived_tables(contributions: pa.Table) -> dict[str, pa.Table]:
    """Edges, tags, accounts and verdicts, all computed from the contributions table."""
    return {
        "edges": _edges(contributions),
        "tags": _tags(contributions),
        "accounts": _accounts(contributions),
        "verdicts": _verdicts(contributions),
    }


def _edges(c: pa.Table) -> pa.Table:
    lengths = pc.list_value_length(c.column("parents")).fill_null(0).to_numpy()

    child_idx = np.repeat(np.arange(c.num_rows), lengths)
    position = np.concatenate([np.arange(n) for n in lengths]) if len(lengths) else np.array([], int)
    parent = pc.list_flatten(c.column("parents"))
    child = c.column("sha").take(child_idx)
    child_account = c.column("account").take(child_idx)
    account_of = dict(zip(c.column("sha").to_pylist(), c.column("account").to_pylist()))
    parent_account = pa.array([account_of.get(p) for p in parent.to_pylist()], pa.string())
    cross = pc.fill_null(pc.not_equal(child_account, parent_account), False)
    return pa.table([child, parent, pa.array(position, pa.int32()), child_account, parent_account, cross], schema=EDGES)


def _tags(c: pa.Table) -> pa.Table:

    lengths = pc.list_value_length(c.column("tags")).fill_null(0).to_numpy()
    sha = c.column("sha").take(np.repeat(np.arange(c.num_rows), lengths))
    return pa.table([sha, pc.list_flatten(c.column("tags"))], schema=TAGS)


def _accounts(c: pa.Table) -> pa.Table:
    named = c.filter(pc.is_valid(c.column("account")))
    grouped = named.group_by("account").aggregate([("sha", "count"), ("timestamp", "min"), ("timestamp", "max")])
    table = pa.table(
        [grouped["account"], grouped["sha_count"], grouped["timestamp_min"], grouped["timestamp_max"]],
        schema=ACCOUNTS,
    )
    return table.sort_by("account")


def _verdicts(c: pa.Table) -> pa.Table:
    v = c.filter(pc.is_valid(c.column("verdict")))
    return pa.table(
        [v["sha"], v["account"], v["target"], v["verdict"], v["timestamp"], v["log_seq"], v["valid"]],
        schema=VERDICTS,
    )


def known_from_table(contributions: pa.Table) -> dict[str, Known]:
    columns = [contributions.column(name).to_pylist() for name in ("sha", "account", "tree", "policy")]
    return {sha: Known(account, tree, policy) for sha, account, tree, policy in zip(*columns)}
