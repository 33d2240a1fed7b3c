"""The scorer's environment as the policy records it (`[eval] format = 3`: `python` and `lock`), and the
check `git agora ci` makes of the running one before it reruns anything (docs/ci.md, "The scorer's
environment").

The lock is pip's hash-checking requirements format: one `name==version` a package, each with its
`--hash=sha256:...` options (continued with backslashes), comments and blank lines aside; the CI's recipe
installs it with `pip install --require-hashes -r LOCK` under the policy's Python. `environment_problem`
compares what runs here with it: the interpreter's version and each locked package's installed version
(the wheels' hashes are pip's to check as it installs; `[eval] pins` check the installed files).
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from importlib import metadata

from ..errors import AgoraError, ExitCode

_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
_HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}$")


def parse_lock(text: str, where: str = "the lock") -> dict[str, str]:
    """package (normalised) -> version, from a hash-pinned requirements file; AgoraError on a line
    that is not `name==version` with at least one sha256 hash."""
    locked: dict[str, str] = {}
    joined = re.sub(r"\\\r?\n", " ", text)
    for number, line in enumerate(joined.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        found = _REQUIREMENT.match(words[0])
        hashes = words[1:]
        if found is None or not hashes or not all(_HASH.match(h) for h in hashes):
            raise AgoraError(f"{where}, line {number}: not `name==version --hash=sha256:...` (pip --require-hashes)")
        locked[normalise(found.group(1))] = found.group(2)
    if not locked:
        raise AgoraError(f"{where} names no package")
    return locked


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def environment_problem(spec, lock_text: str | None, python: str | None = None) -> str | None:
    """Why this interpreter and its packages are not the scorer environment `spec` (an `EvalSpec`)
    records, or None. `python`: the running version (default: this interpreter's)."""
    running = python or platform.python_version()
    if spec.python is not None and running != spec.python and not running.startswith(spec.python + "."):
        return f"Python {running} runs here, the policy's scorer runs under {spec.python}"
    if spec.lock is None:
        return None
    if lock_text is None:
        return f"the policy's lock {spec.lock} is not in its tree"
    locked = parse_lock(lock_text, spec.lock)
    unlocked = sorted(n for n in spec.scorer if normalise(n) not in locked)
    if unlocked:
        return f"the lock {spec.lock} does not name the scorer package {unlocked[0]}"
    for name, version in sorted(locked.items()):
        found = installed_version(name)
        if found != version:
            state = f"{found} is installed" if found else "is not installed"
            return f"{name} {state} here, the lock {spec.lock} has {version}"
    return None


def _lock_text(project, spec, contributions) -> str | None:
    """The current policy's lock file, or None (no lock named, or none in its tree)."""
    import pyarrow.compute as pc

    from .standing import current_policy

    if spec.lock is None:
        return None
    valid = contributions.filter(pc.fill_null(contributions["valid"], False))
    commit = project.repo.commit_info(current_policy(project.setup, valid))
    return (project.repo.file_text(commit.tree, spec.lock) or None) if commit else None


@dataclass(frozen=True)
class PolicyEnvironment:
    """The scorer's environment as the current policy records it, for the CI's recipes."""

    python: str | None  # [eval] python
    lock: str | None  # [eval] lock: its path in the policy's tree
    lock_text: str | None  # that file's text (checked: pip's hash-checking format)
    accounts: tuple[str, ...]  # [ci] accounts


def policy_environment(project) -> PolicyEnvironment:
    """The current policy's scorer Python, lock and CI accounts (`git agora ci --init` writes its recipe
    from them); AgoraError when the lock it names is missing or not hash-pinned."""
    from .indexing import FRAME_COLUMNS, load
    from .standing import root_and_config

    contributions = load(project, FRAME_COLUMNS).contributions
    _, config = root_and_config(project, contributions)
    spec = config.evaluation
    text = _lock_text(project, spec, contributions)
    if spec.lock is not None:
        if text is None:
            raise AgoraError(f"the policy's lock {spec.lock} is not in its tree")
        parse_lock(text, spec.lock)
    return PolicyEnvironment(spec.python, spec.lock, text, tuple(config.ci_accounts))


def check_scorer_environment(project, config, contributions) -> None:
    """Exit 4 (`ExitCode.UNVERIFIED`) with one line when the running scorer environment is not the
    current policy's (`config`, the current policy's: `ops.standing.root_and_config`)."""
    spec = config.evaluation
    if spec.python is None and spec.lock is None:
        return
    text = _lock_text(project, spec, contributions)
    try:
        problem = environment_problem(spec, text)
    except AgoraError as exc:
        problem = str(exc)
    if problem is not None:
        how = f"python{spec.python or ''} -m pip install --require-hashes -r {spec.lock}" if spec.lock else ""
        fix = f"install it ({how}) or" if how else "run under that Python, or"
        raise AgoraError(
            f"the scorer environment here is not the policy's: {problem}: {fix} the project's owner "
            "amends the policy; nothing was rerun",
            ExitCode.UNVERIFIED,
        )
