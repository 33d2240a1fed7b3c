"""The index's one row pipeline, for one new commit or a million: own fields parsed, then the graph
checked in columns.

Each commit's own fields (`build.local_values`: what depends on that commit alone, the time and
intrinsic problems included) are read a block at a time by `columnar` where it can, else by `quick`,
else decoded as a `Contribution`. A small walk or a few discovered commits are parsed in this process
(`parse_here`); a large walk (a rebuild: over `THRESHOLD` bytes of `git log` records) in worker
processes, forked, so they start in milliseconds and share the loaded code: the main process hands
them tasks in walk order (blocks of raw records, or slices of a pack that each worker reads itself:
`packed.PackSlice`) and copies the tables they return into Arrow's pool as they arrive. The rows are put in
canonical order (timestamp, sha; `canonical`: sorted on the keys, reordered a column at a time, so
the rows are held once), then the rules that need the other commits (`graph_rows`: parents known,
no self-verification, the log listing, `code_bearing`, the policy in force) run in one pass over
plain columns. Every step is a function of the set of commits, never of which worker parsed what or
when it finished; the tests compare both ways of parsing.

Reading stays total: a commit that fails to parse is a row with its reason. A worker that dies
(killed, out of memory) breaks the pool: its block and every later one are parsed in the main process
instead, so no row is lost.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import graph_problems, older_than_setup
from ..lifetime import die_with_parent
from . import build, columnar, listing, packed, quick, reader
from .schema import CONTRIBUTIONS, CROSS_REFS

if TYPE_CHECKING:
    import numpy as np

R = TypeVar("R")

THRESHOLD = 4 << 20  # bytes of `git log` records: below, parsed here (no worker processes)
BLOCK = 1 << 20  # bytes of records per task

# the rows as workers return them: the contributions schema plus what the graph rules need (`build.Row`)
WORK = pa.schema(
    [
        *CONTRIBUTIONS,
        ("parsed_account", pa.string()),
        ("setup", pa.bool_()),
        ("amends", pa.bool_()),
        ("verifies", pa.string()),
        ("declared_format", pa.int8()),
        ("refs", pa.list_(pa.string())),
    ]
)


Task = bytes | packed.PackSlice  # a block of `git log` records, or commits of a pack to read first
Parsed = tuple[pa.Table, pa.Table, list[str]]  # `parse_block`'s rows, links and commits left to git


def workers() -> int:
    """Worker processes: one per core. The main process only passes blocks along, and git's walk
    shares the cores with them."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores)


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile (in this process and the workers it forks). A rebuild makes
    millions of short-lived acyclic objects, freed by their reference counts; each collection would
    scan every live object again (3% of a rebuild's CPU at a million contributions)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def bulk_memory_pool() -> Iterator[None]:
    """Arrow allocates with the C library's allocator meanwhile (in this process and the workers it
    forks). Its default, mimalloc, hands freed pages back and faults them in again zeroed: at 100k a third
    of a rebuild's system time, 0.3 s; at 1M 1.5 s of the rebuild's 24 s, with the same peak (1.5 GB)."""
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


def hand_back_freed_memory() -> None:
    """Give the C library allocator's free pages back to the system (glibc's `malloc_trim`; elsewhere
    nothing). In bulk, Arrow allocates with that allocator (`bulk_memory_pool`), which keeps what is freed
    for reuse: the buffers one phase of a rebuild frees would stay in this process's memory through the
    next (at a million contributions, 100-300 MB of the peak, more or less with the workers' timing)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # no C library to load by that name (not a Unix)
        return None


def take(blocks: Iterator[Task], size: int) -> tuple[list[Task], bool]:
    """The first blocks, up to `size` bytes of records or more, and whether there are more (the iterator
    then continues after them)."""
    head: list[Task] = []
    held = 0
    for block in blocks:
        head.append(block)
        held += len(block)
        if held >= size:
            return head, True
    return head, False


def local_rows(records: list, primary_metric: str | None, now: int) -> pa.Table:
    """The own fields of the rows of these commits (`reader.RawCommit`s or raw `git log` records),
    built column by column."""
    rows = [row_values(reader.as_raw(record), primary_metric, now) for record in records]
    columns = dict(zip(build.Row._fields, zip(*rows))) if rows else dict.fromkeys(build.Row._fields, ())
    return pa.table([_column(columns.get(f.name), f.type, len(rows)) for f in WORK], schema=WORK)


def _column(values, kind: pa.DataType, rows: int) -> pa.Array:
    """A column of `build.Row` values; one the other commits decide starts empty (null, or false)."""
    if values is not None:
        return pa.array(values, kind)
    return pa.repeat(False, rows) if kind == pa.bool_() else pa.nulls(rows, kind)


def row_values(raw: reader.RawCommit, primary_metric: str | None, now: int) -> build.Row:
    """A row's own values (`build.Row`): read by `quick` where it can (nearly every commit),
    else decoded as a `Contribution` (`general_values`)."""
    try:
        values = quick.row_values(raw, primary_metric, now)
    except Exception:  # never: the general path then says what is wrong with the commit
        values = None
    return values if values is not None else general_values(raw, primary_metric, now)


def general_values(raw: reader.RawCommit, primary_metric: str | None, now: int) -> build.Row:
    """`row_values` of any commit, through `reader.parse` and `build.local_values`."""
    p = reader.parse(raw)
    c = p.contribution
    if c is None:
        return build.not_a_contribution_values(raw, p.problem or "not a contribution")
    try:
        return build.local_values(raw, c, primary_metric, now)
    except Exception as exc:  # one unreadable commit never stops the reader
        return build.not_a_contribution_values(raw, f"unreadable: {type(exc).__name__}", c)


def parse_here(commits: Iterable[reader.RawCommit], primary_metric: str | None, now: int) -> pa.Table:
    """The own fields of these commits, parsed in this process, in canonical order."""
    return canonical([local_rows(list(commits), primary_metric, now)])


def parse_block(task: Task, primary_metric: str | None, now: int) -> Parsed:
    """The `local_rows` of the contributions in one block of `git log` records (most read by `columnar`,
    the rest one by one), the `log_links` of its records (what the log listing reads; a `PackSlice`
    gives those of most log commits itself), and the commits of a `PackSlice` only git can print."""
    block, read_links, unread = (task, packed.LogLinks(), []) if isinstance(task, bytes) else task.read()
    known_links = listing.links_table(read_links.shas, read_links.parents, read_links.entries)
    if not block:
        return WORK.empty_table(), known_links, unread
    try:
        records = pa.array(reader.records(block), pa.binary())
        links = pa.concat_tables([known_links, columnar.log_links(records)])
        contributions = records.filter(pc.invert(columnar.transport(records)))
        taken, left = columnar.rows(contributions, WORK, primary_metric, now)
    except Exception:  # never (the tests call `columnar` itself): read one commit at a time then
        lines = reader.records(block)
        links = pa.concat_tables([known_links, listing.log_links(lines, reader.records(block.lower()))])
        taken, left = WORK.empty_table(), [r for r in lines if not reader.is_transport(r)]
    if left:
        taken = pa.concat_tables([taken, local_rows(left, primary_metric, now)])
    return taken, links, unread


def parse_all(
    blocks: Iterable[Task],
    primary_metric: str | None,
    now: int,
    read_links: Callable[[pa.Table], R],
    progress: Callable[[int], None] | None = None,
    in_workers: bool = True,
) -> tuple[pa.Table, R]:
    """`parse_block` of every block, parsed by worker processes (`in_workers`) or here, then of the
    commits of pack slices only git prints; the rows joined in canonical order (`canonical`), and what
    `read_links` makes of the blocks' log links, computed meanwhile (the sort and the column copies
    release the GIL: at a million contributions the listing then costs no time); `progress(rows)` hears
    how many rows are parsed so far."""
    done: list[tuple[pa.Table, pa.Table]] = []
    unread: dict[Path, list[str]] = {}
    count = workers()
    try:
        pool: ProcessPoolExecutor | None = _pool(count) if in_workers else None
    except OSError:
        pool = None
    try:
        results = _Results(done, unread, primary_metric, now, progress)
        pool = _parse_each(blocks, pool, results, count)
        for git_dir, shas in list(unread.items()):  # printed blocks leave nothing unread
            pool = _parse_each(reader.printed_by_git(git_dir, shas, BLOCK), pool, results, count)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    if not done:
        return WORK.empty_table(), read_links(listing.LINKS.empty_table())
    links = pa.concat_tables([links for _, links in done])
    with ThreadPoolExecutor(1) as sorter:
        sorted_rows = sorter.submit(canonical, [rows for rows, _ in _emptied(done)])
        read = read_links(links)
        del links
        return sorted_rows.result(), read


@dataclass
class _Results:
    """Where `parse_all` keeps what the tasks gave, and what a task needs besides itself."""

    done: list[tuple[pa.Table, pa.Table]]
    unread: dict[Path, list[str]]  # by git directory: commits of pack slices only git prints
    primary_metric: str | None
    now: int
    progress: Callable[[int], None] | None
    rows: int = 0  # parsed so far

    def add(self, task: Task, parsed: Parsed) -> None:
        rows, links, unread = parsed
        self.done.append((rows, links))
        if unread and isinstance(task, packed.PackSlice):
            self.unread.setdefault(task.git_dir, []).extend(unread)
        self.rows += rows.num_rows
        if self.progress is not None:
            self.progress(self.rows)


def _parse_each(
    tasks: Iterable[Task], pool: ProcessPoolExecutor | None, results: _Results, count: int
) -> ProcessPoolExecutor | None:
    """`parse_block` of each task into `results`, in workers while there are any: the pool, or None
    once it broke."""
    in_flight: deque[tuple[Task, Future]] = deque()
    for task in tasks:
        pool = _submit(pool, in_flight, task, results.primary_metric, results.now)
        if pool is None:
            while in_flight:  # the tasks sent before stay in walk order
                pool = _collect(in_flight, results, pool)
            results.add(task, parse_block(task, results.primary_metric, results.now))
            continue
        if len(in_flight) > 2 * count:
            pool = _collect(in_flight, results, pool)
    while in_flight:
        pool = _collect(in_flight, results, pool)
    return pool


def _emptied(items: list) -> list:
    """The items, the list itself emptied (its holder no longer keeps them alive)."""
    taken = items[:]
    items.clear()
    return taken


def _submit(
    pool: ProcessPoolExecutor | None, in_flight: deque, task: Task, primary_metric: str | None, now: int
) -> ProcessPoolExecutor | None:
    """Send a task to the workers; None (the task not sent) when there are none or they died."""
    if pool is None:
        return None
    try:
        in_flight.append((task, pool.submit(_in_worker, task, primary_metric, now)))
        return pool
    except BrokenProcessPool:
        pool.shutdown(cancel_futures=True)
        return None


def _in_worker(task: Task, primary_metric: str | None, now: int) -> Parsed:
    return parse_block(task, primary_metric, now)  # looked up when called (tests replace it)


class Aside:
    """`fn(*args)` run in a forked process of its own, so that its Python work shares no lock with this
    process's threads; `result()` waits for it. The process inherits `fn` and `args` (nothing is copied
    to it; only the result comes back, pickled). Where no process can be started, or it dies, or its
    result cannot be sent, `fn` runs here instead; its exceptions are raised by `result()` either way.
    Start one before any thread of one's own: a fork copies only the forking thread."""

    def __init__(self, fn: Callable[..., R], *args) -> None:
        self._fn, self._args = fn, args
        try:
            self._process, self._answer = _forked(_aside, fn, args)
        except (OSError, ValueError):  # no process (out of memory or processes), or fork unavailable
            self._process = None

    def result(self):
        if self._process is not None:
            try:
                done, value = self._answer.recv()
            except (EOFError, OSError):  # it died before answering
                done, value = None, None
            finally:
                self._answer.close()
                self._process.join()
                self._process = None
            if done is True:
                return value
            if done is False:
                raise value
        return self._fn(*self._args)


