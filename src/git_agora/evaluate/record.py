"""What an evaluation may put on the record: numbers and fixed words, never text a build chose.

A build's stdout and stderr, and an evaluator's free text, stay on the machine that ran them (shown to
the person, kept in `.git/agora/runs/`). A published result or verdict carries the metric values, the
output fields the setup declares (`[eval] output`, else `comparable_on`), each a finite number or a
short plain word (`SAFE_WORD`) that does not look like a secret (`leaks.secret_in`: such a value is a
scorer error, `Reason.SECRET_OUTPUT`, so the record never trips the publishing scan), the evaluator
identity, the exit status, duration, sandbox flag and limits, and one `Reason` from a fixed list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

from ..leaks import secret_in

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
    ARTIFACT_TOO_DEEP = "the artifact's paths are too deep or too long"
    NO_METRIC = "no metric in the output"
    UNSAFE_OUTPUT = "an output field is neither a number nor a plain word"
    UNEXPORTABLE_TREE = "the tree cannot be exported"
    SECRET_OUTPUT = "an output field looks like a secret"
    INCOMPLETE = "the run is incomplete"  # the scorer says the build stopped short of the budget

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
    them is anything else (a long string, a list, a non-finite number, a word shaped like a secret: it
    is not published; `output_problem` says which)."""
    fields = tuple(fields)
    if output_problem(payload, fields) is not None:
        return None
    return {name: payload[name] for name in fields if payload.get(name) is not None}


def output_problem(payload: Mapping[str, Any], fields: Iterable[str]) -> Reason | None:
    """Why the declared fields of `payload` cannot be published (`UNSAFE_OUTPUT`: neither a finite
    number nor a plain word; `SECRET_OUTPUT`: a plain word that looks like a key or a token), or None."""
    for name in fields:
        value = payload.get(name)
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and math.isfinite(value):
            continue
        if not (isinstance(value, str) and SAFE_WORD.match(value)):
            return Reason.UNSAFE_OUTPUT
        if secret_in(value) is not None:
            return Reason.SECRET_OUTPUT
    return None


def reportable_metrics(metrics: Mapping[str, float], primary: str | None, fields: Iterable[str]) -> dict[str, float]:
    """The measured values a record may carry: the primary metric and the declared numeric fields."""
    names = {primary, *fields} - {None}
    return {name: value for name, value in metrics.items() if name in names}
