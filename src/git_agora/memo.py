"""Facts derived from immutable objects, remembered per clone under `.git/agora/` (one small file per
kind, a `KEY VALUE` line per fact, the newest `KEEP`): what a commit sha determines never changes, so
publishing need not work it out again each time. A cache only: a missing, damaged or read-only file
means working it out again."""

from __future__ import annotations

import contextlib
import os

KEEP = 256


def recall(folder: str | os.PathLike[str], kind: str, key: str) -> str | None:
    return facts(folder, kind).get(key)


def facts(folder: str | os.PathLike[str], kind: str) -> dict[str, str]:
    """Every remembered fact of this kind, key -> value (one read of the file, for many keys)."""
    pairs = (line.partition(" ") for line in _lines(os.path.join(folder, kind)))
    return {key: value for key, _, value in pairs if value}


def remember(folder: str | os.PathLike[str], kind: str, key: str, value: str) -> None:
    path = os.path.join(folder, kind)
    kept = [line for line in _lines(path) if line.partition(" ")[0] != key][-(KEEP - 1) :]
    with contextlib.suppress(OSError):
        os.makedirs(folder, exist_ok=True)
        temporary = f"{path}.{os.getpid()}"
        with open(temporary, "w") as out:
            out.write("".join(f"{line}\n" for line in [*kept, f"{key} {value}"]))
        os.replace(temporary, path)


def _lines(path: str) -> list[str]:
    try:
        with open(path) as file:
            return file.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
