"""SHA-1 (object ids) and SHA-512 (SSH signatures) from CPython's own hash modules: hashlib loads
OpenSSL first, 2 ms of a `git agora post` that hashes a few hundred bytes. Another Python gets hashlib's."""

from __future__ import annotations

try:
    from _sha1 import sha1
    from _sha512 import sha512
except ImportError:  # pragma: no cover (not CPython)
    from hashlib import sha1, sha512

__all__ = ["sha1", "sha512"]
