"""`core.sharedRepository`: the permissions git gives the files and folders it creates in a repository
that a group (or everybody) shares, applied the same way to the objects and refs written in process."""

from __future__ import annotations

import contextlib
import os

GROUP, EVERYBODY = 0o660, 0o664


def shared_permission(value: str | None) -> int:
    """git's reading of the setting: 0 for the umask alone, GROUP or EVERYBODY as bits to add, or a
    negative octal mode to impose (`0640`, ...)."""
    word = (value or "").strip().lower()
    if word in ("", "umask", "false", "no", "off", "0"):
        return 0
    if word in ("group", "true", "yes", "on", "1"):
        return GROUP
    if word in ("all", "world", "everybody", "2"):
        return EVERYBODY
    try:
        mode = int(word, 8)
    except ValueError:
        return 0  # git refuses such a setting; writing with the umask alone is the safe reading
    return -((mode & 0o666) | 0o600)


def adjust(path: str | os.PathLike[str], shared: int, folder: bool = False) -> None:
    """Give `path` the mode git would (calc_shared_perm and adjust_shared_perm in git's path.c)."""
    if shared == 0:
        return
    mode = os.stat(path).st_mode
    tweak = -shared if shared < 0 else shared
    if not mode & 0o200:
        tweak &= ~0o222  # a read-only file stays read-only
    new = (mode & ~0o777) | tweak if shared < 0 else mode | tweak
    if folder:
        new |= (new & 0o444) >> 2  # searchable by whoever may read it
        new |= 0o2000  # new entries keep the group
    if new & 0o7777 != mode & 0o7777:
        os.chmod(path, new & 0o7777)


def make_folders(folder: str | os.PathLike[str], shared: int) -> None:
    """Create `folder` and any missing parents, each with the shared mode."""
    missing = []
    path = os.fspath(folder)
    while not os.path.exists(path):
        missing.append(path)
        path = os.path.dirname(path) or os.curdir
    for created in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            os.mkdir(created)
        adjust(created, shared, folder=True)
