"""The stored index: immutable Parquet segments and one small manifest that names them.

`.git/agora/index/manifest.json` is the only file ever replaced. It lists the segments (with their
sizes, CRC-32 checksums and key ranges), the format version, a digest of the ref tips they cover and
the few rows later updates may have to revisit. The ref tips and the per-account counts, which grow
with the accounts, live in an immutable side file `segments/<id>.tables.json` that the manifest names
with its size and CRC-32; the manifest carries only what changed since that file was written, and a
new one is written once more than INLINE entries changed. `segments/<id>.parquet` holds rows in
canonical order (timestamp, sha); `<id>.refs.parquet` the cross-project references of its new rows.

A segment or side file is written, fsynced and renamed into place before a manifest names it, and deleted only
after a manifest that no longer names it is durable: a crash at any point leaves the old manifest or
the new one, each naming complete files. A segment may carry newer versions of rows an older segment
holds (`replaces` counts them); the logical table keeps the newest version of each sha.

Compaction is tiered: a contiguous run of segments (in age order, so newer versions still win) whose
sizes share a level (log base FANOUT of the row count) is merged once it holds FANOUT of them, and the
count never exceeds MAX_SEGMENTS.

Every read verifies a checksum: a whole-segment read the file's CRC-32 from the manifest, a partial
read (some columns or row groups) Parquet's page checksums.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import json
import os
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import AgoraError
from ..locks import READ_ONLY_ERRORS
from .osfiles import reading, writing
from .schema import CONTRIBUTIONS, CROSS_REFS
from .state import FORMAT_VERSION, ManifestHead, checksum, tips_digest

MANIFEST = "manifest.json"
SEGMENTS = "segments"
KEY = [("timestamp", "ascending"), ("sha", "ascending")]
REFS_KEY = [("sha", "ascending"), ("url", "ascending"), ("target", "ascending")]
FANOUT = 4
MAX_SEGMENTS = 32
ROW_GROUP = 8192  # rows: a lookup by key reads one row group of the columns it needs
DICTIONARY_COLUMNS = ("account", "tags", "verdict", "url")  # few distinct values; shas and texts are unique
TABLES_SUFFIX = ".tables.json"  # the side file of tips and accounts (`Tables`)
INLINE = 64  # tips and accounts changed since the side file that the manifest carries before a new one

Key = tuple[int, str]  # (timestamp, sha): the canonical order


class Damaged(Exception):
    """A segment or the manifest does not match its checksum, size or schema."""


class OtherFormat(Exception):
    """The manifest was written by another format version of the index."""

    def __init__(self, version: int):
        super().__init__(f"index format {version}")
        self.version = version


class WriteFailed(AgoraError):
    """The index could not be written (full disk, no permission); the message names the path."""

    def __init__(self, exc: OSError, path: Path | str):
        self.errno = exc.errno
        super().__init__(f"cannot write {exc.filename or path}: {exc.strerror or exc}")

    @property
    def read_only(self) -> bool:
        return self.errno in READ_ONLY_ERRORS


@dataclass(frozen=True)
class FileRef:
    name: str
    size: int
    crc32: int


@dataclass(frozen=True)
class Segment:
    id: int
    rows: int
    replaces: int  # rows that are newer versions of rows in older segments
    first: Key | None
    last: Key | None
    data: FileRef
    refs: FileRef | None = None


@dataclass(frozen=True)
class Watch:
    """Stored rows that later updates may change, by sha: pending ones (dated in the future), ones not yet
    listed by their account's log, ones waiting for their account's identity, and the setups."""

    pending: dict[str, int] = field(default_factory=dict)  # sha -> timestamp
    not_listed: dict[str, tuple[int, str]] = field(default_factory=dict)  # sha -> (timestamp, account)
    waiting: dict[str, tuple[int, str]] = field(default_factory=dict)
    setups: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Tables:
    """The ref tips indexed and the rows and last key of each account: they grow with the accounts, so
    the manifest names a side file holding them and carries only what changed since it was written."""

    tips: Mapping[str, str] = field(default_factory=dict)
    accounts: Mapping[str, tuple[int, int, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    format_version: int
    tips: dict[str, str]
    rules: dict  # what rows depend on besides the commits (root, metric, ...): a change means a rebuild
    segments: tuple[Segment, ...] = ()
    next_id: int = 1
    accounts: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # account -> (rows, last key)
    watch: Watch = field(default_factory=Watch)
    tables: FileRef | None = None  # the side file holding most of the tips and accounts (`Tables`)

    @property
    def pending_until(self) -> int | None:
        return min(self.watch.pending.values()) if self.watch.pending else None

    def to_json(self, base: Tables = Tables()) -> str:
        """The manifest; `base`: the content of the side file `tables` (what it holds is not repeated)."""
        body = {
            "format_version": self.format_version,
            "tips_digest": tips_digest(self.tips),  # read by state.is_current without this module
            "pending_until": self.pending_until,
            "rules": self.rules,
            "next_id": self.next_id,
            "segments": [_segment_json(s) for s in self.segments],
            "tables": [self.tables.name, self.tables.size, self.tables.crc32] if self.tables else None,
            "tips": _changed(base.tips, self.tips, lambda sha: sha),
            "accounts": _changed(base.accounts, self.accounts, list),
            "watch": {
                "pending": dict(sorted(self.watch.pending.items())),
                "not_listed": {k: list(v) for k, v in sorted(self.watch.not_listed.items())},
                "waiting": {k: list(v) for k, v in sorted(self.watch.waiting.items())},
                "setups": dict(sorted(self.watch.setups.items())),
            },
        }
        return json.dumps({**body, "checksum": checksum(body)}, sort_keys=True, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, text: str, read_tables: Callable[[FileRef], Tables] | None = None) -> Manifest:
        """The manifest in `text`; `read_tables` reads the side file it names (none named: not called)."""
        try:
            head = ManifestHead.parse(text)  # the one reader of the file; the head's rules first
            if head.format_version is not None and head.format_version != FORMAT_VERSION:
                raise OtherFormat(head.format_version)
            if not head.intact:
                raise Damaged("the manifest does not match its checksum")
            data = head.body
            tables = FileRef(*data["tables"]) if data["tables"] else None
            if tables is not None and read_tables is None:
                raise Damaged("the manifest names a side file that cannot be read here")
            base = read_tables(tables) if tables is not None and read_tables is not None else Tables()
            w = data["watch"]
            manifest = cls(
                format_version=data["format_version"],
                tips=_applied(base.tips, data["tips"], str),
                rules=data["rules"],
                segments=tuple(_segment_from(s) for s in data["segments"]),
                next_id=data["next_id"],
                accounts=_applied(base.accounts, data["accounts"], lambda v: (v[0], v[1], v[2])),
                watch=Watch(
                    pending=dict(w["pending"]),
                    not_listed={k: (v[0], v[1]) for k, v in w["not_listed"].items()},
                    waiting={k: (v[0], v[1]) for k, v in w["waiting"].items()},
                    setups=dict(w["setups"]),
                ),
                tables=tables,
            )
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise Damaged(f"the manifest is unreadable ({type(exc).__name__})") from None
        return manifest


def _changed(base: Mapping, now: Mapping, encode: Callable) -> dict:
    """What `now` changes in `base`: new or changed values, and None for a key gone."""
    found = {k: encode(v) for k, v in now.items() if base.get(k) != v}
    found.update({k: None for k in base if k not in now})
    return dict(sorted(found.items()))


def _applied(base: Mapping, changes: dict, decode: Callable) -> dict:
    merged = dict(base)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = decode(value)
    return merged


def _segment_json(s: Segment) -> dict:
    return {
        "id": s.id,
        "rows": s.rows,
        "replaces": s.replaces,
        "first": list(s.first) if s.first else None,
        "last": list(s.last) if s.last else None,
        "data": [s.data.name, s.data.size, s.data.crc32],
        "refs": [s.refs.name, s.refs.size, s.refs.crc32] if s.refs else None,
    }


def _segment_from(d: dict) -> Segment:
    return Segment(
        id=d["id"],
        rows=d["rows"],
        replaces=d["replaces"],
        first=(d["first"][0], d["first"][1]) if d["first"] else None,
        last=(d["last"][0], d["last"][1]) if d["last"] else None,
        data=FileRef(*d["data"]),
        refs=FileRef(*d["refs"]) if d["refs"] else None,
    )


# --- the compaction policy (pure) -----------------------------------------------------------------


def level(rows: int, fanout: int = FANOUT) -> int:
    n, found = max(rows, 1), 0
    while n >= fanout:
        n //= fanout
        found += 1
    return found


def plan_merge(rows: Sequence[int], fanout: int = FANOUT, cap: int = MAX_SEGMENTS) -> tuple[int, int] | None:
    """The contiguous run [start, stop) of segments (oldest first) to merge next, or None.

    Lowest level first: a run of consecutive segments no larger than level L that holds `fanout`
    segments of level L is merged (smaller neighbours ride along). Above the cap, the adjacent pair
    with the fewest rows is merged. Each row is rewritten about log_fanout(total) times in its life.
    """
    levels = [level(n, fanout) for n in rows]
    for lv in sorted(set(levels)):
        start = 0
        while start < len(levels):
            if levels[start] > lv:
                start += 1
                continue
            stop = start
            while stop < len(levels) and levels[stop] <= lv:
                stop += 1
            if sum(1 for i in range(start, stop) if levels[i] == lv) >= fanout:
                return start, stop
            start = stop
    if len(rows) > cap:
        i = min(range(len(rows) - 1), key=lambda i: (rows[i] + rows[i + 1], -i))
        return i, i + 2
    return None


# --- the logical table (pure) ---------------------------------------------------------------------


def newest_versions(table: pa.Table) -> tuple[pa.Table, int]:
    """Keep the last row of each sha (rows in age order); also how many older versions were dropped."""

    if table.num_rows == 0:
        return table, 0
    positions = pa.table({"sha": table.column("sha"), "i": pa.array(np.arange(table.num_rows), pa.int64())})
    last = positions.group_by("sha", use_threads=False).aggregate([("i", "max")]).column("i_max")
    if len(last) == table.num_rows:
        return table, 0
    return table.take(np.sort(last.to_numpy())), table.num_rows - len(last)


def logical(tables: Sequence[pa.Table], segments: Sequence[Segment]) -> pa.Table:
    """The rows of these segments (oldest first) as one table: newest version of each sha, canonical
    order. Without replaced rows, segments whose key ranges do not overlap are only concatenated; a few
    rows among or replacing those of a large segment are merged into it (`_merged`)."""
    if not tables:
        raise ValueError("no segments")
    if any(s.replaces for s in segments):
        merged = _merged(tables[0], tables[1:], replacing=True)  # only later segments replace rows
        return merged if merged is not None else newest_versions(pa.concat_tables(tables))[0].sort_by(KEY)
    order = sorted((i for i in range(len(tables)) if segments[i].first), key=lambda i: segments[i].first or (0, ""))
    parts: list[pa.Table] = []
    run: list[int] = []
    reach: Key | None = None
    for i in order:
        first = segments[i].first
        if run and reach is not None and first is not None and first <= reach:
            run.append(i)
        else:
            parts.extend(_sorted_run(tables, run))
            run = [i]
        last = segments[i].last
        reach = last if reach is None or (last is not None and last > reach) else reach
    parts.extend(_sorted_run(tables, run))
    return pa.concat_tables(parts) if parts else tables[0].slice(0, 0)


def _sorted_run(tables: Sequence[pa.Table], run: list[int]) -> list[pa.Table]:
    if not run:
        return []
    if len(run) == 1:
        return [tables[run[0]]]
    largest = max(run, key=lambda i: tables[i].num_rows)
    merged = _merged(tables[largest], [tables[i] for i in run if i != largest], replacing=False)
    return [merged if merged is not None else pa.concat_tables([tables[i] for i in run]).sort_by(KEY)]


MERGE_ROWS = 4096  # rows merged into a larger segment one by one (more: the run is sorted whole)


def _merged(base: pa.Table, later: Sequence[pa.Table], replacing: bool) -> pa.Table | None:
    """The rows of `base` (canonical order) with those of `later` put in their places, and, when
    `replacing`, the rows of `base` whose sha a later table holds left out (a later version replaces
    them): slices of `base` between those places, so a million rows are not copied, nor sorted again,
    for a few (a contribution dated before the newest indexed one, the rows of its account it moves).
    None when `later` is not a few rows (then sorting everything is no dearer), or keys are missing."""
    count = sum(t.num_rows for t in later)
    if not count or count > MERGE_ROWS or count * 8 > base.num_rows:
        return None
    extra = pa.concat_tables(later)
    if replacing:
        extra = newest_versions(extra)[0]
    extra = extra.sort_by(KEY)
    times = base.column("timestamp")
    if times.null_count or extra.column("timestamp").null_count or base.column("sha").null_count:
        return None
    places = _places(times.to_numpy(), base.column("sha"), extra)
    if places is None:
        return None
    gone = np.zeros(0, dtype=np.int64)
    if replacing:
        replaced = pc.is_in(base.column("sha"), value_set=extra.column("sha"))
        gone = np.flatnonzero(np.asarray(replaced.to_numpy(zero_copy_only=False), dtype=bool))
    pieces: list[pa.Table] = []
    start, i, j = 0, 0, 0
    while i < len(places) or j < len(gone):
        if j < len(gone) and (i == len(places) or gone[j] < places[i]):
            pieces.append(base.slice(start, int(gone[j]) - start))
            start = int(gone[j]) + 1
            j += 1
        else:
            stop = i + 1
            while stop < len(places) and places[stop] == places[i]:
                stop += 1
            pieces += [base.slice(start, int(places[i]) - start), extra.slice(i, stop - i)]
            start, i = int(places[i]), stop
    pieces.append(base.slice(start))
    return pa.concat_tables([piece for piece in pieces if piece.num_rows] or [base.slice(0, 0)])


MERGE_TIES = 1 << 16  # rows in the same second as merged rows, read to order them by sha (more: sort)


def _places(times: np.ndarray, shas: pa.ChunkedArray, extra: pa.Table) -> np.ndarray | None:
    """Where each row of `extra` (canonical order) goes among rows whose keys are `times` and `shas`
    (canonical order): the first place whose key is not smaller. None when the rows dated in the same
    seconds are too many to read (a publisher can date any number of commits alike)."""
    extra_times = extra.column("timestamp").to_numpy()
    low = np.searchsorted(times, extra_times, side="left")
    high = np.searchsorted(times, extra_times, side="right")
    if int((high - low).sum()) > MERGE_TIES:
        return None
    places = low.copy()
    extra_shas = extra.column("sha")
    for at in np.flatnonzero(high > low):  # the same second: ordered by sha
        same = shas.slice(int(low[at]), int(high[at] - low[at])).to_pylist()
        places[at] = low[at] + bisect.bisect_left(same, extra_shas[int(at)].as_py())
    return places


def logical_refs(tables: Sequence[pa.Table]) -> pa.Table:
    return pa.concat_tables(tables).sort_by(REFS_KEY) if tables else CROSS_REFS.empty_table()


def key_range(table: pa.Table) -> tuple[Key | None, Key | None]:
    if table.num_rows == 0:
        return None, None
    ts, sha = table.column("timestamp"), table.column("sha")
    return (ts[0].as_py(), sha[0].as_py()), (ts[-1].as_py(), sha[-1].as_py())


# --- files ----------------------------------------------------------------------------------------


def segment_dir(directory: Path) -> Path:
    return directory / SEGMENTS


def unused_id(directory: Path) -> int:
    """An id above every segment file present (named by a manifest or left by a crash)."""
    try:
        heads = [p.name.split(".")[0] for p in segment_dir(directory).iterdir()]
    except OSError:
        heads = []
    return max((int(h) for h in heads if h.isdigit()), default=0) + 1


def read_manifest(directory: Path) -> Manifest | None:
    try:
        text = (directory / MANIFEST).read_text()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise Damaged("the manifest is unreadable") from None
    return Manifest.from_json(text, lambda ref: read_tables(directory, ref))


_TABLES_CACHE: dict[tuple[str, FileRef], Tables] = {}  # side files never change: read once per process


def read_tables(directory: Path, ref: FileRef) -> Tables:
    """A side file of tips and accounts, checked against its size and CRC-32."""
    path = segment_dir(directory) / ref.name
    key = (str(path), ref)
    if key in _TABLES_CACHE:
        return _TABLES_CACHE[key]
    try:
        data = path.read_bytes()
        if len(data) != ref.size or zlib.crc32(data) != ref.crc32:
            raise Damaged(f"{path} does not match its checksum")
        body = json.loads(data)
        tables = Tables(
            tips={ref: str(sha) for ref, sha in body["tips"].items()},
            accounts={a: (v[0], v[1], v[2]) for a, v in body["accounts"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise Damaged(f"{path}: {type(exc).__name__}") from None
    _TABLES_CACHE.clear()  # one index at a time is the common case; a few at once stay correct
    _TABLES_CACHE[key] = tables
    return tables


def _folded(directory: Path, manifest: Manifest) -> tuple[Manifest, Tables]:
    """The manifest to write and the content of the side file it names: the same side file while what
    changed since it was written stays under INLINE entries (tips and accounts), else a new one."""
    base = read_tables(directory, manifest.tables) if manifest.tables is not None else Tables()
    changed = sum(base.tips.get(k) != v for k, v in manifest.tips.items()) + len(set(base.tips) - set(manifest.tips))
    changed += sum(base.accounts.get(k) != v for k, v in manifest.accounts.items())
    changed += len(set(base.accounts) - set(manifest.accounts))
    if changed <= INLINE:
        return manifest, base
    folder = segment_dir(directory)
    try:
        _mkdir(folder)
    except OSError as exc:
        raise WriteFailed(exc, folder) from None
    body = {"tips": manifest.tips, "accounts": {a: list(v) for a, v in manifest.accounts.items()}}
    text = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    ref = _write_bytes(folder, f"{manifest.next_id:08d}{TABLES_SUFFIX}", text)
    tables = Tables(dict(manifest.tips), dict(manifest.accounts))
    _TABLES_CACHE.clear()
    _TABLES_CACHE[(str(folder / ref.name), ref)] = tables
    return replace(manifest, tables=ref, next_id=manifest.next_id + 1), tables


def _write_bytes(folder: Path, name: str, data: bytes) -> FileRef:
    path, tmp = folder / name, folder / f".{name}.{os.getpid()}"
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            _fsync(handle.fileno())
        _replace(tmp, path)
    except OSError as exc:
        discard(tmp)
        raise WriteFailed(exc, tmp) from None
    return FileRef(name, len(data), zlib.crc32(data))


def write_segment(directory: Path, id: int, table: pa.Table, refs: pa.Table, replaces: int) -> Segment:
    """Write a segment's files durably (temporary file, fsync, rename; the directory is synced by
    `commit`). `table` must be in canonical order."""
    folder = segment_dir(directory)
    try:
        _mkdir(folder)
    except OSError as exc:
        raise WriteFailed(exc, folder) from None
    data = _write_table(folder, f"{id:08d}.parquet", table, statistics=["timestamp"])
    ref_file = _write_table(folder, f"{id:08d}.refs.parquet", refs.sort_by(REFS_KEY)) if refs.num_rows else None
    first, last = key_range(table)
    return Segment(id, table.num_rows, replaces, first, last, data, ref_file)


def _write_table(folder: Path, name: str, table: pa.Table, statistics: list[str] | None = None) -> FileRef:
    path, tmp = folder / name, folder / f".{name}.{os.getpid()}"
    try:
        _write_parquet(table, tmp, statistics)
        with open(tmp, "rb") as handle:
            crc, size = 0, 0
            while chunk := handle.read(1 << 22):
                crc, size = zlib.crc32(chunk, crc), size + len(chunk)
            _fsync(handle.fileno())
        _replace(tmp, path)
    except OSError as exc:
        discard(tmp)
        raise WriteFailed(exc, tmp) from None
    return FileRef(name, size, crc)


def _write_parquet(table: pa.Table, path: Path, statistics: list[str] | None) -> None:
    # uncompressed: the index is a local cache and update time matters more than disk
    with writing(path) as sink:
        pq.write_table(
            table,
            sink,
            compression="none",
            use_dictionary=[c for c in DICTIONARY_COLUMNS if c in table.column_names],
            write_statistics=statistics or False,
            row_group_size=ROW_GROUP,
            write_page_checksum=True,
        )


def commit(directory: Path, manifest: Manifest) -> Manifest:
    """Make the new segments (and side file, `_folded`) durable, then atomically replace the manifest,
    then drop unnamed files. Returns the manifest as written."""
    manifest, base = _folded(directory, manifest)
    folder = segment_dir(directory)
    path, tmp = directory / MANIFEST, directory / f".{MANIFEST}.{os.getpid()}"
    try:
        if folder.exists():
            _sync_dir(folder)
        with open(tmp, "w") as handle:
            handle.write(manifest.to_json(base))
            handle.flush()
            _fsync(handle.fileno())
        _replace(tmp, path)
        _sync_dir(directory)
    except OSError as exc:
        discard(tmp)
        raise WriteFailed(exc, tmp) from None
    collect_garbage(directory, manifest)
    return manifest


def named_files(manifest: Manifest) -> set[str]:
    """The files under segments/ this manifest names."""
    named = {f.name for s in manifest.segments for f in (s.data, s.refs) if f is not None}
    return named | ({manifest.tables.name} if manifest.tables is not None else set())


def collect_garbage(directory: Path, manifest: Manifest) -> None:
    """Delete segment files the manifest does not name (merged ones, or a crashed update's). Callers
    hold the exclusive lock, so no reader is between reading the manifest and opening its files."""
    folder = segment_dir(directory)
    named = named_files(manifest)
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name not in named:
            discard(entry)


def read_segment(
    directory: Path,
    segment: Segment,
    columns: Sequence[str] | None = None,
    keep: RowFilter | None = None,
    dated: Sequence[int] | None = None,
) -> pa.Table:
    """One segment's rows (those `keep` keeps of each row group as it is read, when given; `dated`: of
    the row groups that may hold a row with one of these timestamps only, `read_parquet`); the whole
    file is checked against its CRC-32 when every column is read."""
    path = segment_dir(directory) / segment.data.name
    schema = CONTRIBUTIONS if columns is None else pa.schema([CONTRIBUTIONS.field(c) for c in columns])
    try:
        if columns is None:
            _verify(path, segment.data)
            table = read_parquet(path, keep=keep)
        else:
            _check_size(path, segment.data)
            table = read_parquet(path, columns, page_checksums=True, keep=keep, dated=dated)
        if table.schema.names != schema.names:
            raise Damaged(f"{path} has an unexpected schema")
        return table.cast(schema)  # Parquet names list items "element"; Arrow says "item"
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise Damaged(f"{path}: {type(exc).__name__}") from None


RowFilter = Callable[[pa.Table], pa.Table]


def read_parquet(
    path: Path,
    columns: Sequence[str] | None = None,
    page_checksums: bool = False,
    keep: RowFilter | None = None,
    dated: Sequence[int] | None = None,
) -> pa.Table:
    """A Parquet file's `columns` (None: all), read one row group at a time: the peak stays near the
    table's own size (Arrow's whole-file reader buffers every column chunk at once, twice the memory
    for a few milliseconds saved; measured on a 100k index's search columns: +47 MB against +91 MB for
    19 MB of columns). A row group's columns are decoded on Arrow's thread pool: a warm analyze at 1M
    reads its 16 columns in 0.42 s instead of 0.59 s on two cores, for 25-50 MB more (one row group's
    columns decoded at once; search at 100k: 258 against 245 MB). `keep`: the rows to keep of
    each row group, applied as it is read (a few rows of a million-row column cost one row group).
    `dated` (sorted timestamps): only the row groups whose timestamp statistics may hold one of them
    (a group without statistics is read), so the rows of the last few minutes cost the last row group."""
    with reading(path) as source:
        f = pq.ParquetFile(source, page_checksum_verification=page_checksums, pre_buffer=False)
        groups = range(f.num_row_groups) if dated is None else _groups_dated(f.metadata, dated)
        return _row_groups(f, groups, None if columns is None else list(columns), keep)


def _groups_dated(metadata: pq.FileMetaData, dated: Sequence[int]) -> list[int]:
    """The row groups whose `timestamp` column's min..max holds one of the sorted `dated`."""
    names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
    if "timestamp" not in names:
        return list(range(metadata.num_row_groups))
    column = names.index("timestamp")
    groups = []
    for i in range(metadata.num_row_groups):
        stats = metadata.row_group(i).column(column).statistics
        if stats is None or not stats.has_min_max:
            groups.append(i)
            continue
        at = bisect.bisect_left(dated, stats.min)
        if at < len(dated) and dated[at] <= stats.max:
            groups.append(i)
    return groups


