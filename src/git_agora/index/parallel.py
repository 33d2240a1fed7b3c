"""Rows for a large walk (a rebuild): commits parsed in worker processes, the graph checked in columns.

The main process reads `git log` and hands chunks of raw records, in walk order, to worker processes
(forked, so they start in milliseconds and share the loaded code). Each worker decodes and parses its
chunk and returns the rows' own fields as one Arrow table (`build.local_row`: what depends on that
commit alone, including the time and intrinsic problems). The main process concatenates the tables in
chunk order, sorts them canonically (timestamp, sha, as `build.contribution_rows` does) and applies the
rules that need the other commits (`graph_rows`: parents known, no self-verification, the log
listing, `code_bearing`, the policy in force) in one pass over plain columns. Every step is a function
of the set of commits, never of which worker parsed what or when it finished, so the rows equal those
of the serial path (`build.contribution_rows`) value for value; the tests compare the two.

Reading stays total: a commit that fails to parse is a row with its reason, as in the serial path. A
worker that dies (killed, out of memory) breaks the pool: its chunk and every later one are parsed in
the main process instead, so no row is lost.

Small walks (below `THRESHOLD` commits: every incremental update) take the serial path and pay no
process start-up.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice

import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import POLICY_TAG
from . import build, reader
from .schema import CONTRIBUTIONS, CROSS_REFS

THRESHOLD = 20_000  # commits: below, the serial path (no worker processes)
CHUNK = 4_000  # records per task

# the rows as workers return them: the contributions schema plus what the graph rules need
WORK = pa.schema(
    [
        *CONTRIBUTIONS,
        ("_account", pa.string()),  # the parsed account, also when the row itself failed
        ("_setup", pa.bool_()),  # tagged setup
        ("_amends", pa.bool_()),  # tagged policy: an amendment when its account is the root setup's
        ("_verifies", pa.string()),  # the target of a verification
        ("_refs", pa.list_(pa.string())),
    ]
)


def workers() -> int:
    """Worker processes: one core is left to the main process and git."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores - 1)


def take(commits: Iterator, n: int) -> tuple[list, bool]:
    """The first n commits, and whether there are more (the iterator then continues after them)."""
    head = list(islice(commits, n))
    return head, len(head) == n


def local_rows(records: list, primary_metric: str | None, now: int) -> pa.Table:
    """The own fields of the rows of these commits (`reader.RawCommit`s or raw `git log` records)."""
    out = []
    for record in records:
        raw = reader.as_raw(record)
        p = reader.parse(raw)
        c = p.contribution
        if c is None:
            row = build._not_a_contribution(raw, p.problem or "not a contribution")
        else:
            try:
                row = build.local_row(raw, c, primary_metric, now)
            except Exception as exc:  # one unreadable commit never stops the reader
                row = build._not_a_contribution(raw, f"unreadable: {type(exc).__name__}")
        row["_account"] = c.account if c is not None else None
        row["_setup"] = c is not None and c.is_setup
        row["_amends"] = c is not None and POLICY_TAG in c.tags
        row["_verifies"] = c.target if c is not None and c.is_verification and c.target else None
        out.append(row)
    return pa.Table.from_pylist(out, schema=WORK)


def parse_all(
    commits: Iterable, primary_metric: str | None, now: int, started: Callable[[], None] | None = None
) -> pa.Table:
    """`local_rows` of every commit, in walk order, parsed by worker processes; `started()` runs once
    they are forked (work that uses threads starts there: forking a threaded process is unsafe)."""
    chunks = _chunks(iter(commits))
    done: list[pa.Table] = []
    in_flight: deque[tuple[list, Future]] = deque()
    count = workers()
    try:
        pool = _pool(count)
    except OSError:
        pool = None
    if started is not None:
        started()
    try:
        for chunk in chunks:
            if pool is None:
                done.append(local_rows(chunk, primary_metric, now))
                continue
            in_flight.append((chunk, pool.submit(_in_worker, chunk, primary_metric, now)))
            if len(in_flight) > 2 * count:
                pool = _collect(in_flight, done, primary_metric, now, pool)
        while in_flight:
            pool = _collect(in_flight, done, primary_metric, now, pool)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return pa.concat_tables(done) if done else WORK.empty_table()


def _in_worker(records: list, primary_metric: str | None, now: int) -> pa.Table:
    return local_rows(records, primary_metric, now)  # looked up when called (tests replace it)


def _pool(count: int) -> ProcessPoolExecutor:
    import multiprocessing

    return ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork"))


