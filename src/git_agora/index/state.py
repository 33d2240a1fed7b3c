"""The index's manifest read as plain JSON (format version, a digest of the ref tips indexed, the
earliest pending time), without pyarrow, so a command can tell cheaply whether the index is current.

The manifest stays small whatever the number of accounts: the ref tips and per-account counts live in
a side file it names (`segments`), and the manifest carries their digest for this check.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from collections.abc import Mapping
from pathlib import Path

from ..contribution import LIMITS
from ..refs.names import ROOT
from ..refs.store import Repository

FORMAT_VERSION = 8  # on disk; 4: the tips and per-account counts in a side file the manifest names; 5: rows
# judged by rules that changed (pending beyond 10 minutes ahead, not a day; a tree with a .git path is invalid);
# 6: the run_backed column (whether a verdict records its rerun); 7: Agora-Format 2 contributions read (an
# older index holds them as "needs a newer git-agora"); 8: secret-shaped text redacted in title, description
# and metadata (`leaks.redact`)

STATE_FILE = "manifest.json"  # written by index.segments


def index_dir(repo: Repository) -> Path:
    return Path(repo.agora_path, "index")


def read_state(directory: Path, name: str = STATE_FILE) -> dict | None:
    try:
        state = json.loads((directory / name).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def checksum(body: dict) -> int:
    """The CRC-32 a manifest carries of its other fields."""
    return zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def intact(state: dict | None) -> bool:
    """Does this manifest (as `read_state` returns it) match its checksum?"""
    return state is not None and state.get("checksum") == checksum({k: v for k, v in state.items() if k != "checksum"})


def tips_digest(tips: Mapping[str, str]) -> str:
    """A digest of ref name -> sha (order does not matter)."""
    lines = "\n".join(map(" ".join, sorted(tips.items())))  # a ref name holds no space nor newline
    return hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


def current(state: dict | None, tips: Mapping[str, str], now: float, format_version: int | None = None) -> bool:
    """Does the manifest `state` (of `format_version`, when given) cover exactly these tips, with nothing
    pending at `now`?"""
    if state is None or (format_version is not None and state.get("format_version") != format_version):
        return False
    if state.get("tips_digest") != tips_digest(tips):
        return False
    pending = state.get("pending_until")  # a commit dated in the future waits for the clock
    return pending is None or pending > now + LIMITS.future_slack_s


def is_current(repo: Repository) -> bool:
    """Do the stored tips equal the refs under refs/agora/ now? (One for-each-ref, no pyarrow; an index of
    another format has no digest, or is rebuilt or refused by the update that reads it.)"""
    return current(read_state(index_dir(repo)), repo.refs_under(ROOT), time.time())