def _row_groups(
    f: pq.ParquetFile, groups: Iterable[int], columns: list[str] | None, keep: RowFilter | None = None
) -> pa.Table:
    read = (f.read_row_group(i, columns=columns, use_threads=True) for i in groups)
    tables = [keep(table) for table in read] if keep is not None else list(read)
    return pa.concat_tables(tables) if tables else f.schema_arrow.empty_table().select(columns or f.schema_arrow.names)


def read_refs(directory: Path, segment: Segment) -> pa.Table:
    if segment.refs is None:
        return CROSS_REFS.empty_table()
    path = segment_dir(directory) / segment.refs.name
    try:
        _verify(path, segment.refs)
        table = read_parquet(path)
        if table.schema.names != CROSS_REFS.names:
            raise Damaged(f"{path} has an unexpected schema")
        return table.cast(CROSS_REFS)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise Damaged(f"{path}: {type(exc).__name__}") from None


def verify(directory: Path, segment: Segment) -> None:
    """Check every file of a segment against its size and checksum."""
    for ref in (segment.data, segment.refs):
        if ref is not None:
            try:
                _verify(segment_dir(directory) / ref.name, ref)
            except OSError as exc:
                raise Damaged(f"{ref.name}: {type(exc).__name__}") from None


def _check_size(path: Path, ref: FileRef) -> None:
    if path.stat().st_size != ref.size:
        raise Damaged(f"{path} has {path.stat().st_size} bytes, the manifest says {ref.size}")


