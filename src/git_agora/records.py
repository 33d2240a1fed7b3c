"""The records git-agora writes into a contribution's Agora-Meta, as typed objects: a verdict's run
record (`RunRecord`, written by `ops.verify.reproduce`, carried by the verdict bundle of a split CI)
and a CI account's witness record (`WitnessRecord`, written by `ops.ci`). Each has one reader
(`read`, which accepts every shape an older git-agora wrote, or None for what is no such record) and
one writer (`to_metadata`). Nothing here touches Git or the disk.

The run record's eras (`RunRecord.era`), as `git log -p -S'"duration_s"' src/git_agora/ops` shows them:

1. the first `verify` (2026-11-29): claimed, reproduced, difference, tolerance, a free-text reason,
   the evaluator (``{command, sha256}``), hardware, duration_s;
2. the policy's evaluator (2026-11-30): the evaluator identity, claimed_under_evaluator,
   same_evaluator and the declared output added;
3. the sandbox (2026-12-01, today's): the reason a fixed code (`evaluate.record.Reason`), exit_status,
   sandbox and limits added. Only this era can be run-backed (`backed`): the older ones do not say
   whether the code ran sandboxed.

A claim's check record (`CheckRecord`, Agora-Meta ``check``, written by `push --check`) has three eras
too: the first (2026-11-29) ``{command, measured, duration_s}``; the policy's evaluator (2026-11-30) the
evaluator identity and the declared output in place of the command; the sandbox (2026-12-01, today's)
sandbox and limits added. The witness record has had one shape since it exists:
``{"witness": {"tips": {account: sha}}}``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .contribution import witness_tips

_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
ERA_KEYS = (
    ("claimed", "reproduced", "difference", "tolerance", "reason", "evaluator", "hardware", "duration_s"),
    ("claimed_under_evaluator", "same_evaluator", "output"),
    ("exit_status", "sandbox", "limits"),
)
RUN_KEYS = frozenset(key for keys in ERA_KEYS for key in keys)  # what a run record of today holds, exactly


def _number(value: object) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _numbers(value: object) -> dict[str, float] | None:
    return dict(value) if isinstance(value, Mapping) and _all_numbers(value) else None  # its own copy


def _all_numbers(value: object) -> bool:
    return isinstance(value, Mapping) and all(_number(v) is not None for v in value.values())


def _object(value: object) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else None  # its own copy


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _flag(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_READ: dict[str, Callable[[object], Any]] = {  # each field as read: its value, or None for another type
    "reproduced": _numbers,
    "claimed": _numbers,
    "difference": _numbers,
    "tolerance": _number,
    "reason": _text,
    "evaluator": _object,
    "claimed_under_evaluator": _text,
    "same_evaluator": _flag,
    "output": _object,
    "hardware": _object,
    "duration_s": _number,
    "exit_status": _integer,
    "sandbox": _flag,
    "limits": _object,
}


def _sha256(evaluator: object) -> str | None:
    """An evaluator identity's digest, None where it holds no well-formed one."""
    digest = evaluator.get("sha256") if isinstance(evaluator, Mapping) else None
    return digest if isinstance(digest, str) and _SHA256.match(digest) else None


def _backed(reproduced: object, evaluator: object, sandbox: object, duration: object) -> bool:
    """The rule of `RunRecord.backed`, over fields as `_READ` reads them."""
    return (
        reproduced is not None
        and _sha256(evaluator) is not None
        and sandbox is not None
        and isinstance(duration, (int, float))
        and math.isfinite(duration)
        and duration >= 0
    )


