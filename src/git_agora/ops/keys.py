"""`key`: the account's signing key, and key rotation.

A rotation appends to the account's identity ref (`refs/agora/identity/<account>`) a commit that
announces the new key and is signed by the old one, so every reader who trusts the old key follows
the chain to the new one; then it pushes the identity. It rotates, it does not revoke: contributions
signed by an earlier key of the chain stay valid (a reader cannot tell an old signature from a new
one made with a stolen key), see the threat model in docs/protocol.md.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import AgoraError
from ..identity.chain import chain_keys, ensure_identity, identity_message
from ..identity.keys import KEY_CONFIG, SigningKey, create_key, public_line, same_key
from ..project import Project
from ..refs.names import IDENTITY_PREFIX
from ..refs.sync import push_identity


@dataclass(frozen=True)
class KeyInfo:
    account: str
    path: Path
    public: str
    configured: bool  # `git config agora.signingkey` names it (else the default path)
    chain: tuple[str, ...]  # the keys the account's identity here announces, oldest first

    def to_dict(self) -> dict:
        return {**asdict(self), "path": str(self.path)}


@dataclass(frozen=True)
class Rotation:
    account: str
    old_public: str
    new_public: str
    path: Path  # the new private key
    retired: Path | None  # where the old default key was moved, when it was the default
    identity: str  # the new identity tip
    remote: str | None
    push_problem: str | None  # None: the remote has the new identity (or there is no remote)
    members_notice: str | None  # a closed project lists keys: the setup's account must amend it

    def to_dict(self) -> dict:
        return {**asdict(self), "path": str(self.path), "retired": str(self.retired) if self.retired else None}


def key_info(project: Project) -> KeyInfo:
    key = project.signing_key
    tip = project.repo.ref(IDENTITY_PREFIX + project.account)
    chain = tuple(chain_keys(project.repo, tip)) if tip else ()
    return KeyInfo(project.account, Path(key.path), key.public, _configured(project) is not None, chain)


def rotate_key(project: Project, new_key: Path | None = None, push: bool = True) -> Rotation:
    """Announce a new signing key for the account, signed by its current key, and sign with it from now on.

    `new_key`: an existing private key file (configured with `git config agora.signingkey`); else a new
    ed25519 key is made where the old one was (the old default key is kept beside it, renamed)."""
    repo, account = project.repo, project.account
    old = project.signing_key
    local = ensure_identity(repo, account, old)
    tip = repo.ref(local)
    assert tip is not None
    chain = chain_keys(repo, tip)
    if not chain or not same_key(chain[-1], old.public):
        raise AgoraError(
            f"the identity of {account} announces a newer key than {old.path}; rotate from the clone that holds it"
        )
    new = _new_key(project, old, new_key)
    if same_key(new.public, old.public):
        raise AgoraError(f"{new.path} is the key {account} signs with now; give another one")
    signer, repo.signer = repo.signer, old.sign
    try:
        sha = repo.write_commit(repo.empty_tree, [tip], identity_message(account, new.public), account)
    finally:
        repo.signer = signer
    if not repo.compare_and_swap(local, tip, sha):
        raise AgoraError(f"the identity of {account} moved while rotating; run the rotation again")
    new, retired = _install(project, old, new, new_key is not None)
    problem = _push(project, push)
    notice = _members_notice(project, new)
    return Rotation(account, old.public, new.public, Path(new.path), retired, sha, project.remote, problem, notice)


def _configured(project: Project) -> str | None:
    return project.repo.git.config_get(KEY_CONFIG)


def _new_key(project: Project, old: SigningKey, given: Path | None) -> SigningKey:
    """The key to rotate to: the one given, else a new one made beside the current one."""
    if given is not None:
        path = given.expanduser()
        if not path.is_file():
            raise AgoraError(f"the new key {path} does not exist or is not a file")
        return SigningKey(path, public_line(path))
    current = Path(old.path)
    path = current.with_name(f"{current.name}-{time.strftime('%Y%m%d%H%M%S')}")
    create_key(path, project.account)
    return SigningKey(path, public_line(path))


def _install(project: Project, old: SigningKey, new: SigningKey, given: bool) -> tuple[SigningKey, Path | None]:
    """Sign with the new key from now on: configure it, or, when the old key was the default one, put the
    new key at the default path and keep the old one beside it, renamed (every clone here follows)."""
    if given or _configured(project) is not None:
        project.repo.git.config_set(KEY_CONFIG, str(new.path))
        return new, None
    old_path, new_path = Path(old.path), Path(new.path)
    retired = old_path.with_name(f"{old_path.name}.retired-{time.strftime('%Y%m%d%H%M%S')}")
    for suffix in ("", ".pub"):
        source = old_path.with_name(old_path.name + suffix)
        if source.exists():
            source.rename(retired.with_name(retired.name + suffix))
        new_path.with_name(new_path.name + suffix).rename(source)
    return SigningKey(old.path, new.public), retired


def _push(project: Project, push: bool) -> str | None:

    if not push or project.remote is None:
        return None
    return push_identity(project.repo, project.account, project.remote)


def _members_notice(project: Project, new: SigningKey) -> str | None:
    members = project.policy(project.setup).config.sections.get("identity", {}).get("members")
    if not isinstance(members, dict) or project.account not in members:
        return None
    if same_key(str(members[project.account]), new.public):
        return None
    return (
        "this project lists its members' keys: until the setup's account amends the policy with the new key, "
        "work signed with it does not count"
    )