def _forked(target: Callable, fn: Callable, args: tuple):
    """A started forked process running `target(this process's id, sender, fn, args)`, and the end that
    receives its answer."""
    context = multiprocessing.get_context("fork")
    answer, sender = context.Pipe(duplex=False)
    process = context.Process(target=target, args=(os.getpid(), sender, fn, args), daemon=True)
    try:
        process.start()
    finally:
        sender.close()  # the process holds its own end: its death ends the pipe
    return process, answer


def _aside(parent: int, sender, fn: Callable, args: tuple) -> None:
    die_with_parent(parent)
    try:
        answer = (True, fn(*args))
    except Exception as exc:
        answer = (False, exc)
    try:
        sender.send(answer)
    except Exception:  # a result or exception that cannot be pickled: done again where it is wanted
        sender.send((None, None))
    sender.close()


def _pool(count: int) -> ProcessPoolExecutor:
    """Forked workers that die with this process (`lifetime`): a killed rebuild leaves none holding the
    index's lock."""
    context = multiprocessing.get_context("fork")
    return ProcessPoolExecutor(count, mp_context=context, initializer=die_with_parent, initargs=(os.getpid(),))


def _collect(in_flight: deque, results: _Results, pool: ProcessPoolExecutor | None) -> ProcessPoolExecutor | None:
    """The oldest task's rows; a broken pool (a worker died) means parsing the rest here."""
    task, future = in_flight.popleft()
    if pool is not None:
        try:
            rows, links, unread = future.result()
            results.add(task, (owned(rows), owned(links), unread))
            return pool
        except BrokenProcessPool:
            pool.shutdown(cancel_futures=True)
            pool = None
    results.add(task, parse_block(task, results.primary_metric, results.now))
    return pool


