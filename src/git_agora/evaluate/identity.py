"""The evaluator identity: what a score depends on besides the contribution.

The commands, the evaluator files (path -> Git blob id) and the scorer packages (version and a digest
of their Python files); `sha256` digests all of it. An evaluation computes it from what actually
scored: the files as written into the score folder and the packages as installed at scoring time, so a
build that edited a scorer (possible only unsandboxed) shows as another evaluator. `policy_identity`
gives the same digest from the policy's blobs, for comparing a recorded claim with today's evaluator.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from ..digests import sha1
from ..errors import AgoraError
from .export import tree_entries


def evaluator_identity(spec, files: Mapping[str, str]) -> dict[str, Any]:
    """The identity of `spec` (an `EvalSpec`) with these evaluator files, and its scorer packages as
    installed now."""
    commands = {k: v for k, v in (("command", spec.command), ("build", spec.build), ("score", spec.score)) if v}
    identity: dict[str, Any] = {
        "commands": commands,
        "files": dict(sorted(files.items())),
        "scorer": {name: package_identity(name) for name in spec.scorer},
    }
    identity["sha256"] = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return identity


def policy_identity(repo, policy) -> dict[str, Any]:
    """The identity a policy's evaluator has here today: its files' blobs (a folder's files one by
    one, as an evaluation writes them) and the scorer packages as installed."""

    entries = tree_entries(repo, policy.tree, list(policy.protected)) if policy.protected else {}
    files = {path: entries[path][1] for path in evaluator_paths(entries, policy)}
    return evaluator_identity(policy.config.evaluation, files)


def evaluator_paths(entries: Mapping[str, Any], policy) -> list[str]:
    """The files among `entries` (path -> ...) that are evaluator files of `policy` (agora.toml is
    the policy's, not the evaluator's)."""
    roots = list(policy.evaluator_files)
    return sorted(p for p in entries if any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots))


def files_identity(folder: str, paths) -> dict[str, str]:
    """path -> Git blob id of each of `paths` as it lies in `folder` (a missing file: "missing")."""
    found = {}
    for path in paths:
        try:
            with open(os.path.join(folder, path), "rb") as handle:
                data = handle.read()
        except OSError:
            found[path] = "missing"
            continue
        found[path] = sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return found


def package_identity(name: str) -> dict[str, str | None]:
    """An installed package's version and a digest of its Python files (None when not installed).
    The files are found through the import system, so editable installs are covered too."""

    module = name.replace("-", "_")
    distribution = (metadata.packages_distributions().get(module) or [name])[0]
    try:
        version: str | None = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        version = None
    spec = importlib.util.find_spec(module)
    if spec is None:
        return {"version": version, "sha256": None}
    roots = [Path(p) for p in spec.submodule_search_locations or []] or [Path(spec.origin or "")]
    digest = hashlib.sha256()
    for root in roots:
        for file in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            digest.update(str(file.relative_to(root.parent)).encode() + b"\0" + file.read_bytes())
    return {"version": version, "sha256": digest.hexdigest()}


def check_pins(spec, identity: Mapping[str, Any]) -> None:
    """Refuse to score with a scorer package that differs from the one the setup pins (`[eval] pins`)."""
    for name, pinned in spec.pins.items():
        installed = identity["scorer"].get(name) or {}
        found = installed.get("sha256")
        if found != pinned:
            raise AgoraError(
                f"the installed {name} differs from the project's (pinned {pinned[:12]}, installed "
                f"{found[:12] if found else 'nothing'}): "
                f"reinstall it, or the project's owner publishes an amendment"
            )
