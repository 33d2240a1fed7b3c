"""What an evaluation may put on the record: numbers and fixed words, never text a build chose.

A build's stdout and stderr, and an evaluator's free text, stay on the machine that ran them (shown to
the person, kept in `.git/agora/runs/`). A published result or verdict carries the metric values, the
output fields the setup declares (`[eval] output`, else `comparable_on`), each a finite number or a
short plain word (`SAFE_WORD`), the evaluator identity, the exit status, duration, sandbox flag and
limits, and one `Reason` from a fixed list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

SAFE_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,79}\Z")


class Reason(str, Enum):
    """Why an evaluation ended as it did: the only words a verdict's reason is made of."""

    REPRODUCED = "reproduced within the tolerance"
    PARTLY_REPRODUCED = "partly reproduced"
    CONTRADICTS_CLAIM = "contradicts the claim"
    NO_CLAIMED_METRIC = "reports none of the claimed metrics"
    BUILD_FAILED = "build failed"
    SCORE_FAILED = "score failed"
    COMMAND_FAILED = "evaluation failed"
    TIMED_OUT = "timed out"
    OVER_MEMORY = "over the memory limit"
    OVER_PROCESSES = "over the process limit"
    OVER_DISK = "over the disk limit"
    NO_ARTIFACT = "the build wrote no artifact"
    ARTIFACT_TOO_LARGE = "the artifact is over its size limit"
    ARTIFACT_SPECIAL = "the artifact holds a link, a special file or a name outside it"
    ARTIFACT_UNREADABLE = "the artifact could not be read"
    NO_METRIC = "no metric in the output"
    UNSAFE_OUTPUT = "an output field is neither a number nor a plain word"
    UNEXPORTABLE_TREE = "the tree cannot be exported"

    def __str__(self) -> str:
        return self.value


def finite_numbers(payload: Mapping[str, Any]) -> dict[str, float]:
    """The payload's finite numbers (not booleans), as floats."""
    return {
        name: float(value)
        for name, value in payload.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    }


def declared_output(payload: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any] | None:
    """The declared fields the payload holds, each a finite number or a plain word; None when one of
    them is anything else (a long string, a list, a non-finite number: it is not published)."""
    kept: dict[str, Any] = {}
    for name in fields:
        if name not in payload or payload[name] is None:
            continue
        value = payload[name]
        if isinstance(value, bool):
            kept[name] = value
        elif isinstance(value, (int, float)) and math.isfinite(value):
            kept[name] = value
        elif isinstance(value, str) and SAFE_WORD.match(value):
            kept[name] = value
        else:
            return None
    return kept


def reportable_metrics(metrics: Mapping[str, float], primary: str | None, fields: Iterable[str]) -> dict[str, float]:
    """The measured values a record may carry: the primary metric and the declared numeric fields."""
    names = {primary, *fields} - {None}
    return {name: value for name, value in metrics.items() if name in names}