def owned(table: pa.Table) -> pa.Table:
    """A copy of a table in Arrow's memory pool. A table a worker sent is unpickled into Python bytes
    objects, which the C allocator keeps (fragmented) after they are freed; copied as they arrive,
    each block's bytes are freed at once and reused for the next, and freeing the rows later (see
    `canonical`) gives the memory back for the sorted copy."""
    return pa.table([pa.concat_arrays(c.chunks) if c.num_chunks else c for c in table.columns], schema=table.schema)


def canonical(tables: list[pa.Table]) -> pa.Table:
    """The rows of these tables (`WORK`), joined, in canonical order (timestamp, sha). Only the keys are
    sorted; the columns are then put in that order one at a time, each input column released once taken
    (the list is emptied: its caller must hold no other reference), so the rows are held about once,
    not twice (a rebuild at a million rows holds 600 MB of them)."""
    keys = pa.table(
        {
            "timestamp": pa.chunked_array([t.column("timestamp") for t in tables], pa.int64()),
            "sha": pa.chunked_array([t.column("sha") for t in tables], pa.string()),
        }
    )
    order = pc.sort_indices(keys, [("timestamp", "ascending"), ("sha", "ascending")])
    del keys
    pending = {f.name: [c for t in tables for c in t.column(f.name).chunks] for f in WORK}
    tables.clear()
    columns = []
    for f in WORK:
        chunks = pending.pop(f.name)
        columns.append(pc.take(pa.chunked_array(chunks, f.type), order))
        del chunks
        release()
    return pa.table(columns, schema=WORK)


