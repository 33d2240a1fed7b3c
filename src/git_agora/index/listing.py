"""Which account logs list which contributions: a contribution counts only when the log of the
account it names lists it (in a local, remote-tracking or quarantined copy of that log).

Entries are read from each moved log's first-parent chain, from its new tip down to its old one, so
an update costs what is new; nothing walks the contribution graph. A rebuild, whose walk has printed
every log commit already, follows the chains through those records instead (`log_links`,
`entries_from_walk`): no git process per log, and the same answer, because a record that is not a log
commit exactly as this package writes it is left to git.
"""

from __future__ import annotations

import os
import re
import subprocess
from array import array
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..refs.git import LOG_OPTIONS
from ..refs.names import LOG_PREFIX, QUARANTINE_PREFIX, REMOTES_PREFIX
from ..refs.store import LOG_ENTRY_KEY

NOT_LISTED = "not listed in the log of its account"


def log_account(ref: str) -> str | None:
    """The account whose log `ref` is (a local, remote-tracking or quarantined copy), else None."""
    if ref.startswith(LOG_PREFIX):
        return ref[len(LOG_PREFIX) :]
    if ref.startswith(REMOTES_PREFIX) and "/log/" in ref:
        return ref.split("/log/", 1)[1]
    if ref.startswith(QUARANTINE_PREFIX):
        parts = ref[len(QUARANTINE_PREFIX) :].split("/")
        return parts[1] if len(parts) == 3 else None
    return None


def new_entries(
    git_dir: str | os.PathLike[str], old_tips: Mapping[str, str], new_tips: Mapping[str, str]
) -> dict[str, set[str]]:
    """{contribution sha: accounts whose log newly lists it} for every log ref that moved."""
    listed: dict[str, set[str]] = {}
    for ref, tip in new_tips.items():
        account = log_account(ref)
        if account is None or old_tips.get(ref) == tip:
            continue
        old = old_tips.get(ref)
        entries = _chain_entries(git_dir, tip, old)
        if entries is None:  # the old tip is gone: read the whole chain
            entries = _chain_entries(git_dir, tip, None) or []
        for entry in entries:
            listed.setdefault(entry, set()).add(account)
    return listed


# a log commit as `refs.store` writes it; Git's trailer parser reads exactly one entry from such a message
LOG_MESSAGE = re.compile(rb"agora log: [^\n]*\n\nAgora-Log-Format: 1\n%s: ([0-9a-f]{40})\n" % LOG_ENTRY_KEY.encode())
ENTRY_KEY = LOG_ENTRY_KEY.lower().encode()
LINKS = pa.schema([("sha", pa.string()), ("parent", pa.string()), ("entry", pa.string())])


def log_links(records: Sequence[bytes], folded: Sequence[bytes] | None = None) -> pa.Table:
    """(sha, first parent, entry) of the walked `git log` records that git may read an entry from: those
    whose message names the entry key (in any case). `entry` is null when only git can tell what it
    reads there (the message is not a log commit's exactly as written here). A record left out is read
    as no entry by git, so a log chain ends at it. `folded`: the records in lower case, if at hand (a
    block lowered at once costs a fifth of its records lowered one by one)."""
    shas, parents, entries = [], [], []
    for record, lowered in zip(records, folded if folded is not None else [r.lower() for r in records]):
        count = lowered.count(ENTRY_KEY)  # a Git name holding it only makes the count wrong: no entry
        if not count:
            continue
        header, _, rest = record.partition(b"\n")
        message = rest.partition(b"\n")[2]  # after the author and committer line
        fields = header.decode("utf-8", "replace").split(" ")
        found = LOG_MESSAGE.fullmatch(message) if count == 1 else None
        shas.append(fields[0])
        parents.append(next((p for p in fields[3:] if p), None))
        entries.append(found.group(1).decode() if found else None)
    columns = [pa.array(shas, pa.string()), pa.array(parents, pa.string()), pa.array(entries, pa.string())]
    return pa.table(columns, schema=LINKS)


def links_table(shas: Sequence[bytes], parents: Sequence[bytes | None], entries: Sequence[bytes | None]) -> pa.Table:
    """`log_links`' table of links already read (hex shas as bytes, None for no parent or no entry)."""
    return pa.table([pa.array(column, pa.string()) for column in (shas, parents, entries)], schema=LINKS)


class Listed(Mapping[str, set[str]]):
    """{contribution sha: accounts whose log lists it}, held as two sorted Arrow columns: a rebuild at
    a million contributions lists a million entries, which a dict of sets holds in about 400 MB."""

    def __init__(self, entries: pa.Array, accounts: pa.Array):
        order = pc.sort_indices(pa.table({"e": entries, "a": accounts}), [("e", "ascending"), ("a", "ascending")])
        self.entries, self.accounts = entries.take(order), accounts.take(order)

    def _start(self, sha: str) -> int:
        lo, hi = 0, len(self.entries)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entries[mid].as_py() < sha:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def __getitem__(self, sha: str) -> set[str]:
        at, found = self._start(sha), set()
        while at < len(self.entries) and self.entries[at].as_py() == sha:
            found.add(self.accounts[at].as_py())
            at += 1
        if not found:
            raise KeyError(sha)
        return found

    def __iter__(self):
        return iter(pc.unique(self.entries).to_pylist())

    def __len__(self) -> int:
        return len(pc.unique(self.entries))


