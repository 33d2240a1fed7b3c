"""Git's SSH signatures written in process: the armored SSHSIG blob (OpenSSH's PROTOCOL.sshsig) that
`ssh-keygen -Y sign -n git` prints and `git commit -S` stores with `gpg.format=ssh`, byte for byte
(ed25519 signatures are deterministic).

Only unencrypted ed25519 keys in OpenSSH's own file format are read here; for anything else
(a passphrase, another key type, a key held by an agent) `load_ed25519` returns None and the caller
signs with ssh-keygen instead. Loading a key costs a file read and signing about 0.1 ms, against two
ssh-keygen processes per contribution (the commit and its log entry).
"""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Callable

from ..digests import sha512

MAGIC = b"openssh-key-v1\0"
KEY_TYPE = b"ssh-ed25519"
HASH = b"sha512"
ARMOR_BEGIN = b"-----BEGIN SSH SIGNATURE-----"
ARMOR_END = b"-----END SSH SIGNATURE-----"


def ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def armored_signature(
    public_blob: bytes, sign: Callable[[bytes], bytes], payload: bytes, namespace: bytes = b"git"
) -> bytes:
    """The armored SSHSIG of `payload` by the ed25519 key whose public blob (`ssh-ed25519` + raw key, as
    in a `.pub` line) is `public_blob`; `sign` makes the raw ed25519 signature of the bytes it gets."""
    digest = sha512(payload).digest()
    signed = b"SSHSIG" + ssh_string(namespace) + ssh_string(b"") + ssh_string(HASH) + ssh_string(digest)
    signature = ssh_string(KEY_TYPE) + ssh_string(sign(signed))
    blob = (
        b"SSHSIG"
        + struct.pack(">I", 1)
        + ssh_string(public_blob)
        + ssh_string(namespace)
        + ssh_string(b"")
        + ssh_string(HASH)
        + ssh_string(signature)
    )
    text = base64.b64encode(blob)
    lines = [text[i : i + 70] for i in range(0, len(text), 70)]
    return ARMOR_BEGIN + b"\n" + b"\n".join(lines) + b"\n" + ARMOR_END + b"\n"


class Ed25519Key:
    """An ed25519 private key and its public blob; `sign` returns the armored SSHSIG."""

    def __init__(self, seed: bytes, public_blob: bytes):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self.private = Ed25519PrivateKey.from_private_bytes(seed)
        self.public_blob = public_blob

    def sign(self, payload: bytes, namespace: bytes = b"git") -> bytes:
        return armored_signature(self.public_blob, self.private.sign, payload, namespace)


def load_ed25519(path: str | os.PathLike[str]) -> Ed25519Key | None:
    """The key in `path` when it is an unencrypted OpenSSH ed25519 private key that ssh-keygen would use
    as it is (owned by us and not readable by others); None otherwise (the caller asks ssh-keygen, which
    also gives the reason when it refuses)."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if info.st_uid == os.getuid() and info.st_mode & 0o077:
                return None  # ssh-keygen refuses a private key others can read: let it say so
            text = f.read(1 << 16)
    except OSError:
        return None
    return parse_private_key(text)


def parse_private_key(text: bytes) -> Ed25519Key | None:
    """The key of an unencrypted OpenSSH ed25519 private key file's text; None for anything else."""
    try:
        return _parse(text)
    except (ValueError, struct.error, IndexError, ImportError):
        return None


def _parse(text: bytes) -> Ed25519Key | None:
    lines = text.strip().splitlines()
    if not lines or lines[0].strip() != b"-----BEGIN OPENSSH PRIVATE KEY-----":
        return None
    if lines[-1].strip() != b"-----END OPENSSH PRIVATE KEY-----":
        return None
    data = base64.b64decode(b"".join(line.strip() for line in lines[1:-1]), validate=True)
    if not data.startswith(MAGIC):
        return None
    reader = _Reader(data[len(MAGIC) :])
    cipher, kdf, _options = reader.string(), reader.string(), reader.string()
    if cipher != b"none" or kdf != b"none" or reader.uint32() != 1:
        return None  # encrypted (or several keys): ssh-keygen asks for the passphrase
    public_blob = reader.string()
    private = _Reader(reader.string())
    if private.uint32() != private.uint32():
        return None
    if private.string() != KEY_TYPE:
        return None
    public, secret = private.string(), private.string()
    if len(public) != 32 or len(secret) != 64 or secret[32:] != public:
        return None
    if public_blob != ssh_string(KEY_TYPE) + ssh_string(public):
        return None
    key = Ed25519Key(secret[:32], public_blob)
    if key.private.public_key().public_bytes_raw() != public:
        return None  # a corrupt file: never sign with a key other than the one it announces
    return key


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def uint32(self) -> int:
        (value,) = struct.unpack_from(">I", self.data, self.at)
        self.at += 4
        return value

    def string(self) -> bytes:
        size = self.uint32()
        if self.at + size > len(self.data):
            raise ValueError("truncated")
        value = self.data[self.at : self.at + size]
        self.at += size
        return value