def _verify(path: Path, ref: FileRef) -> None:
    crc, size = 0, 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            crc, size = zlib.crc32(chunk, crc), size + len(chunk)
    if size != ref.size or crc != ref.crc32:
        raise Damaged(f"{path} does not match its checksum")


def find_rows(
    directory: Path, segments: Sequence[Segment], keys: Iterable[Key], columns: Sequence[str] | None = None
) -> pa.Table:
    """The newest stored version of the rows with these keys (those found), reading only the row groups
    whose timestamps can hold them."""
    wanted = {sha: ts for ts, sha in keys}
    names = list(columns) if columns is not None else CONTRIBUTIONS.names
    found: list[pa.Table] = []
    for segment in reversed(segments):  # newest first: the first version found is the current one
        if not wanted or segment.first is None or segment.last is None:
            continue
        here = {sha: ts for sha, ts in wanted.items() if segment.first <= (ts, sha) <= segment.last}
        if not here:
            continue
        table = _read_groups(directory, segment, names, set(here.values()), None)
        table = table.filter(pc.is_in(table.column("sha"), value_set=pa.array(sorted(here), pa.string())))
        table = table.select(names)
        for sha in table.column("sha").to_pylist():
            wanted.pop(sha, None)
        found.append(table)
    schema = pa.schema([CONTRIBUTIONS.field(c) for c in names])
    return pa.concat_tables(found) if found else schema.empty_table()


