"""The artifact between the build and the score: copied out of the build's reach, checked on the way.

The build's artifact folder is sent as a tar stream once every process the build started is gone (the
sandbox's wrapper streams it; unsandboxed, git-agora's own `tar` does), and `receive` writes it into a
fresh folder: regular files and folders only (a symbolic or hard link, a device or a fifo refuses the
artifact), names that stay inside the folder, at most `limit` bytes and `MAX_ENTRIES` entries, at most
`MAX_DEPTH` names to a path and `MAX_PATH` bytes (so the copy stays within PATH_MAX wherever it is
written, and removing it is cheap). The stream is the build's to choose, so nothing in it is trusted:
a broken stream is a broken artifact, and one that carries more than its entries need (a forged header
naming a gigabyte-long name) is refused before it is held in memory.
"""

from __future__ import annotations

import os
import tarfile
from typing import IO

from .export import make_folders
from .record import Reason

MAX_ENTRIES = 100_000
MAX_DEPTH = 64  # names in one path inside the artifact: a file in 63 nested folders
MAX_PATH = 2048  # bytes of one path inside the artifact
_CHUNK = 1 << 20
_PER_ENTRY = 2 * MAX_PATH + 4096  # the most a tar header (with a long name's blocks) takes
_SLACK = 1 << 20  # tarfile's read-ahead and the end-of-archive padding


class ArtifactRefused(Exception):
    def __init__(self, reason: Reason, detail: str):
        super().__init__(detail)
        self.reason = reason


def receive(stream: IO[bytes], dest: str, limit: int) -> int:
    """Write the tar `stream` into the existing, empty folder `dest`; returns the number of files
    written (an artifact of empty folders only counts as none).
    Raises ArtifactRefused with the reason when the stream is not an acceptable artifact."""
    total = entries = files = 0
    metered = _Metered(stream)
    try:
        with tarfile.open(fileobj=metered, mode="r|") as archive:  # type: ignore[call-overload]
            for member in archive:
                entries += 1
                if entries > MAX_ENTRIES:
                    raise ArtifactRefused(Reason.ARTIFACT_TOO_LARGE, f"more than {MAX_ENTRIES} entries")
                metered.allowed += _PER_ENTRY + (member.size if member.isreg() else 0)
                name = _relative(member.name)
                if name is None:
                    continue  # the folder itself
                _check_shape(name)
                if member.isdir():
                    make_folders(dest, name)
                    continue
                if not member.isreg():
                    raise ArtifactRefused(Reason.ARTIFACT_SPECIAL, f"{_shown(name)} is not a regular file")
                total += member.size
                if total > limit:
                    raise ArtifactRefused(Reason.ARTIFACT_TOO_LARGE, f"more than {limit} bytes")
                source = archive.extractfile(member)
                assert source is not None
                _copy(source, dest, name, 0o755 if member.mode & 0o111 else 0o644)
                files += 1
    except (tarfile.TarError, EOFError) as exc:
        raise ArtifactRefused(Reason.ARTIFACT_UNREADABLE, f"the artifact stream is broken ({exc})") from None
    except OSError as exc:
        raise ArtifactRefused(Reason.ARTIFACT_UNREADABLE, f"the artifact cannot be written ({exc.strerror})") from None
    return files


class _Metered:
    """The stream, refused once it has carried more bytes than the entries seen so far account for."""

    def __init__(self, stream: IO[bytes]):
        self.stream, self.read_bytes, self.allowed = stream, 0, _SLACK + _PER_ENTRY

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(min(size, _CHUNK) if size >= 0 else _CHUNK)
        self.read_bytes += len(data)
        if self.read_bytes > self.allowed:
            raise ArtifactRefused(Reason.ARTIFACT_TOO_LARGE, "the stream carries more than its entries")
        return data


def _check_shape(name: str) -> None:
    depth, length = name.count("/") + 1, len(os.fsencode(name))
    if depth > MAX_DEPTH:
        raise ArtifactRefused(Reason.ARTIFACT_TOO_DEEP, f"{_shown(name)} is more than {MAX_DEPTH} names deep")
    if length > MAX_PATH:
        raise ArtifactRefused(Reason.ARTIFACT_TOO_DEEP, f"{_shown(name)} is a path of more than {MAX_PATH} bytes")


def _shown(name: str) -> str:
    """A name for a message: its start, whatever its length or bytes."""
    shown = name if len(name) <= 60 else f"{name[:40]}...{name[-16:]}"
    return repr(shown.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))


def _relative(name: str) -> str | None:
    """The member's path inside the folder, or None for the folder itself; refuses a name that leaves it."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts:
        return None
    if name.startswith("/") or ".." in parts or any("\0" in p for p in parts):
        raise ArtifactRefused(Reason.ARTIFACT_SPECIAL, f"{_shown(name)} points outside the artifact")
    return "/".join(parts)


def _copy(source: IO[bytes], dest: str, name: str, mode: int) -> None:
    path = os.path.join(dest, name)
    if "/" in name:
        make_folders(dest, os.path.dirname(name))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise ArtifactRefused(Reason.ARTIFACT_SPECIAL, f"{_shown(name)} appears twice") from None
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(chunk)
    os.chmod(path, mode)
