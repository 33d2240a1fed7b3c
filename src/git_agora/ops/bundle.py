"""The verdict bundle: what the verify half of a split CI (`git agora ci --verify-only --out DIR`) hands
the publish half (`git agora ci --publish DIR`), as data (docs/ci.md, "The split job").

A folder: `bundle.json` (the header: `format`, the CI account, the setup it verified for, the claims the
budget left) and `verdicts/<target sha>.json`, one file per claim the verify half took up (so that jobs
on several machines can each write their own). Each holds the claim's SHA and either a verdict (the
verdict, its fixed reason code and the rerun record `ops.verify.reproduce` returns, a `records.RunRecord`
of today's era, every key) or why it was not rerun (`cause`: the claim's fault or the runner's, and a
line for the summary).

`write_bundle` is the one writer and `read_bundle` the one reader; the reader checks the shape only
(known keys, types, sizes: a verify job that ran contributed code is not trusted for more), and
`ops.ci_split.accept` checks it against the policy. Nothing here reads a key, runs code or touches Git.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AgoraError
from ..records import RUN_KEYS, RunRecord

FORMAT = 1
HEADER = "bundle.json"
VERDICTS = "verdicts"
MAX_FILE = 256 * 1024  # one verdict's record is a few KiB
MAX_FILES = 10_000
MAX_LINE = 400  # a not-rerun reason, shown in the summary only
VERDICTS_WORDS = ("confirmed", "partial", "failed")
CAUSES = ("claim", "environment")
_SHA = re.compile(r"[0-9a-f]{40}\Z")


class BundleError(AgoraError):
    """A bundle the publish half refuses (whole: it publishes nothing of it)."""

    def __init__(self, message: str):
        super().__init__(f"refused the verdict bundle: {message}")


@dataclass(frozen=True)
class Rerun:
    """One claim the verify half took up: a verdict with its record, or why it was not rerun."""

    target: str
    verdict: str | None  # confirmed | partial | failed; None: not rerun
    reason: str  # a verdict: its fixed reason code (`evaluate.record.Reason` value); else a line for the summary
    record: RunRecord | None = None  # `reproduce`'s record, with a verdict only
    cause: str | None = None  # claim | environment, when not rerun
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"target": self.target, "verdict": self.verdict, "reason": self.reason}
        if self.verdict is not None:
            shown["record"] = self.record.to_metadata() if self.record else None
        else:
            shown["cause"] = self.cause
        return shown | {"seconds": self.seconds}


@dataclass(frozen=True)
class Bundle:
    account: str  # the CI account it verified as
    setup: str  # the project's setup commit
    reruns: tuple[Rerun, ...]
    left: tuple[str, ...] = ()  # claims the budget left, most consequential first
    format: int = FORMAT

    def header(self) -> dict[str, Any]:
        return {"format": self.format, "account": self.account, "setup": self.setup, "left": list(self.left)}


def write_bundle(folder: Path | str, bundle: Bundle) -> Path:
    """Write `bundle` into `folder` (made; it must hold no bundle yet): each verdict, then the header."""
    folder = Path(folder)
    if (folder / HEADER).exists() or (folder / VERDICTS).exists():
        raise AgoraError(f"{folder} holds a bundle already: give --out an empty folder")
    (folder / VERDICTS).mkdir(parents=True)
    for rerun in bundle.reruns:
        write_rerun(folder, rerun)
    _write_json(folder / HEADER, bundle.header())
    return folder


def write_rerun(folder: Path | str, rerun: Rerun) -> None:
    """One claim's file (also what a job of its own writes)."""
    _write_json(Path(folder) / VERDICTS / f"{rerun.target}.json", rerun.to_dict())


