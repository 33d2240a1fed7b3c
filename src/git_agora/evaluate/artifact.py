"""The artifact between the build and the score: copied out of the build's reach, checked on the way.

The build's artifact folder is sent as a tar stream once every process the build started is gone (the
sandbox's wrapper streams it; unsandboxed, git-agora's own `tar` does), and `receive` writes it into a
fresh folder: regular files and folders only (a symbolic or hard link, a device or a fifo refuses the
artifact), names that stay inside the folder, at most `limit` bytes and `MAX_ENTRIES` entries. The
stream is the build's to choose, so nothing in it is trusted: a broken stream is a broken artifact.
"""

from __future__ import annotations

import os
import tarfile
from typing import IO

from .export import make_folders
from .record import Reason

MAX_ENTRIES = 100_000
_CHUNK = 1 << 20


class ArtifactRefused(Exception):
    def __init__(self, reason: Reason, detail: str):
        super().__init__(detail)
        self.reason = reason


def receive(stream: IO[bytes], dest: str, limit: int) -> int:
    """Write the tar `stream` into the existing, empty folder `dest`; returns the number of files
    written (an artifact of empty folders only counts as none).
    Raises ArtifactRefused with the reason when the stream is not an acceptable artifact."""
    total = entries = files = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                entries += 1
                if entries > MAX_ENTRIES:
                    raise ArtifactRefused(Reason.ARTIFACT_TOO_LARGE, f"more than {MAX_ENTRIES} entries")
                name = _relative(member.name)
                if name is None:
                    continue  # the folder itself
                if member.isdir():
                    make_folders(dest, name)
                    continue
                if not member.isreg():
                    raise ArtifactRefused(Reason.ARTIFACT_SPECIAL, f"{name!r} is not a regular file")
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


def _relative(name: str) -> str | None:
    """The member's path inside the folder, or None for the folder itself; refuses a name that leaves it."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts:
        return None
    if name.startswith("/") or ".." in parts or any("\0" in p for p in parts):
        raise ArtifactRefused(Reason.ARTIFACT_SPECIAL, f"{name!r} points outside the artifact")
    return "/".join(parts)


def _copy(source: IO[bytes], dest: str, name: str, mode: int) -> None:
    path = os.path.join(dest, name)
    if "/" in name:
        make_folders(dest, os.path.dirname(name))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise ArtifactRefused(Reason.ARTIFACT_SPECIAL, f"{name!r} appears twice") from None
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(chunk)
    os.chmod(path, mode)
