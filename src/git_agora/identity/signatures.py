"""Verifying Git's SSH commit signatures in process (`sshsig`, about 0.1 ms each), the same check as
`git verify-commit` with an allowed-signers file."""

from __future__ import annotations

from collections.abc import Iterable

SIGNATURE_HEADER = b"gpgsig "


def split_signature(raw: bytes) -> tuple[bytes, bytes | None]:
    """(the signed payload, the armored signature) of a raw commit object; no signature: (raw, None).

    Git signs the commit without its `gpgsig` header (a first line and continuation lines that start
    with a space), so that header is cut out of the payload.
    """
    header_end = raw.find(b"\n\n")
    head = raw if header_end < 0 else raw[: header_end + 1]
    start = head.find(b"\n" + SIGNATURE_HEADER)
    if start < 0:
        return raw, None
    start += 1
    end = start
    lines = []
    while end < len(head):
        newline = head.find(b"\n", end)
        newline = len(head) if newline < 0 else newline
        line = head[end:newline]
        if end != start and not line.startswith(b" "):
            break
        lines.append(line[len(SIGNATURE_HEADER) :] if end == start else line[1:])
        end = newline + 1
    return raw[:start] + raw[end:], b"\n".join(lines) + b"\n"


def verify(payload: bytes, signature: bytes, public_keys: Iterable[str]) -> bool:
    """Whether `signature` signs `payload` in Git's namespace with one of `public_keys` (OpenSSH lines)."""
    import sshsig
    from sshsig.ssh_public_key import PublicKey

    keys = []
    for line in public_keys:
        try:
            keys.append(PublicKey.from_openssh_str(line))
        except (ValueError, NotImplementedError):
            continue
    if not keys:
        return False
    try:
        sshsig.verify(payload, signature, keys, namespace="git")
    except Exception:  # an invalid, unsupported or malformed signature is simply not a valid one
        return False
    return True
