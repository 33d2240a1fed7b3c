"""Format versions of `agora.toml` sections (`[eval] format`, `[ucb] format`): a reader refuses a section
written for a newer git-agora instead of reading part of it. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def section_format(section: str, values: Mapping[str, Any], newest: int, error: type[ValueError] = ValueError) -> int:
    """The section's `format` (default 1); `error` when it is no positive integer or newer than `newest`."""
    version = values.get("format", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise error(f"[{section}] format must be a positive integer")
    if version > newest:
        raise error(f"[{section}] is written in format {version}: needs a newer git-agora (this one reads {newest})")
    return version
