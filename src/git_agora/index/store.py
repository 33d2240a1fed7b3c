"""The index as commands use it: brought up to date with the refs, loaded, checked.

Every read compares the stored tips with the current refs under refs/agora/, so a plain `git fetch`
is noticed too. An update reads only the commits not reachable from the stored tips, applies the
whole-set rules to them and to the stored rows they can change (`delta`), writes the result as one new
segment and commits it by replacing the manifest (`segments`). Writers take an exclusive lock, readers
a shared one. Nothing here writes refs or prints: warnings are returned.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import LIMITS
from ..errors import AgoraError
from ..locks import acquire, release
from ..refs.names import ROOT
from ..refs.store import Repository
from . import build, compare, delta, rows, segments, signatures
from .rows import IndexRules
from .schema import CONTRIBUTIONS, TABLES
from .segments import MANIFEST, Damaged, Manifest, OtherFormat, Segment, WriteFailed
from .state import FORMAT_VERSION, LEGACY_FILE, ManifestHead, current, index_dir, read_state, tips_digest

LOCK = "lock"
LEGACY_FILES = ("contributions.parquet", "cross_refs.parquet", "state.json")  # format 2: whole tables


class Index:
    """The tables of one project. Edges, tags, accounts and verdicts are derived when first used."""

    def __init__(
        self, contributions: pa.Table, cross_refs: pa.Table, tips: dict[str, str], warnings: tuple[str, ...] = ()
    ):
        self.contributions = contributions
        self.cross_refs = cross_refs
        self.tips = tips
        self.warnings = warnings

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
    """What an update did. `policies`: the policies (`policy` column) of the valid rows it wrote, when
    the set of policies in force can only have grown by them: no stored row stopped being valid and the
    index was not rebuilt (None otherwise: a caller that needs the set reads the whole column); `since`
    and `digest`: the tips digest (`state.tips_digest`) of the manifest it started from and of the one
    it wrote, so a caller can tell whether what it remembered of the index is what `policies` adds to."""

    new_rows: int
    rebuilt: bool
    warnings: tuple[str, ...] = ()
    policies: frozenset[str] | None = None
    since: str | None = None
    digest: str | None = None


@contextmanager
def locked(directory: Path, exclusive: bool) -> Iterator[None]:
    """The index's lock; an exclusive one that cannot be created raises `WriteFailed` (naming the path)."""
    try:
        fd = acquire(directory / LOCK, exclusive)
    except OSError as exc:
        raise WriteFailed(exc, directory / LOCK) from None
    try:
        yield
    finally:
        release(fd)


def current_tips(repo: Repository) -> dict[str, str]:
    return repo.refs_under(ROOT)


def update_index(
    repo: Repository,
    rules: IndexRules,
    rebuild: bool = False,
    directory: Path | None = None,
    now: int | None = None,
    progress: Callable[[int], None] | None = None,
    tips: Mapping[str, str] | None = None,
    seen: ManifestHead | None = None,
) -> UpdateReport:
    """Bring the index up to date with the refs; rebuild from scratch when asked or when damaged.
    A current index is recognised without a lock, so reading commands work on a read-only index.
    `now`: the reader's clock (default: the system's), which decides what is dated in the future.
    `progress(done)` hears how many commits a walk (a rebuild, a large update) has read so far.
    `tips`: the refs under refs/agora/ as the caller read them, after reading the manifest `seen`
    (`state.read_state`; None: no manifest). Under the lock they are read again only when the manifest
    is no longer `seen`: then another update may have indexed newer tips than these."""
    directory = directory or index_dir(repo)
    now = int(time.time()) if now is None else now
    if tips is None:
        seen = read_state(directory)
        tips = current_tips(repo)
    if not rebuild and current(seen, tips, now, FORMAT_VERSION):
        return UpdateReport(0, False)
    with locked(directory, exclusive=True):
        if read_state(directory) != seen:
            tips = current_tips(repo)
        return _update_locked(repo, directory, rebuild, rules, now, dict(tips), progress)


def stored_tips(directory: Path, state: ManifestHead | None) -> dict[str, str]:
    """The ref tips the index covers (empty when there is none); for an index of an older format, the
    tips its manifest `state` lists."""
    try:
        manifest = segments.read_manifest(directory)
    except (Damaged, OtherFormat):
        manifest = None
    if manifest is not None:
        return manifest.tips
    return state.tips if state is not None else {}