def release() -> None:
    """Hand the memory Arrow's pool has freed back to the system. Its allocator keeps freed pages for
    later use; after the sort and the graph rules of a rebuild at a million rows that is hundreds of MB
    that would stay in the process's peak."""
    pa.default_memory_pool().release_unused()


def graph_rows(
    work: pa.Table,
    known: Mapping[str, build.Known],
    root: str | None,
    listed: Mapping[str, set[str]],
    root_format: int = 1,
) -> tuple[pa.Table, pa.Table]:
    """The contributions table and cross references of these rows (in canonical order: `canonical`),
    with the rules that need the other commits applied. The checks run over whole columns; only the
    rows they flag are visited one by one, to word their reasons (`contribution.graph_problems`,
    `contribution.older_than_setup` against `root_format`, the root setup's)."""
    table = _graph_table(work, known, root, listed, root_format)
    release()  # the lookups and masks of `_graph_table`
    return table, _cross_refs(work)


def _graph_table(
    work: pa.Table, known: Mapping[str, build.Known], root: str | None, listed: Mapping[str, set[str]], root_format: int
) -> pa.Table:
    is_contribution = pc.is_valid(work.column("account")).combine_chunks()
    lookup = _lookup(work, known)  # sha -> the parsed account and tree, batch rows first
    parents = work.column("parents").combine_chunks()
    flat = pc.list_flatten(parents)
    first = _first_elements(parents)
    # the lookup rows of every parent, verified target and first parent, through one hash table
    at = pc.index_in(
        pa.concat_arrays([flat, work.column("verifies").combine_chunks(), first]), value_set=lookup.column("sha")
    )
    n = work.num_rows
    parent_at, target_at, first_at = at.slice(0, len(flat)), at.slice(len(flat), n), at.slice(len(flat) + n, n)
    parent_account = pc.take(lookup.column("account"), parent_at)
    unknown_parent = _any_per_row(parents, pc.is_null(parent_account), n)
    target_account = pc.take(lookup.column("account"), target_at)
    own_target = pc.fill_null(pc.equal(target_account, work.column("account")), False)
    is_listed = listing.listed_mask(work, listed)
    release()  # its hash tables: a million shas
    unlisted = pc.invert(is_listed)
    older = pc.fill_null(pc.less(work.column("declared_format"), root_format), False)
    flagged = pc.and_(is_contribution, pc.or_(pc.or_(pc.or_(unknown_parent, own_target), unlisted), older))
    first_tree = pc.take(lookup.column("tree"), first_at)
    code_bearing = pc.and_(is_contribution, pc.fill_null(pc.not_equal(first_tree, work.column("tree")), True))
    policy = _policy_column(work, first_at, known, root, is_contribution)
    reasons = _graph_reasons(work, flagged, lookup, is_listed, root_format)
    columns = {
        "code_bearing": code_bearing,
        "valid": pc.equal(pc.list_value_length(reasons), 0),
        "reasons": reasons,
        "policy": policy,
    }
    return pa.table([columns.get(f.name, work.column(f.name)) for f in CONTRIBUTIONS], schema=CONTRIBUTIONS)


