"""Verifying Git's SSH commit signatures in process (`sshsig`, about 0.1 ms each), the same check as
`git verify-commit` with an allowed-signers file; large batches (a rebuild) are spread over all cores."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from functools import lru_cache

Job = tuple[bytes, bytes, tuple[str, ...]]  # (payload, armored signature, allowed public keys)
PARALLEL_MIN = 10_000  # below this, starting workers costs more than it saves (about 0.3 s on 2 cores)

SIGNATURE_HEADER = b"gpgsig "


def split_signature(raw: bytes) -> tuple[bytes, bytes | None]:
    """(the signed payload, the armored signature) of a raw commit object; no signature: (raw, None).

    Git signs the commit without its `gpgsig` header (a first line and continuation lines that start
    with a space), so that header is cut out of the payload.
    """
    header_end = raw.find(b"\n\n")
    head = raw if header_end < 0 else raw[: header_end + 1]
    start = head.find(b"\n" + SIGNATURE_HEADER)
    if start < 0:
        return raw, None
    start += 1
    end = start
    lines = []
    while end < len(head):
        newline = head.find(b"\n", end)
        newline = len(head) if newline < 0 else newline
        line = head[end:newline]
        if end != start and not line.startswith(b" "):
            break
        lines.append(line[len(SIGNATURE_HEADER) :] if end == start else line[1:])
        end = newline + 1
    return raw[:start] + raw[end:], b"\n".join(lines) + b"\n"


def verify(payload: bytes, signature: bytes, public_keys: Iterable[str]) -> bool:
    """Whether `signature` signs `payload` in Git's namespace with one of `public_keys` (OpenSSH lines)."""
    import sshsig

    keys = [key for key in map(_public_key, public_keys) if key is not None]
    if not keys:
        return False
    try:
        sshsig.verify(payload, signature, keys, namespace="git")
    except Exception:  # an invalid, unsupported or malformed signature is simply not a valid one
        return False
    return True


@lru_cache(maxsize=4096)
def _public_key(line: str):
    from sshsig.ssh_public_key import PublicKey

    try:
        return PublicKey.from_openssh_str(line)
    except (ValueError, NotImplementedError):
        return None


def verify_many(jobs: Sequence[Job], workers: int | None = None) -> list[bool]:
    """`verify` of every job, in order; a large batch is split over `workers` processes (default: the
    cores this process may use). The verdicts do not depend on how the batch was split."""
    workers = workers or len(os.sched_getaffinity(0))
    if workers < 2 or len(jobs) < PARALLEL_MIN:
        return [verify(*job) for job in jobs]
    import multiprocessing

    from ..lifetime import die_with_parent

    global _BATCH
    _BATCH = jobs  # forked workers inherit the batch: only index ranges and verdicts cross processes
    try:
        step = -(-len(jobs) // workers)
        ranges = [(start, min(start + step, len(jobs))) for start in range(0, len(jobs), step)]
        forked = multiprocessing.get_context("fork")
        with forked.Pool(len(ranges), initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
            parts = pool.map(_verify_range, ranges)
    finally:
        _BATCH = ()
    return [verdict for part in parts for verdict in part]


_BATCH: Sequence[Job] = ()


def _verify_range(bounds: tuple[int, int]) -> list[bool]:
    start, stop = bounds
    return [verify(*job) for job in _BATCH[start:stop]]