def _update_locked(
    repo: Repository,
    directory: Path,
    rebuild: bool,
    rules: IndexRules,
    now: int,
    tips: dict[str, str],
    progress: Callable[[int], None] | None = None,
) -> UpdateReport:
    warnings: list[str] = []
    base = None if rebuild else _stored_manifest(directory, warnings)
    if base is not None and base.rules != rules.recorded():
        base = None  # another root or metric: every row may change
    if base is not None:
        pending = base.pending_until
        if base.tips == tips and (pending is None or pending > now + LIMITS.future_slack_s):
            return UpdateReport(0, False)
        gone = set(base.tips.values()) - set(tips.values())
        if any(repo.commit_info(sha) is None for sha in gone):
            base = None  # an old tip vanished: the new commits cannot be told from the indexed ones
    # a rebuild never reuses the name of a file the old manifest may still name
    empty = Manifest(FORMAT_VERSION, {}, rules.recorded(), next_id=segments.unused_id(directory))
    try:
        manifest, new_rows, policies = _advance(repo, directory, base or empty, tips, rules, now, progress)
    except Damaged as exc:
        warnings.append(f"the index was damaged ({exc}); rebuilt it from Git")
        base = None
        manifest, new_rows, policies = _advance(repo, directory, empty, tips, rules, now, progress)
    segments.commit(directory, manifest)
    for name in LEGACY_FILES:
        if (directory / name).exists():
            segments.discard(directory / name)
    since = tips_digest(base.tips) if base is not None else None
    policies = policies if base is not None else None
    return UpdateReport(new_rows, base is None, tuple(warnings), policies, since, tips_digest(manifest.tips))


def _stored_manifest(directory: Path, warnings: list[str]) -> Manifest | None:
    try:
        manifest = segments.read_manifest(directory)
    except OtherFormat as exc:
        _refuse_newer(directory, exc.version)
        warnings.append(f"the index format changed ({exc.version} -> {FORMAT_VERSION}); rebuilt it from Git")
        return None
    except Damaged as exc:
        warnings.append(f"the index was damaged ({exc}); rebuilt it from Git")
        return None
    if manifest is None:
        legacy = read_state(directory, LEGACY_FILE)
        if legacy is not None:
            version = legacy.format_version or 0
            _refuse_newer(directory, version)
            warnings.append(f"the index format changed ({version} -> {FORMAT_VERSION}); rebuilt it from Git")
    return manifest


def _refuse_newer(directory: Path, version: int) -> None:
    if version > FORMAT_VERSION:
        raise AgoraError(
            f"the index in {directory} has format {version}, newer than this git-agora "
            f"understands ({FORMAT_VERSION}): upgrade git-agora"
        )


def _advance(
    repo: Repository,
    directory: Path,
    base: Manifest,
    tips: dict[str, str],
    rules: IndexRules,
    now: int,
    progress: Callable[[int], None] | None = None,
) -> tuple[Manifest, int, frozenset[str] | None]:
    """The manifest after indexing the commits the tips add to `base` (new segments written, not yet
    committed), how many rows are new, and the policies of the valid rows written (`UpdateReport`; None
    when a stored row stopped being valid)."""
    new_rows, new_refs, listed = rows.new_rows(repo, directory, base, tips, rules, now, progress)
    stored = segments.find_rows(directory, base.segments, _revisited(directory, base, new_rows, listed, rules, now))
    worked = pa.concat_tables([new_rows, stored])
    worked = build.clear_listed(worked, listed)
    worked = signatures.recheck_waiting(repo.common_path, worked, rules.keys)
    worked = build.finalize(worked, rules.root, presorted=stored.num_rows == 0, now=now)  # new rows come sorted
    is_new = pc.invert(pc.is_in(worked.column("sha"), value_set=stored.column("sha")))
    worked = delta.place_log_seq(worked, stored, is_new, base.accounts)
    rows_out, replaces = delta.changes(worked, stored)
    policies = _written_policies(worked, stored)

    new_keys = worked.select(["account", "timestamp", "sha"]).filter(is_new)  # not a copy of every column
    found = list(base.segments)
    next_id = base.next_id
    if rows_out.num_rows:
        found.append(segments.write_segment(directory, next_id, rows_out, new_refs, replaces))
        next_id += 1
    found, next_id = _compact(directory, found, next_id)
    manifest = Manifest(
        FORMAT_VERSION,
        tips,
        rules.recorded(),
        tuple(found),
        next_id,
        segments.merge_accounts(base.accounts, segments.accounts_of(new_keys)),
        delta.advance(base.watch, worked),
        base.tables,
    )
    return manifest, new_rows.num_rows, policies


def _written_policies(worked: pa.Table, stored: pa.Table) -> frozenset[str] | None:
    """The policies of the valid rows among `worked` (new and revisited), None when a revisited row
    that was valid (in `stored`) no longer is: then a policy may have left the set in force."""
    valid = worked.select(["sha", "policy"]).filter(pc.fill_null(worked.column("valid"), False))  # not every column
    if stored.num_rows:
        was = set(stored.select(["sha"]).filter(pc.fill_null(stored.column("valid"), False)).column("sha").to_pylist())
        if was - set(valid.column("sha").to_pylist()):
            return None
    return frozenset(pc.unique(valid.column("policy")).drop_null().to_pylist())


