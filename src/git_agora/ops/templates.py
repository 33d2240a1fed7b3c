"""Templates for `git agora init --template NAME`: ready project layouts that ship with the package
(`git_agora/templates/NAME/`), each an offline task sized for a CPU, with its `agora.toml` and
`program.md`.

`copy_template` writes a template's files into a work tree, refusing (in one line, writing nothing) a
name it does not know and a file that is already there; `init_project` then proceeds as it does with
any `agora.toml`, and undoes the copy if it fails before publishing.

Two conventions of a template's files: `gitignore` is written as `.gitignore` (lines already in an
existing `.gitignore` are kept, the template's missing ones appended), and a pin written as
`"installed"` (`pins = { numpy = "installed" }`) becomes the digest of that package as installed
here: the founder's scorer is the project's (`evaluate.identity.package_identity`).
"""

from __future__ import annotations

import contextlib
import platform
import re
from dataclasses import dataclass, field
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from ..config import CONFIG_FILE
from ..errors import AgoraError

TEMPLATES = "templates"
RENAMED = {"gitignore": ".gitignore"}  # package data leaves dotfiles out
MERGED = ".gitignore"  # the one file a template adds to instead of refusing
INSTALLED = "installed"  # a pin to resolve at copy time


def template_names() -> tuple[str, ...]:
    """The templates this installation ships, sorted."""
    root = files("git_agora").joinpath(TEMPLATES)
    return tuple(sorted(e.name for e in root.iterdir() if e.is_dir() and not e.name.startswith(("_", "."))))


def template_files(name: str) -> dict[str, bytes]:
    """path (relative, as written into the work tree) -> content, for the template `name`."""
    names = template_names()
    if name not in names:
        raise AgoraError(f"there is no template {name!r}: choose one of {', '.join(names)}")
    found: dict[str, bytes] = {}
    _walk(files("git_agora").joinpath(TEMPLATES, name), "", found)
    return found


def _walk(folder: Traversable, prefix: str, found: dict[str, bytes]) -> None:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name == "__pycache__" or entry.name.endswith(".pyc"):  # what installing the package compiled
            continue
        if entry.is_dir():
            _walk(entry, f"{prefix}{entry.name}/", found)
        else:
            found[prefix + RENAMED.get(entry.name, entry.name)] = entry.read_bytes()


@dataclass
class Copied:
    """What `copy_template` wrote, so that a failed `init` can take it back."""

    root: Path
    written: list[str] = field(default_factory=list)  # paths it created
    folders: list[str] = field(default_factory=list)  # folders it created
    merged: dict[str, bytes] = field(default_factory=dict)  # path -> its content before the merge

    def undo(self) -> None:
        for path in self.written:
            (self.root / path).unlink(missing_ok=True)
        for path, before in self.merged.items():
            (self.root / path).write_bytes(before)
        for path in reversed(self.folders):
            with contextlib.suppress(OSError):
                (self.root / path).rmdir()


def copy_template(name: str, root: Path) -> Copied:
    """Write the template `name` into the work tree `root`. Nothing is written when the template does
    not exist, when one of its files is already there (`.gitignore` aside: it is merged) or when a pin
    cannot be resolved."""
    contents = template_files(name)
    if CONFIG_FILE in contents:
        contents[CONFIG_FILE] = resolve_pins(contents[CONFIG_FILE].decode()).encode()
    clashes = [path for path in contents if _taken(root, path)]
    if clashes:
        raise AgoraError(
            f"the template {name} would overwrite {', '.join(sorted(clashes))}: "
            "move them away, or start from an empty folder"
        )
    copied = Copied(root)
    try:
        for path, data in contents.items():
            target = root / path
            for parent in reversed(Path(path).parents[:-1]):
                if not (root / parent).is_dir():
                    (root / parent).mkdir()
                    copied.folders.append(str(parent))
            if path == MERGED and target.is_file():
                before = target.read_bytes()
                missing = [line for line in data.splitlines() if line not in before.splitlines()]
                if missing:
                    copied.merged[path] = before
                    newline = b"" if not before or before.endswith(b"\n") else b"\n"
                    target.write_bytes(before + newline + b"\n".join(missing) + b"\n")
                continue
            target.write_bytes(data)
            copied.written.append(path)
    except OSError as exc:
        copied.undo()
        raise AgoraError(f"could not write the template {name}: {exc}") from None
    return copied


def _taken(root: Path, path: str) -> bool:
    """Whether writing `path` would replace something: the file itself, or a parent that is not a folder."""
    target = root / path
    if path == MERGED and target.is_file() and not target.is_symlink():
        return False  # merged, not replaced
    if target.exists() or target.is_symlink():
        return True
    return any((root / p).exists() and not (root / p).is_dir() for p in Path(path).parents[:-1])


def resolve_pins(text: str) -> str:
    """`text` (an agora.toml) with each pin written `"installed"` replaced by that package's digest
    as installed here; refused when the package is not installed."""
    import tomllib

    from ..evaluate.identity import package_identity

    pins = tomllib.loads(text).get("eval", {}).get("pins", {})
    for package, value in pins.items():
        if value != INSTALLED:
            continue
        digest = package_identity(package)["sha256"]
        if digest is None:
            raise AgoraError(f"the template scores with {package}, which is not installed here: install it first")
        pattern = rf'(?m)^(pins\s*=.*?[{{,]\s*"?{re.escape(package)}"?\s*=\s*)"{INSTALLED}"'
        text = re.sub(pattern, rf'\g<1>"{digest}"', text, count=1)  # a digest is hex: nothing to escape
    if tomllib.loads(text).get("eval", {}).get("python") == INSTALLED:  # the founder's interpreter is the CI's
        running = ".".join(platform.python_version_tuple()[:2])
        text = re.sub(rf'(?m)^(python\s*=\s*)"{INSTALLED}"', rf'\g<1>"{running}"', text, count=1)
    return text
