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
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import LIMITS
from ..errors import AgoraError
from ..locks import acquire, release
from ..refs.names import ROOT
from ..refs.store import Repository
from ..refs.trees import dotgit_paths
from . import build, compare, delta, discover, listing, parallel, reader, segments, signatures
from .schema import CONTRIBUTIONS, FORMAT_VERSION, TABLES
from .segments import MANIFEST, Damaged, Manifest, OtherFormat, Segment, WriteFailed
from .state import current, index_dir, read_state

if TYPE_CHECKING:
    from ..policy import Answers

STORED = ("contributions", "cross_refs")  # the rest is derived on load
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
    new_rows: int
    rebuilt: bool
    warnings: tuple[str, ...] = ()


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


@dataclass(frozen=True)
class IndexRules:
    """What the rows depend on besides the commits: the project's metric (agora.toml), copied into each
    row's `primary_metric`, and the setup this clone pinned as its root."""

    primary_metric: str | None = None
    root: str | None = None
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # trusted public keys per account
    signatures_required: bool = False

    def recorded(self) -> dict:
        """The rules a stored index was built under (a change means a rebuild)."""
        return {"metric": self.primary_metric, "root": self.root, "signatures_required": self.signatures_required}


def update_index(
    repo: Repository,
    rules: IndexRules,
    rebuild: bool = False,
    directory: Path | None = None,
    now: int | None = None,
    progress: Callable[[int], None] | None = None,
    tips: Mapping[str, str] | None = None,
    seen: dict | None = None,
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
    if not rebuild and _current(seen, tips, now):
        return UpdateReport(0, False)
    with locked(directory, exclusive=True):
        if read_state(directory) != seen:
            tips = current_tips(repo)
        return _update_locked(repo, directory, rebuild, rules, now, dict(tips), progress)


def stored_tips(directory: Path, state: dict | None) -> dict[str, str]:
    """The ref tips the index covers (empty when there is none); for an index of an older format, the
    tips its manifest `state` lists."""
    try:
        manifest = segments.read_manifest(directory)
    except (Damaged, OtherFormat):
        manifest = None
    if manifest is not None:
        return manifest.tips
    old = (state or {}).get("tips")
    return {k: v for k, v in old.items() if isinstance(v, str)} if isinstance(old, dict) else {}


def _current(state: dict | None, tips: Mapping[str, str], now: int) -> bool:
    return current(state, tips, now, FORMAT_VERSION)


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
        manifest, new_rows = _advance(repo, directory, base or empty, tips, rules, now, progress)
    except Damaged as exc:
        warnings.append(f"the index was damaged ({exc}); rebuilt it from Git")
        base = None
        manifest, new_rows = _advance(repo, directory, empty, tips, rules, now, progress)
    segments.commit(directory, manifest)
    for name in LEGACY_FILES:
        if (directory / name).exists():
            segments.discard(directory / name)
    return UpdateReport(new_rows, base is None, tuple(warnings))


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
        legacy = read_state(directory, "state.json")
        if legacy is not None:
            _refuse_newer(directory, legacy.get("format_version", 0))
            version = legacy.get("format_version", 0)
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
) -> tuple[Manifest, int]:
    """The manifest after indexing the commits the tips add to `base` (new segments written, not yet
    committed), and how many rows are new."""
    new_rows, new_refs, listed = _new_rows(repo, directory, base, tips, rules, now, progress)
    stored = segments.find_rows(directory, base.segments, _revisited(directory, base, new_rows, listed, rules, now))
    worked = pa.concat_tables([new_rows, stored])
    worked = build.clear_listed(worked, listed)
    worked = signatures.recheck_waiting(repo.common_dir, worked, rules.keys)
    worked = build.finalize(worked, rules.root, presorted=stored.num_rows == 0, now=now)  # new rows come sorted
    is_new = pc.invert(pc.is_in(worked.column("sha"), value_set=stored.column("sha")))
    worked = delta.place_log_seq(worked, stored, is_new, base.accounts)
    rows_out, replaces = delta.changes(worked, stored)

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
    return manifest, new_rows.num_rows


