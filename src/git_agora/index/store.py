"""The index on disk, `.git/agora/index/`: Parquet tables, the ref tips they cover, a lock.

Every read compares the stored tips with the current refs under refs/agora/, so a plain `git fetch`
is noticed too; an update reads only commits not reachable from the stored tips. Writers take an
exclusive lock and replace files atomically; readers take a shared lock. Nothing here writes refs or
prints: warnings are returned in `UpdateReport`.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..contribution import LIMITS
from ..errors import AgoraError
from ..refs.names import ROOT
from ..refs.store import Repository
from . import build, listing, reader, signatures
from .schema import CONTRIBUTIONS, CROSS_REFS, FORMAT_VERSION, TABLES
from .state import STATE_FILE, index_dir, read_state

STORED = ("contributions", "cross_refs")  # the rest is derived on load
DICTIONARY_COLUMNS = ("account", "tags", "verdict", "url")  # few distinct values; shas and texts are unique


class Index:
    """The tables of one project. Edges, tags, accounts and verdicts are derived when first used."""

    def __init__(self, contributions: pa.Table, cross_refs: pa.Table, tips: dict[str, str]):
        self.contributions = contributions
        self.cross_refs = cross_refs
        self.tips = tips

    @cached_property
    def _derived(self) -> dict[str, pa.Table]:
        return build.derived_tables(self.contributions)

    @property
    def edges(self) -> pa.Table:
        return self._derived["edges"]

    @property
    def tags(self) -> pa.Table:
        return self._derived["tags"]

    @property
    def accounts(self) -> pa.Table:
        return self._derived["accounts"]

    @property
    def verdicts(self) -> pa.Table:
        return self._derived["verdicts"]

    def table(self, name: str) -> pa.Table:
        return getattr(self, name)


@dataclass(frozen=True)
class UpdateReport:
    new_rows: int
    rebuilt: bool
    warnings: tuple[str, ...] = ()


@contextmanager
def locked(directory: Path, exclusive: bool) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def current_tips(repo: Repository) -> dict[str, str]:
    return repo.git.for_each_ref(ROOT)


def _read_state(directory: Path) -> dict | None:
    state = read_state(directory)
    if state is not None and state.get("format_version", 0) > FORMAT_VERSION:
        raise AgoraError(
            f"the index in {directory} has format {state['format_version']}, newer than this git-agora "
            f"understands ({FORMAT_VERSION}): upgrade git-agora"
        )
    return state


def _read_stored(directory: Path) -> dict[str, pa.Table]:
    tables = {}
    for name, schema in (("contributions", CONTRIBUTIONS), ("cross_refs", CROSS_REFS)):
        table = pq.ParquetFile(directory / f"{name}.parquet").read()
        if table.schema != schema:
            raise ValueError(f"{name}.parquet has an unexpected schema")
        tables[name] = table.cast(schema)  # Parquet names list items "element"; Arrow says "item"
    return tables


def _write(directory: Path, tables: dict[str, pa.Table], state: dict) -> None:
    """Write every table to a temporary file, then rename; the state file goes last."""
    for name, table in tables.items():
        tmp = directory / f".{name}.parquet.{os.getpid()}"
        # one chunk: the bytes must not depend on how many updates built the table
        # uncompressed: the index is a local cache, and the update after every fetch rewrites it
        pq.write_table(
            table.combine_chunks(),
            tmp,
            compression="none",
            use_dictionary=[c for c in DICTIONARY_COLUMNS if c in table.column_names],
            write_statistics=False,
        )
        os.replace(tmp, directory / f"{name}.parquet")
    tmp = directory / f".{STATE_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, directory / STATE_FILE)


@dataclass(frozen=True)
class IndexRules:
    """What the rows depend on besides the commits: the project's metric (agora.toml), copied into each
    row's `primary_metric`, and the setup this clone pinned as its root."""

    primary_metric: str | None = None
    root: str | None = None
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # trusted public keys per account
    signatures_required: bool = False


def update_index(
    repo: Repository, rules: IndexRules, rebuild: bool = False, directory: Path | None = None
) -> UpdateReport:
    """Bring the index up to date with the refs; rebuild from scratch when asked or when damaged."""
    directory = directory or index_dir(repo)
    with locked(directory, exclusive=True):
        return _update_locked(repo, directory, rebuild, rules)


