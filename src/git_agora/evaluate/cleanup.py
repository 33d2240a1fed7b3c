"""Removing what an evaluation left: a tree of any depth, width, name or type, never raising.

A build chooses what its folders hold (unsandboxed, anything it can make as you), so the removal walks
with an explicit stack and one open folder at a time, each entry named relative to its folder's file
descriptor: no recursion to run out of, no path longer than one name, no symbolic link followed. A
folder of ours that cannot be read or changed (mode 000) is made u+rwx before it is entered; fifos,
sockets, devices and links are unlinked like files; another file system mounted inside is left alone.
What cannot be removed (an immutable file, `chattr +i`) is reported, not raised.
"""

from __future__ import annotations

import contextlib
import os
import stat

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_PATH = getattr(os, "O_PATH", 0) | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class _Folder:
    """One folder on the way down: its name in its parent, its identity, the subfolders left to do."""

    __slots__ = ("name", "dev", "ino", "pending", "kept")

    def __init__(self, name: str, st: os.stat_result):
        self.name, self.dev, self.ino = name, st.st_dev, st.st_ino
        self.pending: list[str] | None = None  # None: not listed yet
        self.kept = False  # something under it stays: it cannot be removed, and that is said once


def remove_tree(path: str) -> list[str]:
    """Remove `path` (a folder or any other entry) and everything under it; returns what could not
    be removed, one line each (`path: why`), [] when all is gone (or was never there)."""
    top = os.path.abspath(path)
    parent, name = os.path.split(top)
    problems: list[str] = []
    try:
        parent_fd = os.open(parent, _DIR)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"{parent}: {exc.strerror}"]
    try:
        try:
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            return []
        if stat.S_ISDIR(st.st_mode):
            _remove_folder(parent_fd, name, top, problems)
        elif (failed := _unlink(parent_fd, name)) is not None:
            problems.append(f"{top}: {failed.strerror}")
    except OSError as exc:
        problems.append(f"{top}: {exc.strerror}")
    finally:
        os.close(parent_fd)
    return problems


def _remove_folder(parent_fd: int, name: str, top: str, problems: list[str]) -> None:
    fd = _open_folder(parent_fd, name)
    stack = [_Folder(name, os.fstat(fd))]
    try:
        while stack:
            folder = stack[-1]
            if folder.pending is None:
                folder.pending = _clear(fd, top, stack, problems)
            if folder.pending:
                child = folder.pending.pop()
                try:
                    child_fd = _open_folder(fd, child)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    problems.append(f"{_shown(top, stack, child)}: {exc.strerror}")
                    folder.kept = True
                    continue
                child_st = os.fstat(child_fd)
                if child_st.st_dev != folder.dev:  # a mount point: its file system is not ours to empty
                    os.close(child_fd)
                    problems.append(f"{_shown(top, stack, child)}: another file system is mounted there")
                    folder.kept = True
                    continue
                os.close(fd)
                fd = child_fd
                stack.append(_Folder(child, child_st))
                continue
            stack.pop()
            if stack:  # back up by "..", checked to be the folder we came down from
                up = os.open("..", _DIR, dir_fd=fd)
                os.close(fd)
                fd = up
                above = os.fstat(fd)
                if (above.st_dev, above.st_ino) != (stack[-1].dev, stack[-1].ino):
                    problems.append(f"{_shown(top, stack)}: moved while it was removed; left as it is")
                    return
                container = fd
            else:
                os.close(fd)
                fd = -1
                container = parent_fd
            if folder.kept:
                if stack:
                    stack[-1].kept = True
                continue
            try:
                os.rmdir(folder.name, dir_fd=container)
            except FileNotFoundError:
                pass
            except OSError as exc:
                problems.append(f"{_shown(top, stack, folder.name)}: {exc.strerror}")
                if stack:
                    stack[-1].kept = True
    finally:
        if fd >= 0:
            os.close(fd)


def _open_folder(parent_fd: int, name: str) -> int:
    """The folder `name` (never a link to one), opened for listing, and made u+rwx if it was not."""
    try:
        fd = os.open(name, _DIR, dir_fd=parent_fd)
    except PermissionError as refused:  # ours but unreadable: its mode fixed through a handle that follows no link
        handle = os.open(name, _PATH, dir_fd=parent_fd)
        try:
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(os.fstat(handle).st_mode) | 0o700)
        except OSError:
            raise refused from None
        finally:
            os.close(handle)
        fd = os.open(name, _DIR, dir_fd=parent_fd)
    mode = os.fstat(fd).st_mode
    if mode & 0o700 != 0o700:
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(mode) | 0o700)
    return fd


def _clear(fd: int, top: str, stack: list[_Folder], problems: list[str]) -> list[str]:
    """Unlink every entry of the open folder (the stack's last) that is not a folder; returns the
    subfolders' names."""
    folder = stack[-1]
    try:
        names = os.listdir(fd)
    except OSError as exc:
        problems.append(f"{_shown(top, stack)}: {exc.strerror}")
        folder.kept = True
        return []
    folders = []
    for name in names:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{_shown(top, stack, name)}: {exc.strerror}")
            folder.kept = True
            continue
        if stat.S_ISDIR(st.st_mode):
            folders.append(name)
        elif (failed := _unlink(fd, name)) is not None:
            problems.append(f"{_shown(top, stack, name)}: {failed.strerror}")
            folder.kept = True
    return folders


def _unlink(fd: int, name: str) -> OSError | None:
    """None once `name` is gone from the open folder; else why it stays."""
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return exc
    return None


def _shown(top: str, stack: list[_Folder], name: str | None = None) -> str:
    """A path to name in a report: the top, and the last folders when the tree is deep."""
    parts = [folder.name for folder in stack[1:]] + ([name] if name is not None else [])
    if len(parts) > 4:
        parts = [f"... {len(parts) - 3} folders ...", *parts[-3:]]
    shown = os.path.join(top, *parts) if parts else top
    return shown.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
