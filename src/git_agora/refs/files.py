"""Refs as git's files backend keeps them (loose files under the common git dir, then `packed-refs`),
read and compare-and-swapped in process with git's own lock-file protocol: `name.lock` is created
exclusively, and renamed over the ref once written. A reftable repository, a symbolic ref or anything
else odd raises `NotPlain`, and the caller asks git instead."""

from __future__ import annotations

import os
import re
from contextlib import suppress

from .shared import adjust, make_folders


class NotPlain(Exception):
    """Only git can read or write this ref here."""


_SHA = re.compile(rb"[0-9a-f]{40}\n?")
_REF_PART = re.compile(r"[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*")


def read_refs(common_dir: str | os.PathLike[str], prefix: str) -> dict[str, str] | None:
    """Ref name -> sha under `prefix` (ending in "/"), read from the files git keeps them in, as `git
    for-each-ref` lists them: loose refs override packed ones, packed-refs' peeled lines are skipped,
    `.lock` files (an update in progress) are not refs. None where only git can tell: a reftable
    repository, a symbolic or unreadable ref, a name git may refuse, a longer hash. At 1,000 loose refs
    this takes 5 ms against 10-25 ms for the git process."""
    if os.path.exists(os.path.join(common_dir, "reftable")):
        return None
    found: dict[str, str] = {}
    if not _read_loose(os.path.join(common_dir, prefix), prefix, found):  # loose first: a concurrent pack-refs moves
        return None  # refs from loose to packed, never back
    try:
        packed = _read_bytes(os.path.join(common_dir, "packed-refs"))
    except FileNotFoundError:
        packed = b""
    except OSError:
        return None
    wanted = prefix.encode()
    for line in packed.splitlines():
        if line.startswith((b"#", b"^")):
            continue
        sha, _, name = line.partition(b" ")
        if name.startswith(wanted):
            parts = name.decode("utf-8", "surrogateescape").split("/")
            if not _SHA.fullmatch(sha) or not all(_REF_PART.fullmatch(p) and not p.endswith(".lock") for p in parts):
                return None
            found.setdefault(name.decode("utf-8", "surrogateescape"), sha.decode())
    return dict(sorted(found.items()))


def _read_loose(folder: str, prefix: str, found: dict[str, str]) -> bool:
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    for entry in entries:
        if entry.name.endswith(".lock"):
            continue
        if not _REF_PART.fullmatch(entry.name) or entry.is_symlink():
            return False
        if entry.is_dir():
            if not _read_loose(entry.path, f"{prefix}{entry.name}/", found):
                return False
            continue
        if not entry.is_file():
            return False
        try:
            fd = os.open(entry.path, os.O_RDONLY)
        except FileNotFoundError:  # deleted (or packed) since the listing
            continue
        except OSError:
            return False
        try:
            content = os.read(fd, 128)
        finally:
            os.close(fd)
        if not _SHA.fullmatch(content):
            return False  # a symbolic ref, or one git would warn about
        found[prefix + entry.name] = content[:40].decode()
    return True


def read_ref(common_dir: str | os.PathLike[str], name: str) -> str | None:
    """The sha ref `name` (a full name, `refs/...`) points at, None when there is no such ref: the loose
    file first, then packed-refs (a concurrent `git pack-refs` moves refs from loose to packed, never
    back)."""
    if os.path.exists(os.path.join(common_dir, "reftable")) or not all(_REF_PART.fullmatch(p) for p in name.split("/")):
        raise NotPlain(name)
    try:
        with open(os.path.join(common_dir, name), "rb") as loose:
            content = loose.read(128)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        content = None
    except OSError:
        raise NotPlain(name) from None
    if content is not None:
        if not _SHA.fullmatch(content):
            raise NotPlain(name)  # a symbolic ref, or one git would warn about
        return content[:40].decode()
    return _packed(common_dir, name)


def _packed(common_dir: str | os.PathLike[str], name: str) -> str | None:
    try:
        packed = _read_bytes(os.path.join(common_dir, "packed-refs"))
    except FileNotFoundError:
        return None
    except OSError:
        raise NotPlain(name) from None
    if not packed.endswith(b"\n"):
        packed += b"\n"
    at = packed.find(b" " + name.encode() + b"\n")  # names hold no spaces: only its own line matches
    if at < 0:
        return None
    sha = packed[packed.rfind(b"\n", 0, at) + 1 : at]
    if not _SHA.fullmatch(sha):
        raise NotPlain(name)
    return sha.decode()


def swap_ref(
    common_dir: str | os.PathLike[str],
    name: str,
    old: str | None,
    new: str,
    unconditional: bool = False,
    shared: int = 0,
) -> bool:
    """Point ref `name` at `new` if it still points at `old` (None: only if there is no such ref), or
    whatever it points at when `unconditional`. False when it points elsewhere or another process holds
    its lock (a lost race: the caller rereads and retries). `shared`: `core.sharedRepository`'s modes."""
    current = read_ref(common_dir, name)  # raises NotPlain before any lock is taken
    if not unconditional and current != old:
        return False
    path = os.path.join(common_dir, name)
    lock = path + ".lock"
    make_folders(os.path.dirname(path), shared)
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    done = False
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(new.encode() + b"\n")
        adjust(lock, shared)
        if unconditional or read_ref(common_dir, name) == old:  # read again under the lock
            os.replace(lock, path)
            done = True
        return done
    finally:
        if not done:
            with suppress(FileNotFoundError):
                os.unlink(lock)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()
