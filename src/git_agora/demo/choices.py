"""The demo task's mutable surface: read `choices.py`, change one knob, write it back (pure functions)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

METHODS = ("additive", "absolute", "witten_bell")
_LINE = re.compile(r"^(?P<name>[A-Z_][A-Z0-9_]*) = (?P<value>[^#\n]+?)(?P<rest>\s*#.*)?$")


@dataclass(frozen=True)
class Change:
    knob: str
    old: object
    new: object

    def describe(self) -> str:
        return f"{self.knob} {self.old!r} -> {self.new!r}"


def read_choices(text: str) -> dict[str, object]:
    values = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            values[m["name"]] = eval(m["value"], {}, {})  # the file holds literals only
    return values


def write_choice(text: str, knob: str, value: object) -> str:
    lines = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m["name"] == knob:
            line = f"{knob} = {value!r}{m['rest'] or ''}"
        lines.append(line)
    return "\n".join(lines) + "\n"


KNOBS = ("ORDER", "METHOD", "DISCOUNT", "ADDITIVE_ALPHA", "INTERPOLATE", "LOWERCASE")


def propose(values: dict[str, object], rng: random.Random, knob: str | None = None) -> Change:
    """One small change to one knob, as a researcher would try next (`knob`: to this knob, when it can
    still change; otherwise to one the researcher picks)."""
    if knob is not None:
        for _ in range(20):
            change = _change(values, rng, knob)
            if change.new != change.old:
                return change
    change = _change(
        values,
        rng,
        rng.choice(
            ["ORDER", "ORDER", "ORDER", "METHOD", "METHOD", "DISCOUNT", "ADDITIVE_ALPHA", "INTERPOLATE", "LOWERCASE"]
        ),
    )
    return change if change.new != change.old else propose(values, rng)


def _change(values: dict[str, object], rng: random.Random, knob: str) -> Change:
    old: Any = values[knob]
    new: Any
    if knob == "ORDER":
        new = min(7, max(0, int(old) + rng.choice([-1, 1, 1, 2])))
    elif knob == "METHOD":
        new = rng.choice([m for m in METHODS if m != old])
    elif knob == "DISCOUNT":
        new = round(min(0.95, max(0.05, float(old) + rng.choice([-0.2, -0.1, 0.1, 0.2]))), 2)
    elif knob == "ADDITIVE_ALPHA":
        new = round(float(old) * rng.choice([0.1, 0.5, 2.0]), 4)
    else:
        new = not old
    return Change(knob, old, new)