_FOOTERS: dict[tuple[str, FileRef], pq.FileMetaData] = {}  # segments never change: footers parsed once


def _parquet_file(path: Path, ref: FileRef) -> pq.ParquetFile:
    """A segment file opened for reads checked by page checksums, its footer parsed once per process
    (1 ms for a segment of a million rows, paid by each lookup otherwise)."""
    key = (str(path), ref)
    f = pq.ParquetFile(reading(path), metadata=_FOOTERS.get(key), page_checksum_verification=True, pre_buffer=False)
    if key not in _FOOTERS:
        if len(_FOOTERS) >= 4 * MAX_SEGMENTS:
            _FOOTERS.clear()
        _FOOTERS[key] = f.metadata
    return f


def rows_after(directory: Path, segments: Sequence[Segment], after: Key, columns: Sequence[str]) -> pa.Table:
    """Every stored version of the rows with a key above `after` (row groups by timestamp)."""
    found = []
    for segment in segments:
        if segment.last is None or segment.last <= after:
            continue
        table = _read_groups(directory, segment, list(columns), None, after[0])
        ts, sha = table.column("timestamp"), table.column("sha")
        later = pc.or_(pc.greater(ts, after[0]), pc.and_(pc.equal(ts, after[0]), pc.greater(sha, after[1])))
        found.append(table.filter(later).select(list(columns)))
    schema = pa.schema([CONTRIBUTIONS.field(c) for c in columns])
    return pa.concat_tables(found) if found else schema.empty_table()


