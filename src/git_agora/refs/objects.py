"""Git objects in process, without a library: commits laid out byte for byte as git (and dulwich) write
them, hashed and stored as loose objects the way git stores them, and read back through one
`git cat-file --batch` process.

Publishing writes two small commits, so what matters is the fixed cost: this module imports only
zlib and CPython's SHA-1 (`digests`; dulwich's object store took 15 ms to import, most of a publish's own time).
"""

import os
import zlib
from contextlib import suppress
from typing import NamedTuple

from ..digests import sha1
from .shared import adjust, make_folders

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
SIGNATURE_FIELD = b"gpgsig"


class CommitInfo(NamedTuple):
    sha: str
    tree: str
    parents: tuple[str, ...]
    message: str
    timestamp: int
    author: str
    committer: str = ""


def commit_body(
    tree: str,
    parents: list[str],
    identity: str,
    timestamp: int,
    message: str,
    signature: bytes | None = None,
) -> bytes:
    """A commit object's content: tree, parents, author and committer (`identity`, UTC), `encoding UTF-8`,
    then the signature header when given (each further line of it indented by one space), a blank line
    and the message. Sign `commit_body(...)` without a signature, then pass the signature."""
    person = f"{identity} {timestamp} +0000".encode()
    head = [b"tree " + tree.encode()]
    head += [b"parent " + parent.encode() for parent in parents]
    head += [b"author " + person, b"committer " + person, b"encoding UTF-8"]
    if signature is not None:
        head.append(SIGNATURE_FIELD + b" " + signature.replace(b"\n", b"\n "))
    return b"\n".join(head) + b"\n\n" + message.encode("utf-8")


def object_id(kind: str, body: bytes) -> str:
    return sha1(b"%s %d\0%s" % (kind.encode(), len(body), body)).hexdigest()


def write_loose(objects_dir: str | os.PathLike[str], kind: str, body: bytes, shared: int = 0) -> str:
    """Store an object as git does (zlib-deflated `kind size\\0body` under objects/xx/yyyy..., written to a
    temporary file and renamed into place, read-only, with `core.sharedRepository`'s modes: `shared`);
    an object already there is left alone. Returns its sha."""
    sha = object_id(kind, body)
    folder = os.path.join(objects_dir, sha[:2])
    final = os.path.join(folder, sha[2:])
    if os.path.exists(final):
        return sha
    make_folders(folder, shared)
    temporary = os.path.join(folder, f"tmp_obj_{os.getpid()}_{sha[2:12]}")
    data = zlib.compress(b"%s %d\0%s" % (kind.encode(), len(body), body))
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        adjust(temporary, shared)
        os.replace(temporary, final)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return sha


def parse_commit(sha: str, raw: bytes) -> CommitInfo | None:
    """A commit object's tree, parents, author, commit time and message, or None when it is malformed.

    Read as git reads it: the tree on the first line, the parents on the lines right after it, then
    the first author and committer lines (their times must parse); the message ends at its first NUL
    byte, as git's own readers (`git log`, the index) see it."""
    head, _, body = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    if not lines[0].startswith(b"tree ") or not is_sha(lines[0][5:]):
        return None
    count = next((i for i, line in enumerate(lines[1:]) if not line.startswith(b"parent ")), len(lines) - 1)
    parents = [line[7:] for line in lines[1 : 1 + count]]
    people: dict[bytes, bytes] = {}
    for line in lines[1 + count :]:
        name, _, value = line.partition(b" ")
        if name in (b"author", b"committer"):
            people.setdefault(name, value)
    if not all(map(is_sha, parents)) or len(people) != 2:
        return None
    author, author_time = _person_and_time(people[b"author"])
    committer, commit_time = _person_and_time(people[b"committer"])
    if author_time is None or commit_time is None:
        return None
    return CommitInfo(
        sha=sha,
        tree=lines[0][5:].decode(),
        parents=tuple(p.decode() for p in parents),
        message=body.split(b"\0", 1)[0].decode("utf-8", "replace"),
        timestamp=commit_time,
        author=author.decode("utf-8", "replace"),
        committer=committer.decode("utf-8", "replace"),
    )


def is_sha(value: bytes) -> bool:
    """A full lower-case hex object id, as git writes them."""
    return len(value) == 40 and _HEX.issuperset(value)


_HEX = frozenset(b"0123456789abcdef")


def _person_and_time(value: bytes) -> tuple[bytes, int | None]:
    """`Name <email> 1700000000 +0000` -> (b'Name <email>', 1700000000); no time that parses: None."""
    end = value.rfind(b"> ")
    if end < 0:
        return value, None
    when, _, zone = value[end + 2 :].rpartition(b" ")
    try:
        return value[: end + 1], int(when) if zone[1:].isdigit() and zone[:1] in b"+-" else None
    except ValueError:
        return value[: end + 1], None
