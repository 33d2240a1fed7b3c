"""The UCB settings of a project (agora.toml ``[ucb]``, docs/protocol.md section 5): what ``ucb`` computes
with, and what ``git agora init`` writes. Standard library only, so that writing a setup loads no numpy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..formats import section_format


@dataclass(frozen=True)
class UcbParams:
    """UCB constants; a project overrides them in agora.toml ``[ucb]`` (same names)."""

    c0: float = 20.0
    k: float = 2.0
    d: float = 0.1
    bunch_tolerances: float = 3.0
    bunch_iqr_fraction: float = 0.1
    exploit_q: float = 0.8
    explore_q: float = 0.5
    thin_cluster: int = 3
    novel_cluster: int = 2
    few_follow_ons: int = 1
    per_slot: int = 3
    format: int = 1  # 2 or 3: the keys below (KEY_FORMATS); an older git-agora says it needs a newer one
    replicate_within: float = 0.0  # in tolerances; 0: replicates are ordinary results (module docstring)
    replicates: int = 2
    explore_quality: str = "own"  # or "lineage": explore slots judge a result by it or its parent (docstring)
    explore_scored: bool = False  # explore slots suggest only results with a metric (module docstring)
    exploit_rank: str = "ucb"  # or "quality": the exploit slot lists its leaders best first (docstring)
    explore_slots: str = "both"  # or "novel": the two explore settings apply to explore novel only (docstring)
    verify: str = "all"  # format 3; or "leaders": the unverified view lists the best's noise group only

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> UcbParams:
        """Build from an ``[ucb]`` table; unknown keys raise ValueError (typos should not pass silently),
        and so do keys of a format the table does not declare (``format = 2`` or 3) or a format newer
        than this git-agora reads."""
        values = dict(values or {})
        version = section_format("ucb", values, UCB_FORMAT)
        newer = sorted(k for k in values if KEY_FORMATS.get(k, 1) > version and k != "format")
        if newer:
            needed = max(KEY_FORMATS[k] for k in newer)
            raise ValueError(f"[ucb] {', '.join(newer)} need format = {needed} in [ucb]")
        names = {f.name: f.type for f in fields(cls)}
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(
                f"[ucb]: unknown key(s) {', '.join(unknown)} (a typo, or a newer git-agora's); "
                f"known: {', '.join(names)}"
            )
        kinds = {f.name: type(getattr(cls(), f.name)) for f in fields(cls)}
        if not isinstance(values.get("explore_scored", False), bool):
            raise ValueError(f"[ucb] explore_scored must be true or false, not {values['explore_scored']!r}")
        for key, choices in CHOICES.items():
            if values.get(key, choices[0]) not in choices:
                raise ValueError(f"[ucb] {key} must be one of {', '.join(choices)}, not {values[key]!r}")
        return cls(**{k: kinds[k](v) for k, v in values.items()})

    def to_dict(self) -> dict[str, Any]:
        """The settings as `[ucb]` holds them: without the keys of a newer format than the project's (which
        an older reader would refuse), and without `format` itself in a format-1 project."""
        return {f.name: getattr(self, f.name) for f in fields(self) if KEY_FORMATS.get(f.name, 1) <= self.format}

    @property
    def replicating(self) -> bool:
        return self.format >= 2 and self.replicate_within > 0


UCB_FORMAT = 3  # the newest [ucb] format this git-agora reads
FORMAT_2 = ("format", "replicate_within", "replicates", "explore_quality", "explore_scored", "explore_slots")
KEY_FORMATS = {**dict.fromkeys(FORMAT_2 + ("exploit_rank",), 2), "verify": 3}  # the format a key needs (others: 1)
CHOICES = {  # each word-valued key's words, its default first
    "explore_quality": ("own", "lineage"),
    "explore_slots": ("both", "novel"),
    "verify": ("all", "leaders"),
    "exploit_rank": ("ucb", "quality"),
}

NEW_SETUPS = UcbParams(
    format=3, explore_scored=True, explore_quality="lineage", explore_slots="novel", verify="leaders"
)
"""What `git agora init` writes into a new setup that brings no `[ucb]` table: the setting that met all
four goals of the matched comparison (docs/compare.md, the tenth question). `UcbParams()` stays the
paper's: what a table without these keys means, so existing projects keep what they had."""
