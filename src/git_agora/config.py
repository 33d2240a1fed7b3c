"""The project config, `agora.toml`, which lives in the setup contribution's tree."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .contribution import DEFAULT_TAG_WEIGHTS, METRIC_NAME_PATTERN

CONFIG_FILE = "agora.toml"
BRIEF_FILE = "program.md"
DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024


UCB_COMMENT = [
    "# Where to work next (git agora analyze): U(v) = 100 Q(v) + C sqrt(log(N+1) / (n(v)+1)) + 100 D / sqrt(1 + rho(v))",  # noqa: E501
    "#   Q: quality percentile (direction-aware), n: follow-on work, N: valid contributions,",
    "#   rho: near-duplicate descriptions (cosine >= 0.90), D = d.",
    "#   C = c0 * (1 + k * bunching); bunching = share of scored results within bunch_tolerances x tolerance",
    "#   of the best (with tolerance 0: within bunch_iqr_fraction x the interquartile range), so exploration",
    "#   grows when results crowd near the best. Slots: exploit (quality >= exploit_q), explore known",
    "#   (quality >= explore_q in clusters of at most thin_cluster), explore novel (at most few_follow_ons",
    "#   follow-ons in clusters of at most novel_cluster); per_slot suggestions each.",
]


class ConfigError(ValueError):
    pass


ARTIFACT = "{artifact}"


@dataclass(frozen=True)
class EvalSpec:
    """The `[eval]` section: how a tree is evaluated, and which files the evaluator is made of.

    Two forms:
    - one command (`command`): runs in a clean export of the contribution's tree, with the evaluator
      files replaced by the policy's. It pins the evaluator files, nothing more: contribution code that
      runs in the same process can still influence the result.
    - two phases (`build` then `score`): `build` runs contribution code in the export and writes an
      artifact directory (`{artifact}` in the command); `score` runs in a fresh directory holding only
      the policy's evaluator files, reads the artifact, and prints the metric.
    `files`: paths or globs of the evaluator files, frozen by the setup (and its policy amendments);
    `scorer`: installed packages that evaluate (their version and files' hashes enter the evaluator
    identity); `quick`: extra arguments for a quick, not comparable run (`git agora run --quick`);
    `comparable_on`: fields of the evaluator's JSON output that must agree for two results to compare
    (e.g. `data_sha256`): `analyze` and `show` warn when compared results differ on one.
    """

    command: str | None = None
    build: str | None = None
    score: str | None = None
    files: tuple[str, ...] = ()
    scorer: tuple[str, ...] = ()
    timeout: float = 3600.0
    quick: str | None = None
    comparable_on: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.build is None) != (self.score is None):
            raise ConfigError("[eval] build and score go together: the build writes the artifact the score reads")
        if self.build is not None and self.command is not None:
            raise ConfigError("[eval] has both command and build/score: choose one form")
        for name, cmd in (("build", self.build), ("score", self.score)):
            if cmd is not None and ARTIFACT not in cmd:
                raise ConfigError(f"[eval] {name} must name the artifact directory as {ARTIFACT}")
        if not self.timeout > 0:
            raise ConfigError("[eval] timeout must be a positive number of seconds")

    @property
    def configured(self) -> bool:
        return self.command is not None or self.build is not None

    @property
    def two_phase(self) -> bool:
        return self.build is not None

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> EvalSpec:
        return cls(
            command=_optional_str(values, "command"),
            build=_optional_str(values, "build"),
            score=_optional_str(values, "score"),
            files=_str_list(values, "files"),
            scorer=_str_list(values, "scorer"),
            timeout=float(values.get("timeout", 3600.0)),
            quick=_optional_str(values, "quick"),
            comparable_on=_str_list(values, "comparable_on"),
        )

    def dump(self) -> list[str]:
        if not self.configured:
            return []
        lines = ["[eval]"]
        lines += [
            f"{k} = {_toml(v)}"
            for k, v in (("command", self.command), ("build", self.build), ("score", self.score), ("quick", self.quick))
            if v is not None
        ]
        lines.append(f"files = [{', '.join(_toml(f) for f in self.files)}]  # evaluator files, frozen by the setup")
        if self.scorer:
            lines.append(f"scorer = [{', '.join(_toml(p) for p in self.scorer)}]  # installed packages that score")
        if self.comparable_on:
            fields = ", ".join(_toml(f) for f in self.comparable_on)
            lines.append(f"comparable_on = [{fields}]  # output fields that must agree for results to compare")
        return lines + [f"timeout = {_toml(self.timeout)}", ""]


def _optional_str(values: Mapping[str, Any], key: str) -> str | None:
    value = values.get(key)
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise ConfigError(f"[eval] {key} must be a non-empty string")
    return value


def _str_list(values: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = values.get(key, [])
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"[eval] {key} must be a list of non-empty strings")
    return tuple(value)


@dataclass(frozen=True)
class ProjectConfig:
    name: str = "agora-project"
    metric: str | None = None
    direction: str = "min"  # "min" or "max"
    tolerance: float = 0.0
    evaluation: EvalSpec = field(default_factory=EvalSpec)
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    tag_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_TAG_WEIGHTS))
    sections: Mapping[str, Any] = field(default_factory=dict)  # everything else, e.g. [ucb]

    def __post_init__(self) -> None:
        if self.direction not in ("min", "max"):
            raise ConfigError(f"metric direction must be min or max, not {self.direction!r}")
        if self.metric is not None and not METRIC_NAME_PATTERN.match(self.metric):
            raise ConfigError(f"metric name {self.metric!r} is not valid")
        if not self.tolerance >= 0:
            raise ConfigError("tolerance must be a non-negative number")

    @classmethod
    def parse(cls, text: str) -> ProjectConfig:
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{CONFIG_FILE} is not valid TOML: {exc}") from None
        project = data.pop("project", {})
        metric = data.pop("metric", {})
        evaluation = data.pop("eval", {})
        policy = data.pop("policy", {})
        weights = {**DEFAULT_TAG_WEIGHTS, **{k: float(v) for k, v in data.pop("tags", {}).items()}}
        try:
            return cls(
                name=str(project.get("name", cls.name)),
                metric=metric.get("name"),
                direction=str(metric.get("direction", "min")),
                tolerance=float(metric.get("tolerance", 0.0)),
                evaluation=EvalSpec.parse(evaluation),
                max_file_bytes=int(policy.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)),
                tag_weights=weights,
                sections=data,
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{CONFIG_FILE}: {exc}") from None

    def dump(self) -> str:
        lines = ["[project]", f"name = {_toml(self.name)}", ""]
        if self.metric:
            lines += ["[metric]", f"name = {_toml(self.metric)}", f"direction = {_toml(self.direction)}"]
            lines += [f"tolerance = {_toml(self.tolerance)}", ""]
        lines += self.evaluation.dump()
        lines += ["[policy]", f"max_file_bytes = {self.max_file_bytes}", ""]
        lines += ["[tags]  # evidence weight of a child from another account, per tag"]
        lines += [f"{tag} = {_toml(weight)}" for tag, weight in self.tag_weights.items()]
        for section, values in self.sections.items():
            lines += [""] + (UCB_COMMENT if section == "ucb" else []) + [f"[{section}]"]
            lines += [f"{k} = {_toml(v)}" for k, v in values.items()]
        return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Mapping):  # an inline table, e.g. [identity] members
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string
