"""What a predicted band is: the rule writers (``push --predict``) and readers (``calibration``) share.

A *prediction* is the band ``[low, high]`` a contribution's metadata carries under ``prediction``
(records written before ``--predict`` carry it as ``predicted_band``): two finite numbers, low <= high,
in the primary metric's units. ``as_band`` is the rule: writers refuse what it rejects, readers skip
it. Standard library only, so that publishing never imports numpy or pyarrow.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

PREDICTION = "prediction"
KEYS = (PREDICTION, "predicted_band")  # the metadata keys read, the first one present (not null) wins
_NUMBER = r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
_BAND = re.compile(rf"{_NUMBER}\.\.{_NUMBER}")

Band = tuple[float, float]


def parse_band(text: str) -> Band:
    """``LOW..HIGH`` (e.g. ``2.6..3.0``, ``-1..-0.5``) as a band; ValueError with one line otherwise."""
    match = _BAND.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a band LOW..HIGH (two numbers, e.g. 2.6..3.0)")
    low, high = float(match[1]), float(match[2])
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"{text!r}: both ends must be finite numbers")
    if low > high:
        raise ValueError(f"{text!r}: the low end exceeds the high end (LOW..HIGH)")
    return low, high


def as_band(value: Any) -> Band | None:
    """``value`` as a band: a pair of finite numbers, low <= high; None when it is not one."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return None
    low, high = float(value[0]), float(value[1])
    return (low, high) if low <= high else None


def band_of(metadata: str | Mapping[str, Any] | None) -> Band | None:
    """The prediction a contribution's metadata (the JSON object, or its text) carries, if a valid one."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            return None
    if not isinstance(metadata, Mapping):
        return None
    key = next((k for k in KEYS if metadata.get(k) is not None), None)
    return None if key is None else as_band(metadata[key])
