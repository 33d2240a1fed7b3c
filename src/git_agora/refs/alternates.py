"""The object directories git reads for a repository: its own and those it borrows from through
`objects/info/alternates`, with `os.path` only (a post asks, and loads no pathlib)."""

from __future__ import annotations

import os

ALTERNATE_DEPTH = 5  # git follows alternates this deep


def object_directories(objects: str) -> list[str] | None:
    """This object directory and those it borrows from (`info/alternates`, relative to the directory that
    names them), each once; None for an alternate git would read otherwise (a quoted path, too deep) or
    an alternates file that cannot be read."""
    found: list[str] = []
    seen: set[str] = set()
    pending = [(objects, 0)]
    while pending:
        directory, depth = pending.pop(0)
        if os.path.realpath(directory) in seen:
            continue
        seen.add(os.path.realpath(directory))
        found.append(directory)
        try:
            with open(os.path.join(directory, "info", "alternates"), encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError):
            return None
        for line in lines:
            if not line.strip() or line.startswith("#"):
                continue
            if line.startswith('"') or depth + 1 > ALTERNATE_DEPTH:
                return None
            pending.append((os.path.realpath(os.path.join(directory, line)), depth + 1))
    return found