def _read_groups(
    directory: Path, segment: Segment, columns: list[str], timestamps: set[int] | None, since: int | None
) -> pa.Table:
    """The row groups of a segment that may hold these timestamps (or any at or after `since`)."""
    path = segment_dir(directory) / segment.data.name
    needed = list(dict.fromkeys([*columns, "sha", "timestamp"]))
    try:
        _check_size(path, segment.data)
        f = _parquet_file(path, segment.data)
        meta = f.metadata
        ts_col = f.schema_arrow.get_field_index("timestamp")
        groups = []
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(ts_col).statistics
            if stats is None or not stats.has_min_max:
                groups.append(i)
            elif timestamps is not None and any(stats.min <= t <= stats.max for t in timestamps):
                groups.append(i)
            elif since is not None and stats.max >= since:
                groups.append(i)
        table = _row_groups(f, groups, needed) if groups else None
        schema = pa.schema([CONTRIBUTIONS.field(c) for c in needed])
        table = schema.empty_table() if table is None else table.cast(schema)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise Damaged(f"{path}: {type(exc).__name__}") from None
    return table


# --- the primitive steps (each one a place where a crash is injected in the tests) ----------------


def _mkdir(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)


def _fsync(fd: int) -> None:
    os.fsync(fd)


def _replace(src: Path, dst: Path) -> None:
    os.replace(src, dst)