def listed_mask(table: pa.Table, listed: Mapping[str, set[str]]) -> pa.Array:
    """Per row of `table`, whether the log of the account the row names lists it (null account: no)."""

    if not isinstance(listed, Listed):
        pairs = [(sha, account) for sha, named in listed.items() for account in named]
        listed = Listed(pa.array([s for s, _ in pairs], pa.string()), pa.array([a for _, a in pairs], pa.string()))
    # (sha, account) pairs as integers: the sha's place among the distinct listed entries (sorted, so
    # counted from where they change), the account's among the listing accounts
    entries, accounts = listed.entries, listed.accounts
    if entries.null_count or accounts.null_count:  # a pair with no sha or no account lists no row
        keep = pc.and_(pc.is_valid(entries), pc.is_valid(accounts))
        entries, accounts = entries.filter(keep), accounts.filter(keep)
    changes = np.ones(len(entries), dtype=bool)
    if len(entries) > 1:
        changes[1:] = np.asarray(pc.not_equal(entries.slice(1), entries.slice(0, len(entries) - 1)), dtype=bool)
    names = pc.unique(accounts)
    width = max(len(names), 1)
    listed_keys = (np.cumsum(changes) - 1) * width + _numpy(pc.index_in(accounts, value_set=names), "int64")
    row_entry = pc.index_in(table.column("sha"), value_set=entries.filter(pa.array(changes)), skip_nulls=True)
    row_account = pc.index_in(table.column("account"), value_set=names, skip_nulls=True)
    keys = pc.add(pc.multiply(pc.cast(row_entry, pa.int64()), width), pc.cast(row_account, pa.int64()))
    return pc.fill_null(pc.is_in(keys, value_set=pa.array(listed_keys, pa.int64())), False).combine_chunks()


def entries_from_walk(git_dir: str | os.PathLike[str], tips: Mapping[str, str], links: pa.Table) -> Listed:
    """`new_entries(git_dir, {}, tips)` from the `log_links` of a walk of everything the tips reach: each
    log's first-parent chain is followed through the links; a chain through a record only git can read
    is read by git."""
    shas = links.column("sha")
    # compact: a million links as Python lists of ints and bools would take 50 MB
    parent_of = array("q", _numpy(pc.fill_null(pc.index_in(links.column("parent"), value_set=shas), -1), "int64"))
    readable = _numpy(pc.is_valid(links.column("entry")), "bool").tobytes()
    tip_list = sorted(set(tips.values()))
    tip_rows = dict(zip(tip_list, pc.index_in(pa.array(tip_list, pa.string()), value_set=shas).to_pylist()))
    chains: dict[str, array | None] = {}
    rows = array("q")
    row_accounts: list[str] = []
    by_git: list[tuple[str, str]] = []
    for ref, tip in tips.items():
        account = log_account(ref)
        if account is None:
            continue
        if tip not in chains:
            chains[tip] = _linked_chain(tip_rows[tip], parent_of, readable)
        chain = chains[tip]
        if chain is None:
            by_git += [(entry, account) for entry in _chain_entries(git_dir, tip, None) or []]
        else:
            rows.extend(chain)
            row_accounts += [account] * len(chain)
    entries = pa.concat_arrays(
        [
            links.column("entry").combine_chunks().take(pa.array(_numpy(rows, "int64"))),
            pa.array([entry for entry, _ in by_git], pa.string()),
        ]
    )
    return Listed(entries, pa.array(row_accounts + [account for _, account in by_git], pa.string()))


def _linked_chain(row: int | None, parent_of: Sequence[int], readable: bytes) -> array | None:
    """The link rows along a first-parent chain from `row` (`parent_of`: -1 where the chain ends); None
    when a link is one only git reads."""
    rows = array("q")
    while row is not None and row >= 0:
        if not readable[row]:
            return None
        rows.append(row)
        row = parent_of[row]
    return rows


def _numpy(values, dtype: str):
    """Arrow values (or a buffer) as a numpy array of `dtype`."""

    return np.asarray(values, dtype=dtype)


def _chain_entries(git_dir: str | os.PathLike[str], tip: str, old: str | None) -> list[str] | None:
    """The entries of the log commits on `tip`'s first-parent chain, down to `old`. The chain of a new
    log ends at its first commit, whose first parent is a contribution: reading stops there instead of
    following the contribution graph down to the setup. None when git cannot read the range."""
    args = ["git", "--git-dir", str(git_dir), "log", *LOG_OPTIONS, "--first-parent", "-z"]
    args += [f"--format=%(trailers:key={LOG_ENTRY_KEY},valueonly)", tip, "--stdin"]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"^{old}\n".encode() if old else b"")
    proc.stdin.close()
    entries, pending, ended = [], b"", False
    while not ended and (chunk := proc.stdout.read(1 << 16)):
        records = (pending + chunk).split(b"\0")
        pending = records.pop()
        for record in records:
            found = [line for line in record.decode("utf-8", "replace").split() if len(line) == 40]
            if not found:  # not a log commit: the chain has ended
                ended = True
                break
            entries += found
    if ended:
        proc.kill()
    elif pending.strip():
        entries += [line for line in pending.decode("utf-8", "replace").split() if len(line) == 40]
    code = proc.wait()
    return entries if ended or code == 0 else None