def _lookup(work: pa.Table, known: Mapping[str, build.Known]) -> pa.Table:
    """sha, account (as parsed: also of a row that failed) and tree of the batch, then of the known
    commits (a sha in both: the batch's row comes first, so it wins)."""
    if not known:  # a rebuild: the batch's own columns, not a copy
        return pa.table(
            {"sha": work.column("sha"), "account": work.column("parsed_account"), "tree": work.column("tree")}
        ).combine_chunks()
    return pa.concat_tables(
        [
            pa.table(
                {"sha": work.column("sha"), "account": work.column("parsed_account"), "tree": work.column("tree")}
            ),
            pa.table(
                {
                    "sha": pa.array(list(known), pa.string()),
                    "account": pa.array([k.account for k in known.values()], pa.string()),
                    "tree": pa.array([k.tree for k in known.values()], pa.string()),
                }
            ),
        ]
    ).combine_chunks()


def _any_per_row(lists: pa.ListArray, flat: pa.Array, rows: int) -> pa.Array:
    """Per row of `lists`, whether `flat` (one value per list element) is true for any element."""

    hits = pc.list_parent_indices(lists).filter(pc.fill_null(flat, False))
    found = np.zeros(rows, dtype=bool)
    found[np.asarray(hits, dtype=np.int64)] = True
    return pa.array(found)


def _first_elements(lists: pa.ListArray) -> pa.Array:
    """Each list's first element, null for an empty (or null) list."""

    offsets = np.asarray(lists.offsets, dtype=np.int64)
    empty = np.asarray(pc.fill_null(pc.list_value_length(lists), 0), dtype=np.int64) == 0
    return pc.take(lists.values, pa.array(offsets[:-1], pa.int64(), mask=empty))


def _graph_reasons(
    work: pa.Table, flagged: pa.Array, lookup: pa.Table, is_listed: pa.Array, root_format: int
) -> pa.ChunkedArray | pa.Array:
    """The rows' reasons with the graph problems of the flagged rows appended
    (`contribution.graph_problems`, the setup's format, then the log listing)."""
    at = pc.indices_nonzero(flagged).to_pylist()
    if not at:
        return work.column("reasons")
    picked = work.take(pa.array(at, pa.int64()))
    wanted = pc.unique(pc.list_flatten(picked.column("parents"))).to_pylist()
    wanted += [t for t in picked.column("verifies").to_pylist() if t is not None]
    hits = lookup.filter(pc.is_in(lookup.column("sha"), value_set=pa.array(wanted, pa.string())))
    account_of: dict[str, str | None] = {}
    for sha, account in zip(hits.column("sha").to_pylist(), hits.column("account").to_pylist()):
        account_of.setdefault(sha, account)  # the batch's row first
    values = []
    columns = (picked.column(c).to_pylist() for c in ("account", "parents", "verifies", "reasons", "declared_format"))
    listed_here = is_listed.take(pa.array(at, pa.int64())).to_pylist()
    for account, parents, target, reasons, declared, listed in zip(*columns, listed_here):
        found = graph_problems(account, parents, target, account_of.get)
        older = older_than_setup(declared, root_format)
        if older:
            found.append(older)
        if not listed:
            found.append(build.not_listed(account))
        values.append(reasons + found)
    return replace_rows(work.column("reasons"), at, pa.array(values, pa.list_(pa.string())))


