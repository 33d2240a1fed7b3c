"""Comparability: results compare only when they were measured under the same conditions.

A setup names the fields of its evaluator's JSON output that must agree (``[eval] comparable_on`` in
agora.toml, e.g. ``data_sha256``). ``push --check`` records that whole output in the contribution's
metadata (``check.output``), so every reader can tell, from the index's ``metadata`` column alone,
when two results were scored on different data. Results that did not record a field (a claim made
without ``--check``) are left out of the comparison for that field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..records import CheckRecord


def measured_under(metadata: str | Mapping[str, Any] | None, fields: Sequence[str]) -> dict[str, Any]:
    """The values of ``fields`` in a contribution's recorded evaluator output (``check.output`` of
    ``push --check``, else ``output`` of a verification); fields it does not record are absent."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            return {}
    if not isinstance(metadata, Mapping):
        return {}
    check = CheckRecord.read(metadata)
    output = check.output if check is not None else metadata.get("output")
    if not isinstance(output, Mapping):
        return {}
    return {name: output[name] for name in fields if name in output and output[name] is not None}


@dataclass(frozen=True)
class Difference:
    """One field on which the compared results disagree: each value and how many results carry it."""

    field: str
    values: tuple[tuple[str, int], ...]  # (value as text, number of results), most common first

    def describe(self) -> str:
        shown = ", ".join(f"{_short(value)} ({count})" for value, count in self.values)
        return f"{self.field}: {shown}"

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "values": [{"value": v, "results": n} for v, n in self.values]}


def differences(recorded: Iterable[Mapping[str, Any]], fields: Sequence[str]) -> tuple[Difference, ...]:
    """The fields of ``fields`` on which the results (their ``measured_under`` values) disagree."""
    recorded = list(recorded)
    found = []
    for name in fields:
        counts: dict[str, int] = {}
        for values in recorded:
            if name in values:
                text = _text(values[name])
                counts[text] = counts.get(text, 0) + 1
        if len(counts) > 1:
            ordered = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
            found.append(Difference(name, ordered))
    return tuple(found)


def warning(what: str, found: Sequence[Difference]) -> str | None:
    """One line saying that `what` (e.g. "the leaders") were measured under different conditions."""
    if not found:
        return None
    fields = "; ".join(d.describe() for d in found)
    return f"{what} were measured under different {', '.join(d.field for d in found)} ({fields}): not comparable"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _short(value: str) -> str:
    return value[:12] + "..." if len(value) > 15 else value
