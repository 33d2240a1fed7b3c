"""An account's SSH signing key: `git config agora.signingkey` (a private key file), else one made on
first use under the user's config directory (`~/.config/git-agora/keys/<account>_ed25519`)."""

import base64
import os
import subprocess
from contextlib import suppress
from typing import TYPE_CHECKING, NamedTuple

from ..errors import AgoraError
from ..refs.store import Repository

if TYPE_CHECKING:
    from .ssh_sign import Ed25519Key

KEY_CONFIG = "agora.signingkey"


class SigningKey(NamedTuple):
    """A private key file and its public line (`ssh-ed25519 AAAA... comment`); signs exactly as
    `git commit -S` does with `gpg.format=ssh`: in process for an unencrypted ed25519 key
    (`ssh_sign`), else with ssh-keygen (a passphrase, another key type, a key in an agent)."""

    path: str | os.PathLike[str]
    public: str
    held: "Ed25519Key | None" = None  # a key held in memory only (`held_key`: a CI secret), never in a file

    def sign(self, payload: bytes) -> bytes:
        from .ssh_sign import load_ed25519

        if self.held is not None:
            return self.held.sign(payload)
        key = load_ed25519(self.path)  # read at each signature: a rotation may replace the file
        if key is not None:
            return key.sign(payload)
        return self.sign_with_ssh_keygen(payload)

    def sign_with_ssh_keygen(self, payload: bytes) -> bytes:
        require_ssh_keygen()
        proc = subprocess.run(
            ["ssh-keygen", "-Y", "sign", "-q", "-f", str(self.path), "-n", "git"], input=payload, capture_output=True
        )
        if proc.returncode != 0 or b"BEGIN SSH SIGNATURE" not in proc.stdout:
            reason = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no signature"]
            raise AgoraError(f"could not sign with {self.path}: {reason[0]}")
        return proc.stdout


def held_key(text: str, source: str) -> SigningKey:
    """The key in `text` (an unencrypted OpenSSH ed25519 private key, as a CI secret holds it), kept in
    memory: nothing is written to disk, so no evaluation can read it. `source` names it in messages."""
    from .ssh_sign import parse_private_key

    key = parse_private_key(text.strip().encode())
    if key is None:
        raise AgoraError(
            f"{source} is not an unencrypted OpenSSH ed25519 private key (make one with "
            "ssh-keygen -t ed25519 -N '' -f FILE and store the file's text)"
        )
    return SigningKey(source, "ssh-ed25519 " + base64.b64encode(key.public_blob).decode(), key)


def default_key_path(account: str) -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "git-agora", "keys", f"{account}_ed25519")


def signing_key(repo: Repository, account: str, notice=None) -> SigningKey:
    """The account's key: the configured one, else the default one, created when missing (and said so)."""
    configured = repo.git.config_get(KEY_CONFIG)
    path = os.path.expanduser(configured) if configured else default_key_path(account)
    if configured and not os.path.isfile(path):
        raise AgoraError(f"the signing key {path} (git config {KEY_CONFIG}) does not exist or is not a file")
    if not os.path.exists(path) and create_key(path, account) and notice is not None:
        notice(f"created the signing key of {account} in {path} (keep it; it is who you are here)")
    public = public_line(path)
    return SigningKey(path, public)


def create_key(path: str | os.PathLike[str], account: str) -> bool:
    """Make the key unless another process just did (a lock per keys folder); True when this one made it.

    The key appears whole: ssh-keygen writes a draft beside it, whose public half is renamed into place
    first and its private half last, so a process that finds the key file (outside the lock) finds both
    halves complete (it used to read a half-written key now and then: two first posts of one account)."""
    import fcntl

    require_ssh_keygen()
    folder, name = os.path.split(os.fspath(path))
    os.makedirs(folder, exist_ok=True, mode=0o700)
    with open(os.path.join(folder, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(path):
            return False
        draft = os.path.join(folder, f".{name}.draft")
        for half in (draft, _public_half(draft)):  # a draft left by a process killed here
            with suppress(FileNotFoundError):
                os.unlink(half)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{account}@agora", "-f", draft],
            check=True,
            capture_output=True,
        )
        os.replace(_public_half(draft), _public_half(path))
        os.replace(draft, path)
        return True


def require_ssh_keygen() -> None:
    """Making a key, reading one without its .pub file, and signing with anything but an unencrypted
    ed25519 key need OpenSSH's ssh-keygen."""
    import shutil

    if shutil.which("ssh-keygen") is None:
        raise AgoraError("signing needs ssh-keygen (OpenSSH): install openssh-client")


def _public_half(path: str | os.PathLike[str]) -> str:
    return os.fspath(path) + ".pub"


def public_line(path: str | os.PathLike[str]) -> str:
    pub = _public_half(path)
    if os.path.isfile(pub):
        with open(pub) as public:
            return public.read().strip()
    require_ssh_keygen()
    proc = subprocess.run(["ssh-keygen", "-y", "-f", os.fspath(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AgoraError(f"cannot read the signing key {path}: {proc.stderr.strip() or 'unreadable'}")
    return proc.stdout.strip()


def same_key(a: str, b: str) -> bool:
    """Whether two OpenSSH public key lines hold the same key (the comment does not count)."""
    return a.split()[:2] == b.split()[:2]
