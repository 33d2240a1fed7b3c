"""What an update changes besides adding rows: the stored rows it must revisit, their new log_seq, and
which of them really changed (pure functions over Arrow tables and the manifest's summaries).

The whole-set rules are those of `build.finalize`, applied to a working set: the new rows plus the
stored rows they can affect. Those are the watched rows (pending, not yet listed, waiting for an
identity, the setups when a setup is involved) and, for an account whose new rows sort before its
last stored row, its stored rows after the first new one (their log_seq moves).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import LIMITS, PENDING_FUTURE, SETUP
from .build import rows_with_reason, tagged
from .listing import NOT_LISTED
from .segments import Key, Watch
from .signatures import WAITING


def watch_of(table: pa.Table) -> Watch:
    """The rows of `table` that later updates may change (only those rows become Python values)."""

    def picked(prefix: str) -> list[int]:
        return rows_with_reason(table, prefix) if table.num_rows else []

    def values(rows: list[int]) -> tuple[list, list, list]:
        chosen = table.select(["timestamp", "sha", "account"]).take(pa.array(rows, pa.int64()))
        return tuple(chosen.column(c).to_pylist() for c in ("timestamp", "sha", "account"))  # type: ignore[return-value]

    setups = tagged(table, SETUP).tolist()
    pending, not_listed, waiting, setup = (
        values(rows) for rows in (picked(PENDING_FUTURE), picked(NOT_LISTED), picked(WAITING), setups)
    )
    return Watch(
        pending={sha: ts for ts, sha, _ in zip(*pending)},
        not_listed={sha: (ts, account) for ts, sha, account in zip(*not_listed)},
        waiting={sha: (ts, account) for ts, sha, account in zip(*waiting)},
        setups={sha: ts for ts, sha, _ in zip(*setup)},
    )


def advance(watch: Watch, worked: pa.Table) -> Watch:
    """The watch after an update whose working set (final rows) is `worked`."""
    now = watch_of(worked)
    watched = {*watch.pending, *watch.not_listed, *watch.waiting, *watch.setups}
    found = pc.is_in(worked.column("sha"), value_set=pa.array(sorted(watched), pa.string()))
    gone = set(worked.column("sha").filter(found).to_pylist()) if watched else set()

    def merged(old: dict, new: dict) -> dict:
        return {**{k: v for k, v in old.items() if k not in gone}, **new}

    return Watch(
        merged(watch.pending, now.pending),
        merged(watch.not_listed, now.not_listed),
        merged(watch.waiting, now.waiting),
        merged(watch.setups, now.setups),
    )


def touched(
    watch: Watch,
    new_rows: pa.Table,
    listed: Mapping[str, set[str]],
    keys: Mapping[str, tuple[str, ...]],
    now: int,
) -> set[Key]:
    """Keys of the watched stored rows this update may change."""
    found = {(ts, sha) for sha, ts in watch.pending.items() if ts <= now + LIMITS.future_slack_s}
    found |= {(ts, sha) for sha, (ts, account) in watch.not_listed.items() if account in listed.get(sha, ())}
    found |= {(ts, sha) for sha, (ts, account) in watch.waiting.items() if keys.get(account)}
    new_setup = len(tagged(new_rows, SETUP)) > 0
    if new_setup or any(sha in watch.setups for _, sha in found):
        found |= {(ts, sha) for sha, ts in watch.setups.items()}
    return found


def first_new_keys(new_rows: pa.Table, accounts: Mapping[str, tuple[int, int, str]]) -> dict[str, Key]:
    """The accounts whose new rows do not all sort after their last stored row, with their first new key:
    their stored rows after that key change position (log_seq)."""
    first: dict[str, Key] = {}
    if not accounts:  # nothing stored (a rebuild): no row to move
        return first
    for account, ts, sha in zip(*(new_rows.column(c).to_pylist() for c in ("account", "timestamp", "sha"))):
        if account is not None and account in accounts and (account not in first or (ts, sha) < first[account]):
            first[account] = (ts, sha)
    return {a: k for a, k in first.items() if k < (accounts[a][1], accounts[a][2])}


def place_log_seq(
    worked: pa.Table, stored: pa.Table, is_new: pa.ChunkedArray | pa.Array, accounts: Mapping[str, tuple[int, int, str]]
) -> pa.Table:
    """Give the working set (finalized, so log_seq counts only its own rows) the log_seq of the whole
    index. For an account with new rows, every stored row after its first new key is in the working set,
    so the rows from that key on are offset by the stored rows left out; other stored rows keep theirs."""
    index = worked.schema.get_field_index("log_seq")
    if stored.num_rows == 0:  # every new row sorts after its account's stored ones
        present = [a for a in pc.unique(worked.column("account")).to_pylist() if a in accounts]
        if not present:  # (the working set's accounts only: `accounts` holds every account of the index)
            return worked
        names = pa.array(present, pa.string())
        counts = pa.array([accounts[a][0] for a in present], pa.int64())
        add = pc.fill_null(pc.take(counts, pc.index_in(worked.column("account"), value_set=names)), 0)
        return worked.set_column(index, "log_seq", pc.add(worked.column("log_seq"), add))
    kept = dict(zip(stored.column("sha").to_pylist(), stored.column("log_seq").to_pylist()))
    shas, accts, ts, seqs = (worked.column(c).to_pylist() for c in ("sha", "account", "timestamp", "log_seq"))
    new = pa.chunked_array([is_new]) if isinstance(is_new, pa.Array) else is_new
    first: dict[str, Key] = {}
    in_work: dict[str, int] = {}
    for sha, account, t, fresh in zip(shas, accts, ts, new.to_pylist()):
        if account is None:
            continue
        if fresh:
            first[account] = min(first.get(account, (t, sha)), (t, sha))
        else:
            in_work[account] = in_work.get(account, 0) + 1
    out: list = []
    for sha, account, t, seq in zip(shas, accts, ts, seqs):
        if account is None:
            out.append(None)
        elif account in first and (t, sha) >= first[account]:
            out.append(seq + accounts.get(account, (0, 0, ""))[0] - in_work.get(account, 0))
        else:
            out.append(kept[sha])
    return worked.set_column(index, "log_seq", pa.array(out, pa.int64()))


def changes(worked: pa.Table, stored: pa.Table) -> tuple[pa.Table, int]:
    """The rows a new segment holds: the new ones and the stored ones whose values changed (canonical
    order), and how many of them replace stored rows."""
    if stored.num_rows == 0:
        return worked, 0
    is_stored = pc.is_in(worked.column("sha"), value_set=stored.column("sha"))
    before = {row["sha"]: row for row in stored.to_pylist()}
    candidates = worked.filter(is_stored)
    changed = [i for i, row in enumerate(candidates.to_pylist()) if row != before[row["sha"]]]
    keep = pc.or_(
        pc.invert(is_stored),
        pc.is_in(worked.column("sha"), value_set=candidates.column("sha").take(pa.array(changed, pa.int64()))),
    )
    return worked.filter(keep), len(changed)