def _revisited(
    directory: Path,
    base: Manifest,
    new_rows: pa.Table,
    listed: Mapping[str, set[str]],
    rules: IndexRules,
    now: int,
) -> set[segments.Key]:
    """Keys of the stored rows this update may change (`delta.touched`), and of the rows whose log_seq
    moves because a new row of their account sorts before them."""
    keys = delta.touched(base.watch, new_rows, listed, rules.keys, now)
    keys |= _case_twin_keys(directory, base, new_rows)
    shifted = delta.first_new_keys(new_rows, base.accounts)
    if shifted:
        later = segments.rows_after(directory, base.segments, min(shifted.values()), ["sha", "timestamp", "account"])
        columns = (later.column(c).to_pylist() for c in ("sha", "timestamp", "account"))
        keys |= {(ts, sha) for sha, ts, account in zip(*columns) if account in shifted and (ts, sha) > shifted[account]}
    return keys


def _case_twin_keys(directory: Path, base: Manifest, new_rows: pa.Table) -> set[segments.Key]:
    """Keys of every stored row of the accounts whose names match a new row's account but for case
    (rare: the case-twin rule of `build.finalize` then sees all their rows, as a rebuild does)."""
    new = set(pc.unique(new_rows.column("account")).drop_null().to_pylist())
    if not new or not base.accounts:
        return set()
    groups = build.case_twin_groups([*base.accounts, *new])
    stored = {a for group in groups if new.intersection(group) for a in group} & set(base.accounts)
    if not stored:
        return set()
    rows = segments.rows_after(directory, base.segments, (-(2**63), ""), ["sha", "timestamp", "account"])
    columns = (rows.column(c).to_pylist() for c in ("sha", "timestamp", "account"))
    return {(ts, sha) for sha, ts, account in zip(*columns) if account in stored}


def _compact(directory: Path, found: list[Segment], next_id: int) -> tuple[list[Segment], int]:
    """Merge runs of segments while the policy asks for it (`segments.plan_merge`)."""
    while (run := segments.plan_merge([s.rows for s in found])) is not None:
        start, stop = run
        part = found[start:stop]
        table = segments.logical([segments.read_segment(directory, s) for s in part], part)
        refs = segments.logical_refs([segments.read_refs(directory, s) for s in part])
        dropped = sum(s.rows for s in part) - table.num_rows
        replaces = 0 if start == 0 else max(0, sum(s.replaces for s in part) - dropped)
        found[start:stop] = [segments.write_segment(directory, next_id, table, refs, replaces)]
        next_id += 1
    return found, next_id


# --- reading --------------------------------------------------------------------------------------


def read_rows(
    repo: Repository, columns: Sequence[str], shas: Iterable[str], timestamps: Iterable[int] | None = None
) -> pa.Table:
    """`columns` (plus sha and timestamp) of the stored contributions whose sha is among `shas`, each
    row group filtered as it is read: a few thousand descriptions of a million-row index cost one row
    group of the column, not the whole column. `timestamps`: theirs, when the caller knows them; then
    only the row groups whose dates may hold one are read (the newest rows: the last row group). Only
    what is stored: the caller has brought the index up to date (a sha it lacks is simply absent)."""
    wanted = pa.array(sorted(set(shas)), pa.string())
    dated = None if timestamps is None else sorted(set(timestamps))

    def keep(table: pa.Table) -> pa.Table:
        return table.filter(pc.is_in(table.column("sha"), value_set=wanted))

    directory = index_dir(repo)
    with locked(directory, exclusive=False):
        return _read(directory, columns, keep, dated)[1]


def _read(
    directory: Path,
    columns: Sequence[str] | None,
    keep: segments.RowFilter | None = None,
    dated: Sequence[int] | None = None,
) -> tuple[Manifest, pa.Table, pa.Table]:
    """The manifest and the logical tables (`columns` of contributions only, plus sha and timestamp;
    the rows `keep` keeps, when given, of the row groups that may hold a row dated `dated`)."""
    manifest = segments.read_manifest(directory)
    if manifest is None:
        raise Damaged("there is no index yet")
    names = None if columns is None else [c for c in CONTRIBUTIONS.names if c in {*columns, "sha", "timestamp"}]
    tables = [segments.read_segment(directory, s, names, keep, dated) for s in manifest.segments]
    if tables:
        contributions = segments.logical(tables, manifest.segments)
    else:
        schema = CONTRIBUTIONS if names is None else pa.schema([CONTRIBUTIONS.field(c) for c in names])
        contributions = schema.empty_table()
    refs = segments.logical_refs([segments.read_refs(directory, s) for s in manifest.segments if s.refs])
    return manifest, contributions, refs