def _update_locked(repo: Repository, directory: Path, rebuild: bool, rules: IndexRules) -> UpdateReport:
    warnings: list[str] = []
    tips = current_tips(repo)
    state = None if rebuild else _read_state(directory)
    stored = None
    if state is not None and state.get("format_version", 0) < FORMAT_VERSION:
        warnings.append(
            f"the index format changed ({state.get('format_version', 0)} -> {FORMAT_VERSION}); rebuilt it from Git"
        )
        state = None
    if state is not None:
        pending = state.get("pending_until")
        if state.get("tips") == tips and (pending is None or pending > time.time() + LIMITS.future_slack_s):
            return UpdateReport(0, False)
        try:
            stored = _read_stored(directory)
        except (OSError, ValueError, pa.ArrowException) as exc:
            warnings.append(f"the index was damaged ({type(exc).__name__}); rebuilt it from Git")
            state = None
    old_tips = state["tips"] if state else {}
    exclude = [sha for sha in set(old_tips.values()) if repo.commit_info(sha) is not None]
    parsed = [reader.parse(raw) for raw in reader.walk(repo.common_dir, sorted(set(tips.values())), exclude)]
    old = stored["contributions"] if stored else CONTRIBUTIONS.empty_table()
    old_refs = stored["cross_refs"] if stored else CROSS_REFS.empty_table()
    known = _known_parents(old, parsed)
    listed = listing.new_entries(repo.common_dir, old_tips, tips)
    rows = build.contribution_rows(parsed, known, rules.primary_metric, rules.root, listed=listed)
    _apply_evaluator_policy(repo, rows, rules.root)
    signatures.check_rows(repo.common_dir, rows, rules.keys, rules.signatures_required, _members(repo))
    new_rows, new_refs = build.rows_to_table(rows)
    combined = build.clear_listed(pa.concat_tables([old, new_rows]), listed)
    combined = signatures.recheck_waiting(repo.common_dir, combined, rules.keys)
    contributions = build.finalize(combined, rules.root, presorted=_appends_in_order(old, new_rows))
    cross_refs = pa.concat_tables([old_refs, new_refs]).sort_by([("sha", "ascending"), ("url", "ascending")])
    _write(
        directory,
        {"contributions": contributions, "cross_refs": cross_refs},
        {"format_version": FORMAT_VERSION, "tips": tips, "pending_until": build.pending_until(contributions)},
    )
    return UpdateReport(new_rows.num_rows, stored is None, tuple(warnings))


def _members(repo: Repository) -> signatures.Members:
    """The members each policy lists (`[identity] members`), read once per policy commit."""
    from functools import cache

    from ..config import ConfigError
    from ..policy import load_policy

    @cache
    def members(policy_sha: str | None):
        if policy_sha is None:
            return None
        try:
            listed = load_policy(repo, policy_sha).config.sections.get("identity", {}).get("members")
        except ConfigError:
            return None
        return dict(listed) if isinstance(listed, dict) and listed else None

    return members


def _apply_evaluator_policy(repo: Repository, rows: list[dict], root: str | None) -> None:
    """Mark invalid the code-bearing rows whose tree changes a file their policy fixes, and the
    amendments whose policy is broken (`policy.evaluator_violations`: one git process)."""
    from ..policy import evaluator_violations

    todo = [
        (r["sha"], r["tree"], r["policy"])
        for r in rows
        if build.needs_evaluator_check(r) or (r["policy"] == r["sha"] and r["sha"] != root and "setup" not in r["tags"])
    ]
    problems = evaluator_violations(repo, todo, root) if todo else {}
    for row in rows:
        if row["sha"] in problems:
            row["reasons"] = row["reasons"] + problems[row["sha"]]
            row["valid"] = False


def _appends_in_order(old: pa.Table, new: pa.Table) -> bool:
    """Do the new rows (already in canonical order) all sort after the old ones? The usual case: then
    no re-sort is needed."""
    if old.num_rows == 0 or new.num_rows == 0:
        return False
    last = (old["timestamp"][-1].as_py(), old["sha"][-1].as_py())
    return (new["timestamp"][0].as_py(), new["sha"][0].as_py()) > last


def _known_parents(old: pa.Table, parsed: list[reader.ParsedCommit]) -> dict[str, build.Known]:
    """The already indexed commits that new ones name as parents (all that validation needs)."""
    new = {p.raw.sha for p in parsed}
    wanted = sorted({parent for p in parsed for parent in p.raw.parents} - new)
    if not wanted or old.num_rows == 0:
        return {}
    rows = old.filter(pc.is_in(old.column("sha"), value_set=pa.array(wanted, pa.string())))
    return build.known_from_table(rows)


def load_index(repo: Repository, rules: IndexRules, update: bool = True) -> Index:
    """The index, brought up to date first (an unchanged project costs one for-each-ref)."""
    directory = index_dir(repo)
    if update:
        update_index(repo, rules, directory=directory)
    with locked(directory, exclusive=False):
        state = _read_state(directory) or {"tips": {}}
        try:
            stored = _read_stored(directory)
        except (OSError, ValueError, pa.ArrowException):
            stored = None
    if stored is None:
        update_index(repo, rules, rebuild=True, directory=directory)
        return load_index(repo, rules, update=False)
    return Index(stored["contributions"], stored["cross_refs"], state["tips"])


def check_index(repo: Repository, rules: IndexRules) -> list[str]:
    """Rebuild into a temporary place and list the tables that differ from the incremental index."""
    import tempfile

    update_index(repo, rules)
    directory = index_dir(repo)
    with tempfile.TemporaryDirectory(prefix="agora-check-") as tmp:
        update_index(repo, rules, rebuild=True, directory=Path(tmp))
        differences = []
        for name in (*STORED, STATE_FILE):
            a, b = directory / _file(name), Path(tmp) / _file(name)
            if name == STATE_FILE:
                same = json.loads(a.read_text()) == json.loads(b.read_text())
            else:
                same = a.read_bytes() == b.read_bytes()
            if not same:
                differences.append(name)
        return differences


def _file(name: str) -> str:
    return name if name.endswith(".json") else f"{name}.parquet"


__all__ = ["Index", "UpdateReport", "load_index", "update_index", "check_index", "TABLES", "locked"]
