"""Facts derived from immutable objects, remembered per clone under `.git/agora/` (one small file per
kind, a `KEY VALUE` line per fact, the newest `KEEP`): what a commit sha determines never changes, so
publishing need not work it out again each time. A cache only: a missing, damaged or read-only file
means working it out again."""

from __future__ import annotations

import os
from pathlib import Path

KEEP = 256


def recall(folder: Path, kind: str, key: str) -> str | None:
    for line in _lines(folder / kind):
        found, _, value = line.partition(" ")
        if found == key and value:
            return value
    return None


def remember(folder: Path, kind: str, key: str, value: str) -> None:
    path = folder / kind
    kept = [line for line in _lines(path) if line.partition(" ")[0] != key][-(KEEP - 1) :]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{kind}.{os.getpid()}")
        temporary.write_text("".join(f"{line}\n" for line in [*kept, f"{key} {value}"]))
        temporary.replace(path)
    except OSError:
        pass


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
