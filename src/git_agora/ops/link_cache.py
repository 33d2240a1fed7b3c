"""The clustering of the last analysis kept beside the index (`.git/agora/index/clusters.state`), so that
an analysis of the same window links nothing again.

Single link over the window (`frontier.clusters.single_link`) is the largest computation of a warm
analysis (a 5,000 x 5,000 similarity matrix); it is a pure function of the window's vectors and the
threshold, and a vector is a pure function of its contribution (immutable: its sha) and the model.
So the file holds one answer, named by sha256 of the model, the threshold and the window's shas in
order; any other window, model or threshold misses and links afresh, and the new answer replaces the
old. Derived data, like the kept frame: deleting it costs one linking. Written to a temporary file and
renamed; a file that cannot be read whole, or is not this format, counts as missing; on a read-only or
full disk nothing is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..drafts import draft_of, sweep_drafts
from ..frontier.clusters import Linker, single_link
from ..index.state import index_dir
from ..project import Project

LINK_FILE = "clusters.state"
MAGIC = b"AGLINK01"
_HEAD = len(MAGIC) + 32 + 8  # magic, the key's digest, the row count


def kept_linker(project: Project) -> Linker:
    """`frontier.clusters.diversity`'s `link`: the kept answer when the window, the model and the threshold
    are those it was computed for, else single link (kept for next time)."""
    path = index_dir(project.repo) / LINK_FILE

    def link(
        model: str | None, shas: pa.Array, vectors: np.ndarray, threshold: float, block: int
    ) -> tuple[np.ndarray, np.ndarray]:
        digest = window_digest(model, threshold, shas)
        kept = read_link(path, digest, len(vectors))
        if kept is not None:
            return kept
        labels, degree = single_link(vectors, threshold, block)
        write_link(path, digest, labels, degree)
        return labels, degree

    return link


def window_digest(model: str | None, threshold: float, shas: pa.Array) -> bytes:
    """sha256 of what the linking is a function of: the model, the threshold and the shas in order."""
    digest = hashlib.sha256(f"{model or ''}\0{threshold!r}\0".encode())
    for sha in shas.to_pylist():
        digest.update(f"{sha}\n".encode())
    return digest.digest()


def read_link(path: Path, digest: bytes, rows: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The kept labels and degrees when the file holds the answer for `digest` over `rows` rows."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) != _HEAD + 16 * rows or data[: len(MAGIC)] != MAGIC or data[len(MAGIC) : len(MAGIC) + 32] != digest:
        return None
    if int.from_bytes(data[len(MAGIC) + 32 : _HEAD], "little") != rows:
        return None
    body = np.frombuffer(data, dtype="<i8", offset=_HEAD)
    labels, degree = body[:rows].astype(np.int64), body[rows:].astype(np.int64)
    if rows and (labels.min() < 0 or labels.max() >= rows or degree.min() < 0 or degree.max() >= rows):
        return None  # not an answer single link gives: damaged, link again
    return labels, degree


def write_link(path: Path, digest: bytes, labels: np.ndarray, degree: np.ndarray) -> None:
    rows = len(labels)
    body = np.concatenate([np.asarray(labels, "<i8"), np.asarray(degree, "<i8")]).tobytes()
    sweep_drafts(path)
    tmp = draft_of(path)
    try:
        tmp.write_bytes(MAGIC + digest + rows.to_bytes(8, "little") + body)
        os.replace(tmp, path)
    except OSError:  # read-only or full: the next analysis links again
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