def _sync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # some file systems cannot sync a directory
            raise
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    path.unlink()


def sync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (a no-op where the file system cannot sync a directory)."""
    _sync_dir(folder)


def discard(path: Path) -> None:
    """Best effort: what is left behind is collected by the next update."""
    with contextlib.suppress(OSError):
        _unlink(path)


def accounts_of(table: pa.Table) -> dict[str, tuple[int, int, str]]:
    """Rows and last key per account of a table in canonical order. Counted by dictionary codes, the
    last row of each account found as its first in the reversed column: no grouping engine, whose
    import (`pyarrow.acero`, `pyarrow.dataset`: 35 ms) a +1 fetch's update would otherwise wait for."""
    named = table.select(["account", "timestamp", "sha"]).filter(pc.is_valid(table.column("account")))
    rows = named.num_rows
    if not rows:
        return {}
    accounts = named.column("account").combine_chunks()
    encoded = pc.dictionary_encode(accounts)
    names = encoded.dictionary
    counts = np.bincount(np.asarray(encoded.indices), minlength=len(names))
    backwards = pc.take(accounts, int64_array(np.arange(rows - 1, -1, -1, dtype=np.int64)))
    last = int64_array(rows - 1 - np.asarray(pc.index_in(names, value_set=backwards), dtype=np.int64))
    columns = (names, counts.tolist(), named.column("timestamp").take(last), named.column("sha").take(last))
    return {a: (n, ts, sha) for a, n, ts, sha in zip(*(c if isinstance(c, list) else c.to_pylist() for c in columns))}


def int64_array(values: np.ndarray) -> pa.Array:
    """An int64 numpy array as an Arrow array over the same memory. `pa.array` of a numpy array imports
    `numpy.ma` (11 ms) to ask whether it is a masked one."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def merge_accounts(
    old: Mapping[str, tuple[int, int, str]], new: Mapping[str, tuple[int, int, str]]
) -> dict[str, tuple[int, int, str]]:
    merged = dict(old)
    for account, (count, ts, sha) in new.items():
        n, lts, lsha = merged.get(account, (0, ts, sha))
        merged[account] = (n + count, *max((lts, lsha), (ts, sha)))
    return merged