def _parse_walk(
    repo: Repository,
    base: Manifest,
    tips: dict[str, str],
    rules: IndexRules,
    now: int,
    progress: Callable[[int], None] | None,
) -> tuple[pa.Table, Mapping[str, set[str]], bool]:
    """The own fields of the commits a `git log` walk finds (`parallel.WORK`, canonical order), what
    the accounts' logs list, and whether the walk was large: then parsed by worker processes, and the
    log listing of a rebuild read from the same walk (it printed every log commit)."""
    walked = _walk(repo, base, tips)
    head, in_bulk = parallel.take(walked, parallel.THRESHOLD)

    def listed_by(links: pa.Table) -> Mapping[str, set[str]]:
        if base.tips:
            return listing.new_entries(repo.common_dir, base.tips, tips)
        return listing.entries_from_walk(repo.common_dir, tips, links)

    blocks = chain(head, walked)
    work, listed = parallel.parse_all(blocks, rules.primary_metric, now, listed_by, progress, in_workers=in_bulk)
    return work, listed, in_bulk


def _new_rows(
    repo: Repository,
    directory: Path,
    base: Manifest,
    tips: dict[str, str],
    rules: IndexRules,
    now: int,
    progress: Callable[[int], None] | None,
) -> tuple[pa.Table, pa.Table, Mapping[str, set[str]]]:
    """The contributions and cross references of the commits the tips add, and what the accounts' logs
    list. One pipeline for one commit or a million: each commit's own fields (`parallel.WORK`), then
    the rules that need the other commits over whole columns: the graph rules, the evaluator policy,
    the signatures. In bulk, git answers about the root policy's files and `.git` paths while the graph
    rules run."""
    discovered = _discovered(repo, directory, base, tips)
    listed: Mapping[str, set[str]]
    with parallel.cyclic_gc_paused(), parallel.bulk_memory_pool():
        if discovered is not None:
            work = parallel.parse_here(reader.read(repo.common_dir, discovered), rules.primary_metric, now)
            listed, in_bulk = listing.new_entries(repo.common_dir, base.tips, tips), False
        else:
            work, listed, in_bulk = _parse_walk(repo, base, tips, rules, now, progress)
        known = _known_parents_of(repo, directory, base, work)
        if not in_bulk:
            table, refs = parallel.graph_rows(work, known, rules.root, listed)
            table = _evaluator_policy_table(repo, table, rules.root)
        else:
            with ThreadPoolExecutor(2) as thread:
                ahead = thread.submit(_answers_ahead, repo, rules.root, work.column("tree"))
                trees = pc.unique(work.column("tree").filter(pc.is_valid(work.column("account")))).drop_null()
                dotgit = thread.submit(dotgit_paths, repo.common_path, trees.to_pylist())
                table, refs = parallel.graph_rows(work, known, rules.root, listed)
                del work, trees  # the rows are held once
                table = _evaluator_policy_table(repo, table, rules.root, ahead.result(), dotgit.result())
        return _signatures_table(repo, table, rules), refs, listed


def _answers_ahead(repo: Repository, root: str | None, trees: pa.ChunkedArray) -> Answers | None:
    """The root policy's protected files in these trees, asked before the graph rules say which rows
    need them: nearly every judged row is under the root policy, and its trees are among these."""
    from ..policy import answers_ahead

    return answers_ahead(repo, root, trees.combine_chunks()) if root is not None else None


def _evaluator_policy_table(
    repo: Repository,
    table: pa.Table,
    root: str | None,
    ahead: Answers | None = None,
    dotgit: Mapping[str, str] | None = None,
) -> pa.Table:
    """Mark invalid the code-bearing rows whose tree changes a file their policy fixes or adds a `.git`
    path, and the amendments whose policy is broken (`policy.evaluator_violations`, `_dotgit_reasons`);
    the rows judged are picked over whole columns (with the answers asked `ahead`, if any)."""
    from ..policy import evaluator_violations

    sha, policy = table.column("sha"), table.column("policy")
    own = pc.equal(policy, sha)
    judged = pc.and_(table.column("code_bearing"), pc.invert(own))
    amends = pc.and_(own, pc.invert(_has_tag(table, "setup")))
    if root is not None:
        amends = pc.and_(amends, pc.not_equal(sha, root))
    picked = pc.indices_nonzero(pc.fill_null(pc.or_(judged, amends), False))
    columns = [table.column(c).take(picked).combine_chunks() for c in ("sha", "tree", "policy")]
    problems = evaluator_violations(repo, columns[0], columns[1], columns[2], root, ahead)
    rows = picked.to_numpy()
    found = {int(rows[at]): reasons for at, reasons in problems.items()}
    changed = pc.indices_nonzero(pc.fill_null(table.column("code_bearing"), False))
    trees = table.column("tree").take(changed).to_pylist()
    for at, reason in zip(changed.to_pylist(), _dotgit_reasons(repo, trees, dotgit)):
        if reason:
            found[at] = found.get(at, []) + [reason]
    return _append_reasons(table, found)


