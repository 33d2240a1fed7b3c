"""Git's object store read in process: version-2 pack indexes, packed objects (deltas against an earlier
object of the same pack applied), loose objects, alternates.

Only what is read exactly as git reads it is read: anything else (a version-1 index, a delta against an
object named by its sha, a chain deeper than git writes, a stream that does not inflate to its stated
size) answers None, and the caller asks git.
"""

from __future__ import annotations

import mmap
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..refs.alternates import object_directories
from .graphfile import prefixes

COMMIT, OFS_DELTA = 1, 6
_WHOLE = (1, 2, 3, 4)  # commit, tree, blob, tag
DELTA_DEPTH = 64  # git writes chains of at most 50 (`pack.depth`); deeper is left to git
_BASES_KEPT = 256
_BASES_BYTES = 32 << 20  # a few huge bases (a long message, stored whole) do not pile up


@dataclass(frozen=True)
class Pack:
    path: Path
    oids: np.ndarray  # (n, 20) uint8, sorted
    keys: np.ndarray  # `graphfile.prefixes` of the oids
    offsets: np.ndarray  # int64: where each object starts in the pack

    def find(self, wanted: np.ndarray) -> np.ndarray:
        """The index of each (k, 20) oid in this pack, -1 where it is not here."""
        if not len(self.keys):
            return np.full(len(wanted), -1, np.int64)
        keys = prefixes(wanted)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        hit = (self.oids[at] == wanted).all(axis=1)
        found = np.where(hit, at, -1)
        for i in np.flatnonzero(~hit & (self.keys[at] == keys)).tolist():  # a shared 8-byte prefix
            j = int(at[i])
            while j < len(self.keys) and self.keys[j] == keys[i]:
                if (self.oids[j] == wanted[i]).all():
                    found[i] = j
                    break
                j += 1
        return found


def read_pack(index: Path) -> Pack | None:
    """A version-2 pack index and its pack; None for anything else."""
    data = np.fromfile(index, dtype=np.uint8)
    if len(data) < 1072 or bytes(data[:8]) != b"\xfftOc\x00\x00\x00\x02":
        return None
    count = int(data[1028:1032].view(">u4")[0])
    names, small = 1032, 1032 + 24 * count
    large = small + 4 * count
    if len(data) < large + 40:
        return None
    oids = data[names : names + 20 * count].reshape(count, 20)
    offsets = data[small:large].view(">u4").astype(np.int64)
    wide = offsets >= 0x80000000
    if wide.any():
        table = data[large : len(data) - 40].view(">u8").astype(np.int64)
        slots = offsets[wide] - 0x80000000
        if (slots >= len(table)).any():
            return None
        offsets[wide] = table[slots]
    path = index.with_suffix(".pack")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(12)
    if head[:4] != b"PACK" or head[4:8] not in (b"\0\0\0\x02", b"\0\0\0\x03"):
        return None
    if int.from_bytes(head[8:12], "big") != count or (count and (offsets.min() < 12 or offsets.max() >= size - 20)):
        return None
    return Pack(path, oids, prefixes(oids), offsets)


class Unpacker:
    """The objects of one mapped pack file by offset, deltas applied. The bases of deltas are kept a
    while: in pack order they come close together."""

    def __init__(self, data: mmap.mmap):
        self.data = data
        self.bases: dict[int, tuple[int, bytes] | None] = {}
        self.kept = 0  # bytes of the bases kept

    def commit(self, at: int) -> bytes | None:
        """The commit at this offset; None when it is not one or only git can read it."""
        kind, size, body = header(self.data, at)
        if kind == COMMIT:
            return inflated(self.data, body, size)
        found = self.object(at) if kind == OFS_DELTA else None
        return found[1] if found is not None and found[0] == COMMIT else None

    def object(self, at: int, depth: int = 0) -> tuple[int, bytes] | None:
        """(kind, content) of the object at this offset."""
        data, start = self.data, at
        if not 12 <= at < len(data) - 20 or depth > DELTA_DEPTH:
            return None
        kind, size, at = header(data, at)
        if kind in _WHOLE:
            body = inflated(data, at, size)
            return None if body is None else (kind, body)
        if kind != OFS_DELTA:  # a delta against an object named by its sha: git's to read
            return None
        byte = data[at]
        at += 1
        back = byte & 0x7F
        while byte & 0x80:
            byte = data[at]
            at += 1
            back = ((back + 1) << 7) | (byte & 0x7F)
        base = self._base(start - back, depth)
        if base is None:
            return None
        delta = inflated(data, at, size)
        body = None if delta is None else patched(base[1], delta)
        return None if body is None else (base[0], body)

    def _base(self, at: int, depth: int) -> tuple[int, bytes] | None:
        if at not in self.bases:
            found = self.object(at, depth + 1)
            size = len(found[1]) if found is not None else 0
            if len(self.bases) >= _BASES_KEPT or self.kept + size > _BASES_BYTES:
                self.bases.clear()
                self.kept = 0
            self.bases[at] = found
            self.kept += size
        return self.bases[at]