def replace_rows(column: pa.ChunkedArray, at: list[int], values: pa.Array) -> pa.Array:
    """`column` with its rows `at` (ascending) replaced by `values`, in one take."""

    index = np.arange(len(column), dtype=np.int64)
    index[np.asarray(at, dtype=np.int64)] = len(column) + np.arange(len(at), dtype=np.int64)
    return pc.take(pa.concat_arrays([*column.chunks, values]), pa.array(index))


def _policy_column(
    work: pa.Table, first_at: pa.Array, known: Mapping[str, build.Known], root: str | None, is_contribution: pa.Array
) -> pa.Array:
    """`amendments.policy_sha_for` over columns, null for the rows that are no contribution: a setup or an
    amendment (tagged policy by the root setup's account) is its own policy, any other contribution
    has its first parent's; a first parent outside the batch gives its known policy, one in the batch
    that is no contribution none. Resolved by pointer jumping (each round halves every chain)."""

    n = work.num_rows
    parsed = _numpy_bools(pc.is_valid(work.column("parsed_account")))
    owner = _root_account(work, known, root)
    amends = pc.and_(work.column("amends"), pc.equal(work.column("parsed_account"), pa.scalar(owner, pa.string())))
    own = parsed & _numpy_bools(pc.or_(work.column("setup"), pc.fill_null(amends, False)))
    at = np.asarray(pc.fill_null(first_at, -1), dtype=np.int64)  # the first parent's row: the batch's, then known
    parent_row = np.where(at < n, at, -1)
    follows = (parent_row >= 0) & parsed[np.maximum(parent_row, 0)] & ~own
    code = np.where(own, np.arange(n), np.where(at >= n, at, -1))
    resolved = ~follows
    step = parent_row.copy()
    while not resolved.all():
        waiting = np.flatnonzero(~resolved)
        target = step[waiting]
        ready = resolved[target]
        code[waiting[ready]] = code[target[ready]]
        step[waiting[~ready]] = step[target[~ready]]
        resolved[waiting[ready]] = True
    values = pa.concat_arrays(
        [work.column("sha").combine_chunks(), pa.array([k.policy for k in known.values()], pa.string())]
    )
    policy = pc.take(values, pa.array(code, pa.int64(), mask=code < 0))
    return pc.if_else(is_contribution, policy, pa.scalar(None, pa.string()))


def _numpy_bools(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False), dtype=bool)


def _root_account(work: pa.Table, known: Mapping[str, build.Known], root: str | None) -> str | None:
    """The parsed account of the root setup (a batch row first, else a known commit)."""
    if root is None:
        return None
    rows = work.filter(pc.equal(work.column("sha"), root))
    if rows.num_rows:
        return rows.column("parsed_account")[0].as_py()
    k = known.get(root)
    return k.account if k is not None else None


def _cross_refs(work: pa.Table) -> pa.Table:
    """The `Agora-Ref` trailers of the rows (only the rows that have any become Python values)."""
    some = work.select(["sha", "refs"]).filter(pc.greater(pc.list_value_length(work.column("refs")), 0))
    shas = some.column("sha").to_pylist()
    refs = some.column("refs").to_pylist()
    rows = [
        {"sha": sha, "url": u.split("#", 1)[0], "target": u.split("#", 1)[1] if "#" in u else None}
        for sha, found in zip(shas, refs)
        for u in found
    ]
    return pa.Table.from_pylist(rows, schema=CROSS_REFS)