def _dotgit_reasons(repo: Repository, trees: list[str], found: Mapping[str, str] | None = None) -> list[str | None]:
    """For the trees of code-bearing contributions, the reason such a contribution is invalid when its
    tree holds a `.git` path (git refuses to check it out: it could be neither evaluated nor
    verified); `found`: what `refs.trees.dotgit_paths` already said of a set of trees holding these."""
    from ..contribution import DOTGIT_REASON

    paths = dotgit_paths(repo.common_path, trees) if found is None else found
    return [f"the tree holds {paths[tree]!r}: {DOTGIT_REASON}" if tree in paths else None for tree in trees]


def _has_tag(table: pa.Table, tag: str) -> pa.Array:
    """Per row, whether its tags hold `tag`."""
    tags = table.column("tags").combine_chunks()
    rows = pc.list_parent_indices(tags).filter(pc.equal(pc.list_flatten(tags), tag))
    return pc.is_in(pa.array(range(table.num_rows), pa.int64()), value_set=pc.cast(rows, pa.int64()))


def _signatures_table(repo: Repository, table: pa.Table, rules: IndexRules) -> pa.Table:
    """`signatures.check_rows` over a table: the rows that can fail a check (`_may_fail_signature`) as
    small dicts, their new reasons appended. An unsigned open project has none."""
    members = _members(repo)
    rows_at = _may_fail_signature(table, rules, members)
    if not rows_at:
        return table
    picked = table.take(pa.array(rows_at, pa.int64()))
    columns = [picked.column(name).to_pylist() for name in ("sha", "account", "policy")]
    rows = [
        {"sha": sha, "account": account, "policy": policy, "reasons": [], "valid": True}
        for sha, account, policy in zip(*columns)
    ]
    signatures.check_rows(repo.common_dir, rows, rules.keys, rules.signatures_required, members)
    return _append_reasons(table, {i: row["reasons"] for i, row in zip(rows_at, rows) if row["reasons"]})


def _may_fail_signature(table: pa.Table, rules: IndexRules, members: signatures.Members) -> list[int]:
    """The contribution rows whose signature is checked at all: all of them when signatures are required,
    else those of accounts with keys and those under a policy that lists members (`check_rows` passes
    any other row without reading it)."""
    named = pc.is_valid(table.column("account"))
    if not rules.signatures_required:
        listing_members = [p for p in pc.unique(table.column("policy")).to_pylist() if members(p) is not None]
        keyed = pa.array(sorted(a for a, keys in rules.keys.items() if keys), pa.string())
        may_fail = pc.or_(
            pc.is_in(table.column("account"), value_set=keyed),
            pc.is_in(table.column("policy"), value_set=pa.array(listing_members, pa.string())),
        )
        named = pc.and_(named, pc.fill_null(may_fail, False))
    return pc.indices_nonzero(named).to_pylist()


def _append_reasons(table: pa.Table, found: Mapping[int, list[str]]) -> pa.Table:
    """These reasons appended to those rows' reasons; `valid` follows."""
    if not found:
        return table
    at = sorted(found)
    before = table.column("reasons").take(pa.array(at, pa.int64())).to_pylist()
    values = pa.array([reasons + found[i] for i, reasons in zip(at, before)], pa.list_(pa.string()))
    array = parallel.replace_rows(table.column("reasons"), at, values)  # only those rows become Python values
    table = table.set_column(table.schema.get_field_index("reasons"), "reasons", array)
    return table.set_column(table.schema.get_field_index("valid"), "valid", pc.equal(pc.list_value_length(array), 0))


def _walk(repo: Repository, base: Manifest, tips: dict[str, str]) -> Iterator[bytes]:
    """Every commit the tips reach and the stored tips do not, as blocks of `git log` records."""
    new, old = sorted(set(tips.values())), sorted(set(base.tips.values()))
    return reader.walk_blocks(repo.common_dir, new, old, parallel.BLOCK)


