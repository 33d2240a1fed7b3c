"""A signed twin of a generated project, for the signature benchmarks.

`sign_project(origin, out)` copies a bare project (from `tracegen`) and rewrites every commit under
`refs/agora/log/*` (contributions and log commits, parents first; the shas their messages name
follow) with Git's SSH commit signature of its account (the author name), exactly the `gpgsig` header
`git commit -S` writes with `gpg.format=ssh`; each account also gets its identity ref
(`refs/agora/identity/<account>`, signed by
its own key). Keys are ed25519, derived from the account name and a seed, and signing happens in
process (about 0.02 ms a commit), so 100,000 contributions sign in seconds; `git verify-commit` accepts
the result (tests/test_tracegen.py checks a sample against it). Run again after `tracegen.append`, it
signs only what was appended.

    python eval/bench/signed.py ORIGIN.git OUT.git [--seed 0]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from dulwich.objects import Commit, Tree
from dulwich.repo import Repo

from git_agora.identity.chain import identity_message
from git_agora.identity.ssh_sign import Ed25519Key, ssh_string
from git_agora.refs.names import IDENTITY_PREFIX

STATE_FILE = "signed-state.pkl"
UNSIGNED = "refs/unsigned/log/"  # the origin's logs, as fetched; the signed twins live under LOG_PREFIX
LOG_PREFIX = "refs/agora/log/"
SHA = re.compile(rb"\b[0-9a-f]{40}\b")  # the shas a message names (log entries, verification targets)


class AccountKey:
    """An ed25519 key derived from the account name and a seed; signs in process as git-agora does
    (`git_agora.identity.ssh_sign`)."""

    def __init__(self, account: str, seed: int = 0):
        secret = hashlib.sha256(f"agora-bench:{seed}:{account}".encode()).digest()
        raw = Ed25519PrivateKey.from_private_bytes(secret).public_key().public_bytes_raw()
        self.key = Ed25519Key(secret, ssh_string(b"ssh-ed25519") + ssh_string(raw))
        self.public = f"ssh-ed25519 {base64.b64encode(self.key.public_blob).decode()} {account}@agora"

    def sign(self, payload: bytes) -> bytes:
        return self.key.sign(payload)


def sign_project(origin: Path, out: Path, seed: int = 0) -> dict[str, AccountKey]:
    """Write the signed twin of `origin` to `out`, or bring an existing twin up to date with what was
    appended to `origin` since (only the new commits are signed); returns each account's key."""
    state_file = out / STATE_FILE
    if state_file.exists():
        state = pickle.loads(state_file.read_bytes())
    else:
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run(["git", "init", "-q", "--bare", str(out)], check=True)
        state = {"renamed": {}, "tips": []}
    git = ["git", "-C", str(out)]
    subprocess.run([*git, "fetch", "-q", "--no-tags", str(origin), f"+refs/agora/log/*:{UNSIGNED}*"], check=True)
    refs = _refs(out, UNSIGNED)
    new = subprocess.run(
        [*git, "rev-list", "--topo-order", "--reverse", *refs.values(), "--not", *state["tips"]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    repo = Repo(str(out))
    renamed: dict[bytes, bytes] = state["renamed"]
    keys: dict[str, AccountKey] = {}
    objects = []
    for sha in new:
        commit = repo[sha.encode()]
        assert isinstance(commit, Commit)
        account = commit.author.split(b" <", 1)[0].decode()
        key = keys.get(account) or keys.setdefault(account, AccountKey(account, seed))
        commit.parents = [renamed.get(parent, parent) for parent in commit.parents]
        commit.message = SHA.sub(lambda found: renamed.get(found.group(0), found.group(0)), commit.message)
        commit.gpgsig = key.sign(commit.as_raw_string())
        renamed[sha.encode()] = commit.id
        objects.append(commit)
    empty = Tree()
    objects.append(empty)
    updates = {}
    known = _refs(out, IDENTITY_PREFIX)
    for account, key in sorted(keys.items()):
        if IDENTITY_PREFIX + account not in known:
            identity = _identity_commit(empty.id, account, key)
            objects.append(identity)
            updates[IDENTITY_PREFIX + account] = identity.id.decode()
    repo.object_store.add_objects([(obj, None) for obj in objects])
    updates |= {LOG_PREFIX + ref[len(UNSIGNED) :]: renamed[tip.encode()].decode() for ref, tip in refs.items()}
    script = "".join(f"update {ref} {sha}\n" for ref, sha in updates.items())
    subprocess.run([*git, "update-ref", "--stdin"], input=script, text=True, check=True)
    if not state["tips"]:
        subprocess.run([*git, "gc", "-q", "--prune=now"], check=True)
    state["tips"] = sorted(set(refs.values()))
    state_file.write_bytes(pickle.dumps(state))
    return keys


def _refs(repo: Path, prefix: str) -> dict[str, str]:
    listing = subprocess.run(
        ["git", "-C", str(repo), "for-each-ref", "--format=%(refname) %(objectname)", prefix],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split() for line in listing.splitlines())


def _identity_commit(tree: bytes, account: str, key: AccountKey) -> Commit:
    commit = Commit()
    commit.tree = tree
    commit.parents = []
    commit.author = commit.committer = f"{account} <{account}@agora>".encode()
    commit.author_time = commit.commit_time = 1_750_000_000
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = identity_message(account, key.public).encode()
    commit.gpgsig = key.sign(commit.as_raw_string())
    return commit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("origin", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    keys = sign_project(args.origin, args.out, args.seed)
    print(f"signed {args.out} for {len(keys)} accounts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
