"""The index's manifest read without pyarrow (`ManifestHead`: format version, a digest of the ref tips
indexed, the earliest pending time, the setups found), so a command can tell cheaply whether the index is
current; `segments.Manifest` reads the rest of the same head and writes the file.

The manifest stays small whatever the number of accounts: the ref tips and per-account counts live in
a side file it names (`segments`), and the manifest carries their digest for this check.

Every shape an older git-agora wrote is read (`read_state`), each to say it is of another format:
`state.json` (formats 1 and 2, before segments: the tips inline, no checksum), `manifest.json` with every
tip inline and no digest (format 3), and today's (format 4 on: the digest, the side file, the tips that
changed since it).
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..contribution import LIMITS
from ..refs.names import ROOT
from ..refs.store import Repository

FORMAT_VERSION = 9  # on disk; 4: the tips and per-account counts in a side file the manifest names; 5: rows
# judged by rules that changed (pending beyond 10 minutes ahead, not a day; a tree with a .git path is invalid);
# 6: the run_backed column (whether a verdict records its rerun); 7: Agora-Format 2 contributions read (an
# older index holds them as "needs a newer git-agora"); 8: secret-shaped text redacted in title, description
# and metadata (`leaks.redact`); 9: a tree holding any path git refuses to check out is invalid (the NTFS and
# HFS+ forms of .git, a .gitmodules link, '.', '..': `contribution.checkout_refused`)

STATE_FILE = "manifest.json"  # written by index.segments


def index_dir(repo: Repository) -> Path:
    return Path(repo.agora_path, "index")


LEGACY_FILE = "state.json"  # formats 1 and 2


@dataclass(frozen=True)
class ManifestHead:
    """A manifest as read here, of any format: ``body`` is its JSON object as written (equal heads: the
    same file), the rest typed views of it (None, or empty, where its format did not write them)."""

    body: dict[str, Any]
    legacy: bool = False  # `state.json`, formats 1 and 2

    @classmethod
    def parse(cls, text: str, legacy: bool = False) -> ManifestHead:
        """The head of the manifest `text`; ValueError when it is no JSON object."""
        body = json.loads(text)
        if not isinstance(body, dict):
            raise ValueError("a manifest is a JSON object")
        return cls(body, legacy)

    @property
    def format_version(self) -> int | None:
        version = self.body.get("format_version")
        return version if isinstance(version, int) and not isinstance(version, bool) else None

    @cached_property
    def intact(self) -> bool:
        """Does it match its checksum (format 3 on; a `state.json` carries none)?"""
        body = {k: v for k, v in self.body.items() if k != "checksum"}
        return not self.legacy and self.body.get("checksum") == checksum(body)

    @property
    def tips_digest(self) -> str | None:
        digest = self.body.get("tips_digest")  # format 4 on
        return digest if isinstance(digest, str) else None

    @property
    def pending_until(self) -> int | None:
        pending = self.body.get("pending_until")  # a commit dated in the future waits for the clock
        return pending if isinstance(pending, int) and not isinstance(pending, bool) else None

    @property
    def tips(self) -> dict[str, str]:
        """The ref tips written in it: all of them before format 4, those that changed since the side
        file after (`segments.Manifest` reads them whole)."""
        tips = self.body.get("tips")
        return {k: v for k, v in tips.items() if isinstance(v, str)} if isinstance(tips, dict) else {}

    @property
    def setups(self) -> tuple[str, ...]:
        """The setups the index found (the watched setup rows, format 3 on)."""
        watch = self.body.get("watch")
        setups = watch.get("setups") if isinstance(watch, dict) else None
        return tuple(setups) if isinstance(setups, dict) else ()


def read_state(directory: Path, name: str = STATE_FILE) -> ManifestHead | None:
    """The manifest's head (`name`: LEGACY_FILE for a `state.json`); None without a readable one."""
    try:
        return ManifestHead.parse((directory / name).read_text(), legacy=name == LEGACY_FILE)
    except (OSError, ValueError):
        return None


def checksum(body: dict) -> int:
    """The CRC-32 a manifest carries of its other fields."""
    return zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def tips_digest(tips: Mapping[str, str]) -> str:
    """A digest of ref name -> sha (order does not matter)."""
    lines = "\n".join(map(" ".join, sorted(tips.items())))  # a ref name holds no space nor newline
    return hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


def current(state: ManifestHead | None, tips: Mapping[str, str], now: float, format_version: int | None = None) -> bool:
    """Does the manifest `state` (of `format_version`, when given) cover exactly these tips, with nothing
    pending at `now`?"""
    if state is None or (format_version is not None and state.format_version != format_version):
        return False
    if state.tips_digest != tips_digest(tips):
        return False
    pending = state.pending_until
    return pending is None or pending > now + LIMITS.future_slack_s


def is_current(repo: Repository) -> bool:
    """Do the stored tips equal the refs under refs/agora/ now? (One for-each-ref, no pyarrow; an index of
    another format has no digest, or is rebuilt or refused by the update that reads it.)"""
    return current(read_state(index_dir(repo)), repo.refs_under(ROOT), time.time())