def _discovered(repo: Repository, directory: Path, base: Manifest, tips: dict[str, str]) -> list[str] | None:
    """The commits the tips add, found from the moved refs alone when an index exists (`discover`: the
    cost is what is new); None when a `git log` walk must find them (no index, or most of the project
    is new)."""
    if not base.segments:
        return None

    def known(keys: list[tuple[int, str]]) -> set[str]:
        return set(segments.find_rows(directory, base.segments, set(keys), ["sha"]).column("sha").to_pylist())

    try:
        return discover.new_commits(repo.objects, base.tips, tips, known)
    except discover.TooMany:
        return None


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
    shifted = delta.first_new_keys(new_rows, base.accounts)
    if shifted:
        later = segments.rows_after(directory, base.segments, min(shifted.values()), ["sha", "timestamp", "account"])
        columns = (later.column(c).to_pylist() for c in ("sha", "timestamp", "account"))
        keys |= {(ts, sha) for sha, ts, account in zip(*columns) if account in shifted and (ts, sha) > shifted[account]}
    return keys


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


KNOWN_COLUMNS = ("sha", "account", "tree", "policy")


def _known_parents_of(repo: Repository, directory: Path, base: Manifest, work: pa.Table) -> dict[str, build.Known]:
    """The already indexed commits that these new rows name as parents (all that validation needs),
    looked up by key: the parent's committer time from Git, then the row groups that can hold it."""
    if not base.segments:
        return {}
    named = pc.unique(pc.list_flatten(work.column("parents")))
    wanted = named.filter(pc.invert(pc.is_in(named, value_set=work.column("sha")))).to_pylist()
    if not wanted:
        return {}
    keys = set()
    for sha in wanted:
        info = repo.commit_info(sha)
        if info is not None:
            keys.add((info.timestamp, sha))
    rows = segments.find_rows(directory, base.segments, keys, KNOWN_COLUMNS)
    missing = set(wanted) - set(rows.column("sha").to_pylist())
    if missing:  # a time Git and the reader see differently, or a parent that is no contribution
        rows = pa.concat_tables([rows, _by_sha(directory, base.segments, missing)])
    return build.known_from_table(rows)


def _by_sha(directory: Path, found: Sequence[Segment], shas: set[str]) -> pa.Table:
    """Rows by sha alone: every segment's sha column is read (the rare path)."""
    tables = [segments.read_segment(directory, s, KNOWN_COLUMNS) for s in found]
    table = segments.newest_versions(pa.concat_tables(tables))[0]
    return table.filter(pc.is_in(table.column("sha"), value_set=pa.array(sorted(shas), pa.string())))


# --- reading --------------------------------------------------------------------------------------


def read_rows(repo: Repository, columns: Sequence[str], shas: Iterable[str]) -> pa.Table:
    """`columns` (plus sha and timestamp) of the stored contributions whose sha is among `shas`, each
    row group filtered as it is read: a few thousand descriptions of a million-row index cost one row
    group of the column, not the whole column. Only what is stored: the caller has brought the index
    up to date (a sha it lacks is simply absent)."""
    wanted = pa.array(sorted(set(shas)), pa.string())

    def keep(table: pa.Table) -> pa.Table:
        return table.filter(pc.is_in(table.column("sha"), value_set=wanted))

    directory = index_dir(repo)
    with locked(directory, exclusive=False):
        return _read(directory, columns, keep)[1]


def _read(
    directory: Path, columns: Sequence[str] | None, keep: segments.RowFilter | None = None
) -> tuple[Manifest, pa.Table, pa.Table]:
    """The manifest and the logical tables (`columns` of contributions only, plus sha and timestamp;
    the rows `keep` keeps, when given)."""
    manifest = segments.read_manifest(directory)
    if manifest is None:
        raise Damaged("there is no index yet")
    names = None if columns is None else [c for c in CONTRIBUTIONS.names if c in {*columns, "sha", "timestamp"}]
    tables = [segments.read_segment(directory, s, names, keep) for s in manifest.segments]
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
        if manifest_exists(directory):
            warnings.append(f"the index was damaged ({exc}); rebuilt it from Git")
        return _rebuilt(repo, rules, directory, columns, warnings)
    return Index(contributions, refs, manifest.tips, tuple(warnings))


def manifest_exists(directory: Path) -> bool:
    return (directory / MANIFEST).exists()


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


__all__ = ["Index", "UpdateReport", "load_index", "update_index", "check_index", "TABLES", "locked"]
