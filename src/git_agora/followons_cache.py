"""The follow-on count cache in `.git/agora/index/follow_ons.parquet`: n(v) per valid contribution as the
last analysis computed it, so the next one updates it (``frontier.followons``) instead of recounting the
whole graph.

Derived data, like the embedding cache: not part of the index, not compared by `index --check`, and
deleting it only costs one batch count. It is safe to keep across any change of the index because it
names what it was computed from, row by row: the shas of the nodes in their order and which of them
were follow-on work. ``frontier.followons.updated`` checks those against the current graph and only
updates when the earlier nodes are all still there with the same edges; otherwise it recounts. A file
that cannot be read, fails its page checksums, has columns of unequal length or was written under other
rules (``RULES``) counts as missing. It is written to a temporary file and renamed into place under the
index lock, so a crash leaves the old file or the new one; on a read-only `.git/agora` nothing is
written and the counts are computed as usual.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .frontier.evidence import FollowOnCounter
from .frontier.followons import FollowOns, follow_on_counts
from .frontier.graph import Graph
from .index.osfiles import reading, writing
from .index.segments import WriteFailed, discard
from .index.state import index_dir
from .index.store import locked
from .refs.store import Repository

FOLLOW_ONS_FILE = "follow_ons.parquet"
RULES = b"1"  # the follow-on rules of frontier.evidence; a change of them makes every cache stale
SCHEMA = pa.schema(
    [("sha", pa.string()), ("qualifying", pa.bool_()), ("counts", pa.int64())], metadata={b"rules": RULES}
)


def read_follow_ons(repo: Repository) -> FollowOns | None:
    """The cached state, or None when there is none or it cannot be trusted (module docstring)."""
    try:
        with reading(index_dir(repo) / FOLLOW_ONS_FILE) as source:
            table = pq.read_table(source, page_checksum_verification=True)
    except (OSError, ValueError, pa.ArrowException):
        return None
    if (table.schema.metadata or {}).get(b"rules") != RULES or not table.schema.equals(SCHEMA):
        return None
    table = table.combine_chunks()
    counts = table["counts"].to_numpy()
    if table["sha"].null_count or table["qualifying"].null_count or table["counts"].null_count:
        return None
    if len(counts) and (counts.min() < 0 or counts.max() >= len(counts)):
        return None
    qualifying = table["qualifying"].to_numpy(zero_copy_only=False)
    return FollowOns(table["sha"].chunk(0) if table.num_rows else pa.array([], pa.string()), qualifying, counts)


def write_follow_ons(repo: Repository, state: FollowOns) -> None:
    """Replace the cache with ``state`` (temporary file, then rename); `WriteFailed` when it cannot."""
    directory = index_dir(repo)
    table = pa.table(
        [state.sha, pa.array(state.qualifying, pa.bool_()), pa.array(state.counts, pa.int64())], schema=SCHEMA
    )
    with locked(directory, exclusive=True):
        tmp = directory / f".{FOLLOW_ONS_FILE}.{os.getpid()}"
        try:
            # plain pages: a million shas read back in a tenth of the time zstd or a dictionary takes
            with writing(tmp) as sink:
                pq.write_table(table, sink, compression="none", use_dictionary=False, write_page_checksum=True)
            os.replace(tmp, directory / FOLLOW_ONS_FILE)
        except OSError as exc:
            discard(tmp)
            raise WriteFailed(exc, directory) from None


def cached_counter(repo: Repository) -> FollowOnCounter:
    """A follow-on counter for ``frontier.analyze.analyze`` that starts from the cache and keeps what
    it computed there for the next run (not on a read-only `.git/agora`)."""

    def counter(graph: Graph, qualifying: np.ndarray) -> np.ndarray:
        previous = read_follow_ons(repo)
        state = follow_on_counts(graph, qualifying, previous)
        if previous is None or not _same(previous, state):
            with contextlib.suppress(WriteFailed):  # read-only or full: the counts are right, the next run counts again
                write_follow_ons(repo, state)
        return state.counts

    return counter


def _same(a: FollowOns, b: FollowOns) -> bool:
    return (
        len(a.sha) == len(b.sha)
        and np.array_equal(a.counts, b.counts)
        and np.array_equal(a.qualifying, b.qualifying)
        and a.sha.equals(b.sha)
    )