def _write_json(path: Path, value: Any) -> None:
    scratch = path.with_name(f".{path.name}.part")
    scratch.write_text(json.dumps(value, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(scratch, path)


def read_bundle(folder: Path | str) -> Bundle:
    """The bundle in `folder`, its shape checked (BundleError on anything else: an unknown key or file,
    a wrong type, a non-finite number, a link, a file over MAX_FILE)."""
    folder = Path(folder)
    header = _object(_read(folder / HEADER), HEADER, {"format", "account", "setup", "left"})
    if header["format"] != FORMAT:
        raise BundleError(f"format {header['format']!r}: this git-agora reads format {FORMAT}")
    account, setup, left = header["account"], header["setup"], header["left"]
    if not isinstance(account, str) or not _sha(setup) or not isinstance(left, list) or not all(map(_sha, left)):
        raise BundleError(f"{HEADER}: account, setup or left is not what a bundle holds")
    verdicts = folder / VERDICTS
    if verdicts.is_symlink() or not verdicts.is_dir():
        raise BundleError(f"no {VERDICTS}/ folder")
    names = sorted(os.listdir(verdicts))
    if len(names) > MAX_FILES:
        raise BundleError(f"more than {MAX_FILES} files in {VERDICTS}/")
    reruns = []
    for name in names:
        target = name.removesuffix(".json")
        if not _sha(target) or name == target:
            raise BundleError(f"{VERDICTS}/{name!r} is not a verdict file (<target sha>.json)")
        reruns.append(_rerun(_read(verdicts / name), f"{VERDICTS}/{name}", target))
    return Bundle(account, setup, tuple(reruns), tuple(left))


def _rerun(value: Any, where: str, target: str) -> Rerun:
    if not isinstance(value, dict) or value.get("verdict") is not None:
        data = _object(value, where, {"target", "verdict", "reason", "record", "seconds"})
        if data["verdict"] not in VERDICTS_WORDS or not isinstance(data["record"], dict):
            raise BundleError(f"{where}: a verdict is one of {', '.join(VERDICTS_WORDS)} with its record")
    else:
        data = _object(value, where, {"target", "verdict", "reason", "cause", "seconds"})
        if data["cause"] not in CAUSES:
            raise BundleError(f"{where}: cause is one of {', '.join(CAUSES)}")
    if data["target"] != target:
        raise BundleError(f"{where}: it names another target")
    reason, seconds = data["reason"], data["seconds"]
    if not isinstance(reason, str) or len(reason) > MAX_LINE or not reason.isprintable():
        raise BundleError(f"{where}: the reason is not one printable line")
    if not finite_number(seconds) or seconds < 0:
        raise BundleError(f"{where}: seconds is not a number")
    return Rerun(target, data["verdict"], reason, _record(data.get("record"), where), data.get("cause"), float(seconds))


def _record(value: dict[str, Any] | None, where: str) -> RunRecord | None:
    """A verdict's record: today's run record, every key of it and each of its type."""
    if value is None:
        return None
    if set(value) != RUN_KEYS:
        raise BundleError(
            f"{where}: the record's fields are not the fixed ones ({', '.join(sorted(set(value) ^ RUN_KEYS))})"
        )
    record = RunRecord.read(value)
    if record is None or record.unreadable:
        wrong = ", ".join(record.unreadable if record else ("reproduced",))
        raise BundleError(f"{where}: {wrong} is not what a rerun records")
    return record


def _read(path: Path) -> Any:
    if path.is_symlink() or not path.is_file():
        raise BundleError(f"{path.name} is missing or not a plain file")
    if path.stat().st_size > MAX_FILE:
        raise BundleError(f"{path.name} is over {MAX_FILE // 1024} KiB")
    try:
        return json.loads(path.read_bytes(), parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path.name} is not JSON ({exc})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no number a bundle holds")


def _object(value: Any, where: str, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != keys:
        found = sorted(value) if isinstance(value, dict) else type(value).__name__
        raise BundleError(f"{where}: holds {found}, not the keys {sorted(keys)}")
    return value


def _sha(value: Any) -> bool:
    return isinstance(value, str) and bool(_SHA.match(value))


def finite_number(value: Any) -> bool:
    """A finite int or float, never a bool (what a bundle's numbers are)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
