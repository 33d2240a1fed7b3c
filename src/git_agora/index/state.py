"""The index's manifest read as plain JSON (format version, the ref tips indexed, the earliest pending
time), without pyarrow, so a command can tell cheaply whether the index is current."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..contribution import LIMITS
from ..refs.names import ROOT
from ..refs.store import Repository

STATE_FILE = "manifest.json"  # written by index.segments


def index_dir(repo: Repository) -> Path:
    return repo.agora_dir / "index"


def read_state(directory: Path, name: str = STATE_FILE) -> dict | None:
    try:
        state = json.loads((directory / name).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def is_current(repo: Repository) -> bool:
    """Do the stored tips equal the refs under refs/agora/ now? (One for-each-ref, no pyarrow.)"""
    state = read_state(index_dir(repo))
    if state is None or state.get("tips") != repo.git.for_each_ref(ROOT):
        return False
    pending = state.get("pending_until")  # a commit dated in the future waits for the clock
    return pending is None or pending > time.time() + LIMITS.future_slack_s
