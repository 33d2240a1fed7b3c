"""Identity refs: `refs/agora/identity/<account>` is a fast-forward-only chain of commits, each
announcing the account's public key (`Agora-Key`). The first is signed by its own key; a key change is
a new commit signed by the previous key. Readers trust the keys of the chain's valid prefix, and pin
the first key they see for an account (trust on first use, in `.git/agora/trust.json`)."""

from __future__ import annotations

import re

from ..errors import AgoraError
from ..refs.git import Git
from ..refs.names import IDENTITY_PREFIX, REMOTES_PREFIX, ROOT
from ..refs.store import Repository
from .keys import SigningKey, same_key
from .signatures import split_signature, verify

FORMAT_TRAILER = "Agora-Identity-Format: 1"
KEY_TRAILER = "Agora-Key"
_KEY = re.compile(rf"^{KEY_TRAILER}: (.+)$", re.M)


def identity_message(account: str, public: str) -> str:
    return f"agora identity: {account}\n\n{FORMAT_TRAILER}\n{KEY_TRAILER}: {public}\n"


def identity_account(ref: str) -> str | None:
    """The account whose identity `ref` is (local or remote-tracking copy), else None."""
    if ref.startswith(IDENTITY_PREFIX):
        return ref[len(IDENTITY_PREFIX) :]
    if ref.startswith(REMOTES_PREFIX) and "/identity/" in ref:
        return ref.split("/identity/", 1)[1]
    return None


def identity_refs(repo: Repository, account: str) -> list[str]:
    """Every copy of the account's identity here: local, remote-tracking."""
    refs = repo.git.for_each_ref(ROOT)
    return [
        ref
        for ref in refs
        if ref == IDENTITY_PREFIX + account or (ref.startswith(REMOTES_PREFIX) and ref.endswith(f"/identity/{account}"))
    ]


def chain_keys(repo: Repository, tip: str) -> list[str]:
    """The keys of a chain's valid prefix, oldest first: the root signs itself; each later commit is
    signed by the key before it. A commit that breaks the chain ends it."""
    return chain_keys_in(repo.git, tip)


def chain_keys_in(git: Git, tip: str) -> list[str]:
    """`chain_keys` with git alone (the pre-receive hook has no work tree)."""
    shas = git.run("rev-list", "--first-parent", "--reverse", tip).split()
    keys: list[str] = []
    for sha in shas:
        raw = git.run_bytes("cat-file", "commit", sha)
        payload, signature = split_signature(raw)
        found = _KEY.search(raw.decode("utf-8", "replace"))
        if found is None or signature is None:
            break
        key = found.group(1).strip()
        if not verify(payload, signature, [keys[-1]] if keys else [key]):
            break
        keys.append(key)
    return keys


def ensure_identity(repo: Repository, account: str, key: SigningKey) -> str:
    """The local identity ref of `account`, created (or taken from a fetched copy, also one that extends
    it after a rotation made elsewhere) when missing; refuses a key that the account's identity does not
    announce as its newest."""
    local = IDENTITY_PREFIX + account
    tip = repo.ref(local)
    if tip is not None:
        newest = _newest_key(repo, tip)
        if newest is not None and same_key(newest, key.public):
            return local  # the local chain announces this key last, which the search below finds first
    known = [repo.ref(ref) for ref in identity_refs(repo, account) if ref != local]
    chains = {
        candidate: chain_keys(repo, candidate)
        for candidate in dict.fromkeys([tip, *known])
        if candidate is not None and (tip in (None, candidate) or repo.git.is_ancestor(tip, candidate))
    }
    for candidate, keys in chains.items():
        if keys and same_key(keys[-1], key.public):
            if candidate != tip:
                repo.set_ref(local, candidate)
            return local
    if not chains:
        sha = repo.write_commit(repo.empty_tree, [], identity_message(account, key.public), account)
        if not repo.compare_and_swap(local, None, sha):  # another process of this account made it first
            return ensure_identity(repo, account, key)
        return local
    keys = max(chains.values(), key=len)
    if any(same_key(k, key.public) for k in keys):
        raise AgoraError(
            f"{key.path} was rotated out of the identity of {account} (now {_short(keys[-1])}); "
            f"sign with the newest key (git config agora.signingkey PATH)"
        )
    raise AgoraError(
        f"the identity of {account} here announces another key ({_short(keys[-1] if keys else '?')}); "
        f"sign with that key (git config agora.signingkey PATH) or publish as another account"
    )


def ensure_pinned_identity(repo: Repository, account: str, key: SigningKey) -> None:
    """For an account whose key the policy pins (`[ci] keys`) and `key` is that key: a local identity
    announcing it, made when the local one does not, whatever identity another copy (a squatter's, on
    the remote) announces. Readers verify such an account with the policy's key, not with the identity
    they saw first, so the chain need not win the remote's ref."""
    local = IDENTITY_PREFIX + account
    tip = repo.ref(local)
    if tip is not None and any(same_key(k, key.public) for k in chain_keys(repo, tip)):
        return
    signer, repo.signer = repo.signer, key.sign  # the root of a chain signs itself
    try:
        sha = repo.write_commit(repo.empty_tree, [], identity_message(account, key.public), account)
    finally:
        repo.signer = signer
    repo.compare_and_swap(local, tip, sha)


VERIFIED_FILE = "identity-verified"  # under .git/agora (`memo`): chain tip -> its newest key


def _newest_key(repo: Repository, tip: str) -> str | None:
    """The newest key of the chain ending at `tip` (None: no valid key). A chain is immutable, so its
    verdict is remembered by tip: publishing does not walk and verify the chain each time."""
    from ..memo import recall, remember

    known = recall(repo.agora_path, VERIFIED_FILE, tip)
    if known is not None:
        return known
    keys = chain_keys(repo, tip)
    if not keys:
        return None
    newest = " ".join(keys[-1].split()[:2])
    remember(repo.agora_path, VERIFIED_FILE, tip, newest)
    return newest


def _short(public: str) -> str:
    parts = public.split()
    return f"{parts[0]} {parts[1][:16]}..." if len(parts) > 1 else public
