"""The project config, `agora.toml`, which lives in the setup contribution's tree."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .contribution import METRIC_NAME_PATTERN, default_weights, valid_account
from .formats import section_format

CONFIG_FILE = "agora.toml"
BRIEF_FILE = "program.md"
DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024
CI_FORMAT = 2  # the newest [ci] format this git-agora reads (`ProjectConfig.ci_format`)


UCB_COMMENT = [
    "# Where to work next (git agora analyze): U(v) = 100 Q(v) + C sqrt(log(N+1) / (n(v)+1)) + 100 D / sqrt(1 + rho(v))",  # noqa: E501
    "#   Q: quality percentile (direction-aware), n: follow-on work, N: valid contributions,",
    "#   rho: near-duplicate descriptions (cosine >= 0.90), D = d.",
    "#   C = c0 * (1 + k * bunching); bunching = share of scored results within bunch_tolerances x tolerance",
    "#   of the best (with tolerance 0: within bunch_iqr_fraction x the interquartile range), so exploration",
    "#   grows when results crowd near the best. Slots: exploit (quality >= exploit_q), explore known",
    "#   (quality >= explore_q in clusters of at most thin_cluster), explore novel (at most few_follow_ons",
    "#   follow-ons in clusters of at most novel_cluster); per_slot suggestions each.",
    "#   format = 2 adds replicates for noisy metrics: replicate_within (tolerances; 0 = off) and replicates",
    "#   (per leader): standings are means over draws, and close leaders are replicated first (docs/protocol.md);",
    '#   and explore_quality ("lineage": explore slots judge a result by it or its parent), explore_scored,',
    '#   explore_slots ("novel": those two apply to explore novel only; "both", the default),',
    '#   and exploit_rank ("quality": the exploit slot lists its leaders best first; "ucb", by U, the default).',
    '#   format = 3 adds verify ("leaders": the unverified view suggests only the best and its ties; "all").',
    "#   A new setup without [ucb] gets format 3 with the settings that met the matched comparison's goals",
    "#   (docs/compare.md); [ucb] format = 1 alone keeps the paper's slots.",
]


class ConfigError(ValueError):
    pass


VERDICTS_FORMAT = 2  # the newest [verdicts] format this git-agora reads; what `git agora init` writes
VERDICTS_COMMENT = [
    "# Whose verdicts count and what may lead (docs/protocol.md section 6). format = 2: the trust root (the",
    "#   setup's account, members, CI accounts) outranks accounts whose standing one of its confirmations",
    "#   minted, only the root mints standing, and a contested result is not the best; 1 (or no table): the",
    "#   older rules.",
]


def verdicts_format(sections: Mapping[str, Any]) -> int:
    """`[verdicts] format`: 1 (the default: a table without it, or no table) or 2 (ranked standing)."""
    values = sections.get("verdicts", {})
    if not isinstance(values, Mapping):
        raise ConfigError("[verdicts] must be a table")
    unknown = sorted(set(values) - {"format"})
    if unknown:
        raise ConfigError(f"[verdicts]: unknown key(s) {', '.join(unknown)} (a typo, or a newer git-agora's)")
    return section_format("verdicts", values, VERDICTS_FORMAT, ConfigError)


KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
_UNITS = {"": 1, "b": 1, "k": KiB, "kb": KiB, "kib": KiB, "m": MiB, "mb": MiB, "mib": MiB, "g": GiB, "gb": GiB}
_UNITS["gib"] = GiB
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Any, name: str) -> int:
    """Bytes from an integer or a size such as "512M", "4G", "2 GiB"."""
    if isinstance(value, bool):
        raise ConfigError(f"[eval.limits] {name} must be a size such as 4G, not {value!r}")
    if isinstance(value, int):
        number, unit = float(value), ""
    else:
        match = _SIZE.match(str(value))
        if not match or match.group(2).lower() not in _UNITS:
            raise ConfigError(f"[eval.limits] {name} must be a size such as 512M or 4G, not {value!r}")
        number, unit = float(match.group(1)), match.group(2).lower()
    size = int(number * _UNITS[unit])
    if size <= 0:
        raise ConfigError(f"[eval.limits] {name} must be positive")
    return size


@dataclass(frozen=True)
class Limits:
    """`[eval.limits]` of agora.toml; the defaults fit a CPU evaluation of a small model."""

    memory: int = 4 * GiB  # the step's processes together (cgroup), or each one's address space (rlimit)
    processes: int = 256
    disk: int = 1 * GiB  # each writable folder of the sandbox: the work tree, /tmp
    artifact: int = 1 * GiB  # what the build leaves for the score step

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> Limits:
        unknown = sorted(set(values) - {"memory", "processes", "disk", "artifact"})
        if unknown:
            raise ConfigError(f"[eval.limits] has unknown keys ({', '.join(unknown)})")
        processes = values.get("processes", cls.processes)
        if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
            raise ConfigError("[eval.limits] processes must be a positive integer")
        return cls(
            memory=parse_size(values.get("memory", cls.memory), "memory"),
            processes=processes,
            disk=parse_size(values.get("disk", cls.disk), "disk"),
            artifact=parse_size(values.get("artifact", cls.artifact), "artifact"),
        )

    def dump(self) -> dict[str, Any]:
        return {
            "memory": size_text(self.memory),
            "processes": self.processes,
            "disk": size_text(self.disk),
            "artifact": size_text(self.artifact),
        }


def size_text(size: int) -> str:
    for unit, scale in (("G", GiB), ("M", MiB), ("K", KiB)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


ARTIFACT = "{artifact}"
EVAL_FORMAT = 3  # the newest [eval] format this git-agora reads
_KEYS = {
    1: {"command", "build", "score", "files", "scorer", "timeout", "quick", "comparable_on", "format"},
    2: {"output", "env", "mounts", "network", "pins", "limits"},
    3: {"python", "lock"},  # the scorer's environment (`ops.scorer_env`)
}
_PYTHON = re.compile(r"^3\.[0-9]{1,2}(\.[0-9]{1,3})?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


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

    Format 2 (`format = 2`, required by the keys below; an older git-agora says it needs a newer one):
    `output`: the fields of the evaluator's JSON output a published result or verdict records (default:
    `comparable_on`), each a finite number or a plain word; `env`: environment variables passed into
    the sandbox; `mounts`: host paths shown read-only inside it (e.g. a folder of donor models);
    `network`: whether the steps may use the network (default: no, loopback included); `pins`: scorer
    package -> the sha256 of its files (`git agora show` of a claim prints it), refused when the
    installed one differs; `[eval.limits]`: memory, processes, disk, artifact (`evaluate.limits`).

    Format 3 (`format = 3`): the scorer's environment, which `git agora ci` checks before rerunning
    anything and its recipes install: `python`, the interpreter's version ("3.11", or "3.11.7" exactly);
    `lock`, an evaluator file of the setup in pip's hash-checking format (`name==version --hash=sha256:...`,
    installed with `pip install --require-hashes -r`), naming every scorer package.
    """

    command: str | None = None
    build: str | None = None
    score: str | None = None
    files: tuple[str, ...] = ()
    scorer: tuple[str, ...] = ()
    timeout: float = 3600.0
    quick: str | None = None
    comparable_on: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    mounts: tuple[str, ...] = ()
    network: bool = False
    pins: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    python: str | None = None
    lock: str | None = None
    format: int = 1

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
        for name in self.env:
            if not _ENV_NAME.match(name):
                raise ConfigError(f"[eval] env: {name!r} is not an environment variable's name")
        for name, digest in self.pins.items():
            if name not in self.scorer or not _SHA256.match(digest):
                raise ConfigError(f"[eval] pins: {name!r} must be a scorer package pinned to a sha256 (64 hex digits)")
        if self.python is not None and not _PYTHON.match(self.python):
            raise ConfigError(f"[eval] python: {self.python!r} is not a Python 3 version (3.11, or 3.11.7)")
        if self.lock is not None and self.lock not in self.files:
            raise ConfigError(f"[eval] lock: {self.lock!r} must be one of [eval] files (the setup fixes it)")

    @property
    def declared_output(self) -> tuple[str, ...]:
        """The output fields a published record keeps: `output`, else `comparable_on`."""
        return self.output or self.comparable_on

    @property
    def configured(self) -> bool:
        return self.command is not None or self.build is not None

    @property
    def two_phase(self) -> bool:
        return self.build is not None

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> EvalSpec:
        version = section_format("eval", values, EVAL_FORMAT, ConfigError)
        known = set().union(*(keys for at, keys in _KEYS.items() if at <= version))
        unknown = sorted(set(values) - known)
        if unknown:
            for at in sorted(_KEYS):
                newer = [k for k in unknown if k in _KEYS[at]]
                if newer:
                    raise ConfigError(f"[eval] {', '.join(newer)} need format = {at} in [eval]")
            raise ConfigError(f"[eval] has keys this git-agora does not know ({', '.join(unknown)}): a newer one may")
        network = values.get("network", False)
        if not isinstance(network, bool):
            raise ConfigError("[eval] network must be true or false")
        pins = values.get("pins", {})
        if not isinstance(pins, Mapping) or not all(isinstance(v, str) for v in pins.values()):
            raise ConfigError("[eval] pins must be a table of package = sha256")
        limits = values.get("limits", {})
        if not isinstance(limits, Mapping):
            raise ConfigError("[eval.limits] must be a table")
        parsed_limits = Limits.parse(limits)
        return cls(
            command=_optional_str(values, "command"),
            build=_optional_str(values, "build"),
            score=_optional_str(values, "score"),
            files=_str_list(values, "files"),
            scorer=_str_list(values, "scorer"),
            timeout=float(values.get("timeout", 3600.0)),
            quick=_optional_str(values, "quick"),
            comparable_on=_str_list(values, "comparable_on"),
            output=_str_list(values, "output"),
            env=_str_list(values, "env"),
            mounts=_str_list(values, "mounts"),
            network=network,
            pins=dict(pins),
            limits=parsed_limits,
            python=_optional_str(values, "python"),
            lock=_optional_str(values, "lock"),
            format=version,
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
        lines.append(f"timeout = {_toml(self.timeout)}")
        if self.format >= 2:
            needs = f"# the [eval] keys below need a git-agora that reads format {self.format}"
            lines.insert(1, f"format = {self.format}  {needs}")
            if self.python:
                lines.append(f"python = {_toml(self.python)}  # the scorer's interpreter")
            if self.lock:
                lines.append(f"lock = {_toml(self.lock)}  # the scorer packages, hash-pinned (pip --require-hashes)")
            for key, value, note in (
                ("output", list(self.output), "output fields a published result records"),
                ("env", list(self.env), "environment variables passed into the sandbox"),
                ("mounts", list(self.mounts), "host paths shown read-only in the sandbox"),
            ):
                if value:
                    lines.append(f"{key} = {_toml(value)}  # {note}")
            if self.network:
                lines.append("network = true  # the steps may use the network")
            if self.pins:
                lines.append(f"pins = {_toml(dict(self.pins))}  # scorer packages' sha256, refused when they differ")
            if self.limits != Limits():
                lines += ["", "[eval.limits]"] + [f"{k} = {_toml(v)}" for k, v in self.limits.dump().items()]
        return lines + [""]

    def uses_format_2(self) -> bool:
        """Whether this spec needs `format = 2` (it uses a key older readers would ignore)."""
        return bool(self.output or self.env or self.mounts or self.network or self.pins or self.limits != Limits())


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
    tag_weights: Mapping[str, float] = field(default_factory=default_weights)
    sections: Mapping[str, Any] = field(default_factory=dict)  # everything else, e.g. [ucb]

    def __post_init__(self) -> None:
        if self.direction not in ("min", "max"):
            raise ConfigError(f"metric direction must be min or max, not {self.direction!r}")
        if self.metric is not None and not METRIC_NAME_PATTERN.match(self.metric):
            raise ConfigError(f"metric name {self.metric!r} is not valid")
        if not self.tolerance >= 0:
            raise ConfigError("tolerance must be a non-negative number")
        ci = self.sections.get("ci", {})
        accounts = ci.get("accounts", []) if isinstance(ci, Mapping) else None
        if not isinstance(accounts, list) or not all(isinstance(a, str) and valid_account(a) for a in accounts):
            raise ConfigError("[ci] accounts must be a list of account names")
        section_format("ci", ci, CI_FORMAT, ConfigError)
        keys = ci.get("keys", {})
        if not isinstance(keys, Mapping) or not all(
            name in accounts and isinstance(key, str) and key.startswith("ssh-") and len(key.split()) >= 2
            for name, key in keys.items()
        ):
            raise ConfigError('[ci] keys must map [ci] accounts to public keys ({ ci = "ssh-ed25519 AAAA..." })')
        verdicts_format(self.sections)

    @property
    def verdicts_format(self) -> int:
        """`[verdicts] format` (``verdicts_format``): 2 ranks standing (``frontier.root.Root.ranks``)."""
        return verdicts_format(self.sections)

    @property
    def members(self) -> tuple[str, ...]:
        """`[identity] members`: the accounts of a closed project (empty: an open one)."""
        identity = self.sections.get("identity", {})
        members = identity.get("members", {}) if isinstance(identity, Mapping) else {}
        return tuple(members) if isinstance(members, Mapping) else ()

    @property
    def ci_accounts(self) -> tuple[str, ...]:
        """`[ci] accounts`: the accounts the project's CI verifies and witnesses as."""
        return tuple(self.sections.get("ci", {}).get("accounts", []))

    @property
    def ci_keys(self) -> Mapping[str, str]:
        """`[ci] keys`: the public key each pinned CI account must hold (a reader that first saw another
        identity for it trusts neither that identity's verdicts nor its witness records)."""
        return dict(self.sections.get("ci", {}).get("keys", {}))

    @property
    def ci_format(self) -> int:
        """`[ci] format`: 1 (no key, older policies): a CI account without a `[ci] keys` pin is trusted on
        first use, with a warning; 2 (what `git agora init` writes): such an account is no CI."""
        return int(self.sections.get("ci", {}).get("format", 1))

    @property
    def unpinned_ci_accounts(self) -> tuple[str, ...]:
        """The `[ci] accounts` whose key `[ci] keys` does not pin."""
        return tuple(a for a in self.ci_accounts if a not in self.ci_keys)

    @property
    def counted_ci_accounts(self) -> tuple[str, ...]:
        """The CI accounts readers count as CI: the pinned ones; under `[ci] format = 2` only those."""
        unpinned = self.unpinned_ci_accounts if self.ci_format >= 2 else ()
        return tuple(a for a in self.ci_accounts if a not in unpinned)

    @property
    def trusted_accounts(self) -> frozenset[str]:
        """Whose verdicts count from the start besides the setup's account: the members and the CI
        accounts readers count (`counted_ci_accounts`)."""
        return frozenset(self.members) | frozenset(self.counted_ci_accounts)

    def unpinned_ci_problem(self) -> str | None:
        """What writers refuse (`init`, a policy amendment): a CI account named without its key."""
        unpinned = self.unpinned_ci_accounts
        if not unpinned:
            return None
        names = ", ".join(unpinned)
        return (
            f"[ci] accounts names {names} without a key: pin each CI account's public key in [ci] keys "
            f'(keys = {{ {unpinned[0]} = "ssh-ed25519 AAAA..." }}, the line of its .pub file; docs/ci.md)'
        )

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
        weights = {**default_weights(), **{k: float(v) for k, v in data.pop("tags", {}).items()}}
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
            comment = {"ucb": UCB_COMMENT, "verdicts": VERDICTS_COMMENT}.get(section, [])
            lines += [""] + comment + [f"[{section}]"]
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