def _collect(
    in_flight: deque, done: list[pa.Table], primary_metric: str | None, now: int, pool: ProcessPoolExecutor | None
) -> ProcessPoolExecutor | None:
    """The oldest chunk's rows; a broken pool (a worker died) means parsing the rest here."""
    chunk, future = in_flight.popleft()
    if pool is not None:
        try:
            done.append(future.result())
            return pool
        except BrokenProcessPool:
            pool.shutdown(cancel_futures=True)
            pool = None
    done.append(local_rows(chunk, primary_metric, now))
    return pool


def _chunks(commits: Iterator) -> Iterator[list]:
    while chunk := list(islice(commits, CHUNK)):
        yield chunk


def graph_rows(
    work: pa.Table,
    known: Mapping[str, build.Known],
    root: str | None,
    listed: Mapping[str, set[str]],
) -> tuple[pa.Table, pa.Table]:
    """The contributions table (canonical order) and cross references of these rows, with the rules
    that need the other commits applied exactly as `build.contribution_rows` applies them."""
    work = work.sort_by([("timestamp", "ascending"), ("sha", "ascending")])
    shas = work.column("sha").to_pylist()
    parsed_accounts = work.column("_account").to_pylist()
    accounts = work.column("account").to_pylist()
    trees = work.column("tree").to_pylist()
    parents = work.column("parents").to_pylist()
    setups = work.column("_setup").to_pylist()
    amends = work.column("_amends").to_pylist()
    verifies = work.column("_verifies").to_pylist()

    account_of = {sha: k.account for sha, k in known.items()}
    account_of.update(zip(shas, parsed_accounts))
    tree_of = {sha: k.tree for sha, k in known.items()}
    tree_of.update(zip(shas, trees))
    policies = _policies(shas, parsed_accounts, parents, setups, amends, known, account_of, root)

    extra: dict[int, list[str]] = {}
    code_bearing, policy = [False] * len(shas), [None] * len(shas)
    for i, (sha, account) in enumerate(zip(shas, accounts)):
        if account is None:  # not a contribution (or its row failed): no graph rules
            continue
        found = [f"parent {p[:12]} is not a known contribution" for p in parents[i] if account_of.get(p) is None]
        target = verifies[i]
        if target is not None and account_of.get(target) == account:
            found.append("a verification of one's own work")
        if account not in listed.get(sha, ()):
            found.append(build.not_listed(account))
        if found:
            extra[i] = found
        first = parents[i][0] if parents[i] else None
        code_bearing[i] = first not in tree_of or tree_of[first] != trees[i]
        policy[i] = policies.get(sha)

    reasons = work.column("reasons")
    if extra:
        values = reasons.to_pylist()
        for i, found in extra.items():
            values[i] = values[i] + found
        reasons = pa.chunked_array([pa.array(values, pa.list_(pa.string()))])
    columns = {
        "code_bearing": pa.array(code_bearing, pa.bool_()),
        "valid": pc.equal(pc.list_value_length(reasons), 0),
        "reasons": reasons,
        "policy": pa.array(policy, pa.string()),
    }
    table = pa.table([columns.get(f.name, work.column(f.name)) for f in CONTRIBUTIONS], schema=CONTRIBUTIONS)
    return table, _cross_refs(work)


def _policies(
    shas: list[str],
    parsed_accounts: list[str | None],
    parents: list[list[str]],
    setups: list[bool],
    amends: list[bool],
    known: Mapping[str, build.Known],
    account_of: Mapping[str, str | None],
    root: str | None,
) -> dict[str, str | None]:
    """`build._policies` over columns: a setup or an amendment (tagged policy by the root setup's
    account) is its own policy, any other contribution has its first parent's."""
    root_account = account_of.get(root) if root else None
    first: dict[str, str | None] = {}
    own: dict[str, bool] = {}
    for sha, account, ps, setup, amend in zip(shas, parsed_accounts, parents, setups, amends):
        if account is not None:
            first[sha] = ps[0] if ps else None
            own[sha] = setup or (amend and root_account is not None and account == root_account)
    batch = set(shas)
    found: dict[str, str | None] = {}
    for sha in first:
        chain: list[str] = []
        current: str | None = sha
        while current in first and current not in found:
            chain.append(current)
            current = first[current]
        if current in found:
            base = found[current]
        else:  # a commit of this batch that is no contribution has no policy
            k = known.get(current) if current is not None and current not in batch else None
            base = k.policy if k is not None else None
        for link in reversed(chain):
            if own[link]:
                base = link
            found[link] = base
    return found


def _cross_refs(work: pa.Table) -> pa.Table:
    shas = work.column("sha").to_pylist()
    refs = work.column("_refs").to_pylist()
    rows = [
        {"sha": sha, "url": u.split("#", 1)[0], "target": u.split("#", 1)[1] if "#" in u else None}
        for sha, found in zip(shas, refs)
        for u in found
    ]
    return pa.Table.from_pylist(rows, schema=CROSS_REFS)
