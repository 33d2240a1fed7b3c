"""`install_hook`: put git-agora's pre-receive hook into a bare repository (see `git_agora.hook`)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from ..errors import AgoraError

HOOK = """#!/bin/sh
# git-agora pre-receive hook: logs only move forward; contributions are valid; see `git agora hook`.
exec {python} -m git_agora.hook
"""


def install_hook(repository: Path, force: bool = False) -> Path:
    """Write `hooks/pre-receive` of the bare repository `repository`, running this installation's
    Python; an existing hook that is not ours is kept unless `force`."""
    probe = subprocess.run(
        ["git", "-C", str(repository), "rev-parse", "--is-bare-repository", "--git-dir"], capture_output=True, text=True
    )
    lines = probe.stdout.split()
    if probe.returncode != 0 or lines[:1] != ["true"]:
        raise AgoraError(f"{repository} is not a bare Git repository (the server side of a project)")
    hook = (repository / lines[1] if not Path(lines[1]).is_absolute() else Path(lines[1])) / "hooks" / "pre-receive"
    if hook.exists() and "git-agora" not in hook.read_text(errors="replace") and not force:
        raise AgoraError(f"{hook} exists and is not git-agora's: move it away or pass --force")
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(HOOK.format(python=shlex.quote(sys.executable)))
    hook.chmod(0o755)
    return hook