def load_index(repo: Repository, rules: IndexRules, update: bool = True, columns: Sequence[str] | None = None) -> Index:
    """The index, brought up to date first (an unchanged project costs one for-each-ref). `columns`
    reads only those columns of the contributions (sha and timestamp always come along). On a read-only
    index directory the new commits are indexed into a temporary copy."""
    directory = index_dir(repo)
    warnings: list[str] = []
    if update:
        try:
            warnings += update_index(repo, rules, directory=directory).warnings
        except WriteFailed as exc:
            if not exc.read_only:
                raise
            return _load_in_copy(repo, rules, directory, columns, exc)
    try:
        with locked(directory, exclusive=False):
            manifest, contributions, refs = _read(directory, columns)
    except OtherFormat as exc:
        _refuse_newer(directory, exc.version)
        return _rebuilt(repo, rules, directory, columns, warnings)
    except Damaged as exc:
        if (directory / MANIFEST).exists():
            warnings.append(f"the index was damaged ({exc}); rebuilt it from Git")
        return _rebuilt(repo, rules, directory, columns, warnings)
    return Index(contributions, refs, manifest.tips, tuple(warnings))


def _rebuilt(
    repo: Repository, rules: IndexRules, directory: Path, columns: Sequence[str] | None, warnings: list[str]
) -> Index:
    try:
        update_index(repo, rules, rebuild=True, directory=directory)
    except WriteFailed as exc:
        if not exc.read_only:
            raise
        return _load_in_copy(repo, rules, directory, columns, exc, rebuild=True)
    index = load_index(repo, rules, update=False, columns=columns)
    return Index(index.contributions, index.cross_refs, index.tips, (*warnings, *index.warnings))


def _load_in_copy(
    repo: Repository,
    rules: IndexRules,
    directory: Path,
    columns: Sequence[str] | None,
    why: WriteFailed,
    rebuild: bool = False,
) -> Index:
    """Index into a temporary directory that links to the stored segments (they never change), read it,
    and leave the read-only index as it was."""
    with tempfile.TemporaryDirectory(prefix="agora-index-") as tmp:
        copy = Path(tmp)
        with locked(directory, exclusive=False):
            _link_copy(directory, copy)
            report = update_index(repo, rules, rebuild=rebuild, directory=copy)
            manifest, contributions, refs = _read(copy, columns)
    note = f"{why}: indexed the new commits in a temporary copy"
    return Index(contributions, refs, manifest.tips, (note, *report.warnings))


def _link_copy(directory: Path, copy: Path) -> None:
    try:
        text = (directory / MANIFEST).read_text()
        manifest = Manifest.from_json(text, lambda ref: segments.read_tables(directory, ref))
    except (OSError, Damaged, OtherFormat):
        return
    (copy / MANIFEST).write_text(text)
    (copy / segments.SEGMENTS).mkdir()
    for name in sorted(segments.named_files(manifest)):
        os.symlink(segments.segment_dir(directory) / name, copy / segments.SEGMENTS / name)


def check_index(repo: Repository, rules: IndexRules, now: int | None = None) -> list[str]:
    """Rebuild into a temporary place and compare the logical content with the incremental index: the
    ref tips, then every row of the tables (same rows, same canonical order); what differs, row by row.
    The contributions are compared a column at a time (`compare.differences_by_column`): at a million
    rows both whole tables would not fit beside each other in a laptop's memory budget."""
    now = int(time.time()) if now is None else now
    update_index(repo, rules, now=now)
    directory = index_dir(repo)
    with tempfile.TemporaryDirectory(prefix="agora-check-") as tmp:
        update_index(repo, rules, rebuild=True, directory=Path(tmp), now=now)
        try:
            with locked(directory, exclusive=False):
                return _differences(directory, Path(tmp))
        except (Damaged, OtherFormat) as exc:
            return [f"the index is damaged: {exc}"]


def _differences(mine: Path, theirs: Path) -> list[str]:
    manifests = segments.read_manifest(mine), segments.read_manifest(theirs)
    if manifests[0] is None or manifests[1] is None:
        raise Damaged("there is no index yet")
    for segment in manifests[0].segments:
        segments.verify(mine, segment)  # every file against its checksum, once
    differences = [] if manifests[0].tips == manifests[1].tips else ["the indexed ref tips differ from the refs"]

    def reader(directory: Path) -> compare.Reader:
        return lambda columns: _read(directory, columns)[1].select(list(columns))

    differences += compare.differences_by_column("contributions", reader(mine), reader(theirs), CONTRIBUTIONS.names)
    differences += compare.differences("cross_refs", _read(mine, ["sha"])[2], _read(theirs, ["sha"])[2])
    return differences


__all__ = ["Index", "IndexRules", "UpdateReport", "load_index", "update_index", "check_index", "TABLES", "locked"]
