"""What the project's witness records saw, resolved with Git (docs/protocol.md, "Witness records and
priority").

A witness record lists, per account, the log commit its CI saw at the tip of `refs/agora/log/<account>`.
Everything reachable from those log commits (the log's entries and all they build on, in any account)
existed when the record was written: `git rev-list` finds it. Each record is resolved once, the records
in time order and each only for what the earlier ones did not reach, and kept in
`.git/agora/witnessed.parquet` (a cache: delete it and it is rebuilt). A record older than one already
resolved (two CI runners, a late fetch) resolves them all again. A record whose tips are not all here yet
(a log not fetched, a rewritten one) is resolved with what is here, and neither it nor any later record
is cached: they are resolved again on the next read, once the missing commits may have arrived.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..contribution import WITNESS
from ..drafts import draft_of, sweep_drafts
from ..frontier.graph import tag_mask
from ..frontier.root import Witnessed
from ..project import Project
from ..records import WitnessRecord
from ..refs.git import GitError

CACHE = "witnessed.parquet"
_SCHEMA = pa.schema([("record", pa.string()), ("time", pa.int64()), ("sha", pa.string())])


def ci_records(contributions: pa.Table, witnesses: frozenset[str]) -> pa.Table:
    """The valid witness records of the CI accounts (`witnesses`), in time order (then log order, sha)."""
    if not witnesses:
        return contributions.slice(0, 0)
    named = pc.fill_null(pc.is_in(contributions["account"], value_set=pa.array(sorted(witnesses), pa.string())), False)
    valid = pc.fill_null(contributions["valid"], False)
    mask = tag_mask(contributions, WITNESS) & np.asarray(pc.and_(named, valid).to_numpy(zero_copy_only=False))
    records = contributions.filter(pa.array(mask, pa.bool_()))
    return records.sort_by([("timestamp", "ascending"), ("log_seq", "ascending"), ("sha", "ascending")])


def record_tips(project: Project, records: pa.Table) -> list[dict[str, str]]:
    """What each record lists (`records.WitnessRecord`), in the order of `records`."""
    from .indexing import load_rows

    if "metadata" in records.column_names:
        metadata = records
    else:
        metadata = load_rows(project, ["metadata"], records["sha"].to_pylist())
    text = dict(zip(metadata["sha"].to_pylist(), metadata["metadata"].to_pylist()))
    found = []
    for sha in records["sha"].to_pylist():
        meta = json.loads(text.get(sha) or "{}")
        record = WitnessRecord.read(meta) if isinstance(meta, dict) else None
        found.append(record.tips if record else {})
    return found


def witnessed(project: Project, contributions: pa.Table, witnesses: frozenset[str]) -> Witnessed | None:
    """What the CI accounts' records saw and when (`frontier.root.Witnessed`); None without records."""
    records = ci_records(contributions, witnesses)
    if not records.num_rows:
        return None
    order = records["sha"].to_pylist()
    times = dict(zip(order, records["timestamp"].to_pylist()))
    cached = _read_cache(project)
    done = list(dict.fromkeys(cached["record"].to_pylist())) if cached is not None else []
    if cached is None or done != order[: len(done)]:  # a record older than a resolved one: resolve all again
        cached, done = pa.table({n: [] for n in _SCHEMA.names}, schema=_SCHEMA), []
    new = order[len(done) :]
    if new:
        tips = record_tips(project, records.slice(len(done)))
        earlier = record_tips(project, records.slice(0, len(done))) if done else []
        reached, settled = [cached], True
        seen = {tip for listing in earlier for tip in listing.values()}
        for record, listing in zip(new, tips):
            shas, complete = _reached(project, listing.values(), seen)
            seen |= set(listing.values())
            found = pa.table({"record": [record] * len(shas), "time": [times[record]] * len(shas), "sha": shas})
            if settled and not complete:  # this record and every later one: resolved again next time
                if len(reached) > 1:  # the records resolved before it are kept
                    _write_cache(project, pa.concat_tables([t.cast(_SCHEMA) for t in reached]))
                settled = False
            reached.append(found)
        cached = pa.concat_tables([t.cast(_SCHEMA) for t in reached])
        if settled:
            _write_cache(project, cached)
    latest = int(max(t for t in times.values() if t is not None))
    return Witnessed(cached["sha"].combine_chunks(), cached["time"].to_numpy(), latest)


def _reached(project: Project, tips, seen: set[str]) -> tuple[list[str], bool]:
    """The commits reachable from `tips` and not from `seen` (log commits among them: the frontier
    ignores what is not a contribution), and whether that is the whole answer: False when a tip is
    missing here or is no commit (then what the others reach)."""
    wanted = list(dict.fromkeys(tips))
    if not wanted:
        return [], True
    listed = "\n".join(wanted + [f"^{tip}" for tip in sorted(seen)]) + "\n"
    try:
        return project.repo.git.run("rev-list", "--stdin", input=listed).split(), True
    except GitError:
        present = project.repo.git.run("rev-list", "--ignore-missing", "--stdin", input=listed, check=False)
        return present.split(), False


def _cache_path(project: Project) -> Path:
    return Path(project.repo.agora_path) / CACHE


def _read_cache(project: Project) -> pa.Table | None:
    try:
        return pq.read_table(_cache_path(project)).cast(_SCHEMA)
    except (OSError, pa.ArrowException):
        return None


def _write_cache(project: Project, table: pa.Table) -> None:
    path = _cache_path(project)
    sweep_drafts(path)
    draft = draft_of(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, draft)
        os.replace(draft, path)
    except OSError:  # a read-only clone: resolved again next time
        draft.unlink(missing_ok=True)