def mapped(path: Path) -> mmap.mmap | None:
    """A pack file mapped for reading; None when it is gone (a repack meanwhile) or empty."""
    try:
        with open(path, "rb") as fh:  # the mapping outlives the file's descriptor (and its name)
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def header(data: mmap.mmap, at: int) -> tuple[int, int, int]:
    """(kind, size, where its data starts) of the packed object at `at`."""
    byte = data[at]
    kind, size, shift = (byte >> 4) & 7, byte & 15, 4
    at += 1
    while byte & 0x80:
        byte = data[at]
        at += 1
        size |= (byte & 0x7F) << shift
        shift += 7
    return kind, size, at


def inflated(data: mmap.mmap, at: int, size: int) -> bytes | None:
    """The zlib stream at `at`, which must inflate to `size` bytes (what follows it is ignored)."""
    try:
        body = zlib.decompress(data[at : at + size + (size >> 9) + 64])
    except zlib.error:
        return None
    return body if len(body) == size else None


def patched(base: bytes, delta: bytes) -> bytes | None:
    """Git's delta (`patch-delta.c`) applied to its base; None when it does not fit the base or would
    outgrow the size it states (a damaged delta's copies could otherwise build gigabytes)."""
    at, base_size = _varint(delta, 0)
    at, size = _varint(delta, at)
    if base_size != len(base):
        return None
    out = bytearray()
    try:
        while at < len(delta):
            op = delta[at]
            at += 1
            if op & 0x80:  # copy from the base: which offset and size bytes follow is in the op's bits
                offset = length = 0
                for bit, shift in ((1, 0), (2, 8), (4, 16), (8, 24)):
                    if op & bit:
                        offset |= delta[at] << shift
                        at += 1
                for bit, shift in ((16, 0), (32, 8), (64, 16)):
                    if op & bit:
                        length |= delta[at] << shift
                        at += 1
                length = length or 0x10000
                if offset + length > len(base) or len(out) + length > size:
                    return None
                out += base[offset : offset + length]
            elif op:  # insert the next `op` bytes
                if at + op > len(delta) or len(out) + op > size:
                    return None
                out += delta[at : at + op]
                at += op
            else:
                return None
    except IndexError:
        return None
    return bytes(out) if len(out) == size else None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at] if at < len(data) else 0
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return at, value


@dataclass(frozen=True)
class ObjectStore:
    directories: list[Path]  # the object directory and its alternates
    packs: list[Pack]
    unpackers: dict[Path, Unpacker | None] = field(default_factory=dict, compare=False)  # mapped once

    @staticmethod
    def open(objects: Path) -> ObjectStore | None:
        """The packs of this object directory and its alternates; None when git could read them otherwise."""
        directories = with_alternates(objects)
        if directories is None:
            return None
        packs = []
        try:
            for directory in directories:
                for index in sorted((directory / "pack").glob("pack-*.idx")):
                    pack = read_pack(index)
                    if pack is None:
                        return None
                    packs.append(pack)
        except (OSError, ValueError):
            return None
        return ObjectStore(directories, packs)

    def commit(self, sha: str) -> bytes | None:
        """One raw commit, None when only git can read it (missing, not a commit, a delta git resolves)."""
        wanted = np.frombuffer(bytes.fromhex(sha), np.uint8).reshape(1, 20)
        for pack in self.packs:
            at = int(pack.find(wanted)[0])
            if at >= 0:
                if pack.path not in self.unpackers:
                    data = mapped(pack.path)
                    self.unpackers[pack.path] = None if data is None else Unpacker(data)
                unpacker = self.unpackers[pack.path]
                try:
                    return None if unpacker is None else unpacker.commit(int(pack.offsets[at]))
                except (IndexError, ValueError):  # a damaged pack: git says what is wrong
                    return None
        return self.loose_commit(sha)

    def loose_commit(self, sha: str) -> bytes | None:
        for directory in self.directories:
            try:
                stored = zlib.decompress((directory / sha[:2] / sha[2:]).read_bytes())
            except (OSError, zlib.error):
                continue
            head, _, body = stored.partition(b"\0")
            return body if head == b"commit %d" % len(body) else None
        return None


def with_alternates(objects: Path) -> list[Path] | None:
    """`refs.alternates.object_directories` as paths."""
    found = object_directories(str(objects))
    return None if found is None else [Path(directory) for directory in found]
