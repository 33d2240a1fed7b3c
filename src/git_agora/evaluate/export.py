"""A tree written out from its blobs, for evaluation: exactly the bytes Git stores.

No checkout runs, so no `.gitattributes` (`working-tree-encoding`, `eol`, filters), hook or config of
any clone applies. The policy's protected files replace the tree's own. A path Git itself would refuse
(a `.git` component in any case, a `.gitmodules` symbolic link, `..`, an empty or odd name) or a path
that runs through a symbolic link the tree also holds is refused with the path, never written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ..contribution import DOTGIT_REASON, dotgit_component, dotgitmodules_link
from ..refs.store import Repository

SYMLINK, GITLINK, EXECUTABLE = "120000", "160000", "100755"


class ExportError(ValueError):
    """The tree cannot be written out safely (the message names the path)."""


def check_path(path: str, mode: str = "") -> None:
    if not path or path.startswith("/") or "\0" in path:
        raise ExportError(f"the tree holds a path that cannot be written ({path!r})")
    if dotgit_component(path) or (mode == SYMLINK and dotgitmodules_link(path.rpartition("/")[2])):
        raise ExportError(f"the tree holds {path!r}: {DOTGIT_REASON}")
    if any(name in ("", ".", "..") for name in path.split("/")):
        raise ExportError(f"the tree holds {path!r}: an empty, '.' or '..' path component")


def tree_entries(repo: Repository, tree: str, paths: list[str] | None = None) -> dict[str, tuple[str, str]]:
    """path -> (mode, object id) of every file of `tree` (recursively), or of `paths` only."""
    out = repo.git.run_bytes("ls-tree", "-r", "-z", "--full-tree", tree, *(["--", *paths] if paths else []))
    entries: dict[str, tuple[str, str]] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        head, _, name = record.partition(b"\t")
        mode, _kind, oid = head.decode().split()
        path = name.decode("utf-8", "surrogateescape")
        if path in entries:
            raise ExportError(f"the tree lists {path!r} twice")
        entries[path] = (mode, oid)
    return entries


def export_tree(
    repo: Repository,
    tree: str | None,
    dest: str,
    replace: Mapping[str, tuple[str, str]] | None = None,
    removed: Iterable[str] = (),
    max_bytes: int | None = None,
) -> dict[str, str]:
    """Write `tree` (None: nothing) into the empty folder `dest`, without its entries at or under
    `removed` and with `replace` (path -> (mode, object id)) added. Returns path -> object id of what
    was written. Raises ExportError for an unsafe tree or one larger than `max_bytes`."""
    entries = tree_entries(repo, tree) if tree else {}
    gone = [path.strip("/") for path in [*removed, *(replace or {})]]
    if gone:
        entries = {
            path: entry
            for path, entry in entries.items()
            if not any(path == g or path.startswith(g + "/") for g in gone)
        }
    entries.update(replace or {})
    for path, (mode, _) in entries.items():
        check_path(path, mode)
    links = {path for path, (mode, _) in entries.items() if mode == SYMLINK}
    for path in entries:
        parts = path.split("/")
        for end in range(1, len(parts)):
            if "/".join(parts[:end]) in links:
                raise ExportError(f"the tree holds {path!r} under the symbolic link {'/'.join(parts[:end])!r}")
    if os.listdir(dest):
        raise ExportError(f"{dest} is not empty")
    os.chmod(dest, 0o755)
    files = sorted(path for path, (mode, _) in entries.items() if mode not in (SYMLINK, GITLINK))
    written = 0
    try:
        for start in range(0, len(files), _BATCH):
            batch = files[start : start + _BATCH]
            for path, body in zip(batch, _blobs(repo, [entries[path][1] for path in batch], batch)):
                written += len(body)
                if max_bytes is not None and written > max_bytes:
                    raise ExportError(f"the tree is larger than the evaluation's disk limit ({max_bytes} bytes)")
                _write(dest, path, body, 0o755 if entries[path][0] == EXECUTABLE else 0o644)
        for path in sorted(p for p, (mode, _) in entries.items() if mode == GITLINK):
            make_folders(dest, path)
        targets = sorted(links)
        for path, body in zip(targets, _blobs(repo, [entries[path][1] for path in targets], targets)):
            _make_parents(dest, path)
            os.symlink(os.fsdecode(body), os.path.join(dest, path))
    except OSError as exc:
        raise ExportError(f"the tree cannot be written out ({exc.strerror}: {exc.filename})") from None
    return {path: oid for path, (_, oid) in entries.items()}


_BATCH = 256  # blobs asked of git at once (a tree's files are never all held in memory)


def _blobs(repo: Repository, oids: list[str], paths: list[str]) -> list[bytes]:
    found = []
    for path, (kind, body) in zip(paths, repo.objects.objects(oids)):
        if kind != b"blob" or body is None:
            raise ExportError(f"{path!r} is not a blob in this repository")
        found.append(body)
    return found


def make_folders(top: str, relative: str) -> None:
    """`top/relative` and the folders between, each 0755 whatever the umask (the sandbox's user must
    read them)."""
    path = top
    for name in relative.split("/"):
        path = os.path.join(path, name)
        if not os.path.isdir(path) or os.path.islink(path):
            os.mkdir(path)
            os.chmod(path, 0o755)


def _make_parents(dest: str, path: str) -> None:
    folder = os.path.dirname(path)
    if folder:
        make_folders(dest, folder)


def _write(dest: str, path: str, body: bytes, mode: int) -> None:
    _make_parents(dest, path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(os.path.join(dest, path), flags, mode)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