@dataclass(frozen=True)
class RunRecord:
    """What a verdict records of the rerun behind it. A field an older era did not write, or that holds
    another type than its own (a hand-edited record), reads as None (`unreadable` names the latter)."""

    reproduced: dict[str, float] | None  # the values measured here, by the setup's metric and fields
    claimed: dict[str, float] | None = None  # the claim's values for those names
    difference: dict[str, float] | None = None
    tolerance: float | None = None
    reason: str | None = None  # era 3: a fixed `evaluate.record.Reason` value; before: free text
    evaluator: dict[str, Any] | None = None  # the evaluator identity (`sha256` and what it digests)
    claimed_under_evaluator: str | None = None  # the identity the claim recorded (`push --check`)
    same_evaluator: bool | None = None
    output: dict[str, Any] | None = None  # the setup's declared output fields
    hardware: dict[str, Any] | None = None
    duration_s: float | None = None
    exit_status: int | None = None
    sandbox: bool | None = None  # None: an era that did not say
    limits: dict[str, Any] | None = None
    era: int = field(default=3, compare=False)  # which writer wrote it (the module docstring)
    unreadable: tuple[str, ...] = field(default=(), compare=False)
    unknown: tuple[str, ...] = field(default=(), compare=False)  # keys no era wrote

    @classmethod
    def read(cls, metadata: Mapping[str, Any]) -> RunRecord | None:
        """The run record in a verdict's metadata, of any era; None when it records no rerun (a
        hand-written `post --verdict`: no ``reproduced``)."""
        if "reproduced" not in metadata:
            return None
        get = metadata.get
        values = {key: read(get(key)) for key, read in _READ.items()}
        unreadable = tuple(k for k, v in values.items() if v is None and get(k) is not None)
        era = 3 if "sandbox" in metadata else 2 if "output" in metadata else 1
        unknown = tuple(sorted(k for k in metadata if k not in RUN_KEYS))
        return cls(**values, era=era, unreadable=unreadable, unknown=unknown)

    def to_metadata(self) -> dict[str, Any]:
        """The record as a verdict's Agora-Meta holds it (today's era: every key, in this order)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in RUN_KEYS}

    @property
    def evaluator_sha256(self) -> str | None:
        return _sha256(self.evaluator)

    @property
    def backed(self) -> bool:
        """Whether it records the rerun behind the verdict: the measured values, the evaluator
        identity, the sandbox flag and the duration. A verdict without them is an opinion. The record
        is a requirement, not proof: its author can forge it (who counts is the trust root's rule)."""
        return _backed(self.reproduced, self.evaluator, self.sandbox, self.duration_s)


def carries_run(metadata: Mapping[str, Any], values: str = "reproduced") -> bool:
    """Whether a verdict's metadata records its rerun (`RunRecord.backed`): the index's `run_backed`
    column; with ``values="measured"``, whether a claim's check record does (`check_backed`)."""
    get = metadata.get  # `RunRecord.read(metadata).backed` without the other fields or copies: every verdict indexed
    measured = get(values) if _all_numbers(get(values)) else None
    return values in metadata and _backed(measured, get("evaluator"), _flag(get("sandbox")), _number(get("duration_s")))


CHECK_KEYS = ("evaluator", "output", "measured", "duration_s", "sandbox", "limits")  # today's, exactly


@dataclass(frozen=True)
class CheckRecord:
    """What a result published with `push --check` records of that run (Agora-Meta ``check``): numbers
    and fixed words, never the evaluator's free text. A field its era did not write, or of another type,
    reads as None."""

    measured: dict[str, float] | None
    evaluator: dict[str, Any] | None = None
    output: dict[str, Any] | None = None  # the setup's declared output fields (`frontier.comparable`)
    duration_s: float | None = None
    sandbox: bool | None = None  # None: an era that did not say
    limits: dict[str, Any] | None = None
    command: str | None = field(default=None, compare=False)  # the first era's scoring command
    era: int = field(default=3, compare=False)

    @classmethod
    def read(cls, metadata: Mapping[str, Any]) -> CheckRecord | None:
        """The check record in a claim's Agora-Meta, of any era; None without one (no `--check`)."""
        check = metadata.get("check")
        if not isinstance(check, Mapping):
            return None
        get = check.get
        values = {key: _READ["reproduced" if key == "measured" else key](get(key)) for key in CHECK_KEYS}
        era = 3 if "sandbox" in check else 2 if "evaluator" in check else 1
        return cls(**values, command=_text(get("command")), era=era)

    def to_metadata(self) -> dict[str, Any]:
        """The record as a claim's Agora-Meta ``check`` holds it (today's era)."""
        return {key: getattr(self, key) for key in CHECK_KEYS}

    @property
    def evaluator_sha256(self) -> str | None:
        return _sha256(self.evaluator)

    @property
    def backed(self) -> bool:
        """Whether it records its run as a run-backed verdict does (`RunRecord.backed`, the measured
        values in place of the reproduced ones)."""
        return _backed(self.measured, self.evaluator, self.sandbox, self.duration_s)


def check_backed(metadata: Mapping[str, Any]) -> bool:
    """`CheckRecord.read(metadata).backed` without the other fields: read for every scored result."""
    check = metadata.get("check")
    return isinstance(check, Mapping) and carries_run(check, "measured")


@dataclass(frozen=True)
class WitnessRecord:
    """A CI account's record of the log tips it saw: per account, the log commit at the tip of
    ``refs/agora/log/<account>``. Its shape rule is `contribution.witness_tips` (writers and readers)."""

    tips: dict[str, str]

    @classmethod
    def read(cls, metadata: Mapping[str, Any]) -> WitnessRecord | None:
        tips = witness_tips(metadata)
        return None if tips is None else cls(tips)

    def to_metadata(self) -> dict[str, Any]:
        return {"witness": {"tips": dict(self.tips)}}
