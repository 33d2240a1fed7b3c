"""Signature verification in process, serial and spread over processes, against ssh-keygen's signatures."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys

import pytest

from git_agora.identity import signatures
from git_agora.identity.keys import SigningKey
from git_agora.identity.ssh_sign import load_ed25519


def _key(tmp_path, name: str, kind: str = "ed25519", passphrase: str = "") -> SigningKey:
    path = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-f", str(path)], check=True)
    return SigningKey(path, path.with_suffix(".pub").read_text().strip())


def test_an_ed25519_key_signs_in_process_exactly_as_ssh_keygen_does(tmp_path, monkeypatch):
    alice = _key(tmp_path, "alice")
    assert load_ed25519(alice.path) is not None
    payloads = [b"", b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nx\n", bytes(range(256)) * 40]
    expected = [alice.sign_with_ssh_keygen(p) for p in payloads]
    monkeypatch.setattr(SigningKey, "sign_with_ssh_keygen", lambda *_: pytest.fail("ssh-keygen was used"))
    assert [alice.sign(p) for p in payloads] == expected  # ed25519 is deterministic: the same bytes
    assert all(signatures.verify(p, sig, [alice.public]) for p, sig in zip(payloads, expected))


def test_an_rsa_key_signs_with_ssh_keygen(tmp_path):
    key = _key(tmp_path, "rsa", "rsa")
    assert load_ed25519(key.path) is None
    signature = key.sign(b"payload")
    assert signature.startswith(b"-----BEGIN SSH SIGNATURE-----")
    assert signatures.verify(b"payload", signature, [key.public])


def test_keys_ssh_keygen_would_refuse_or_ask_about_are_left_to_it(tmp_path):
    encrypted = _key(tmp_path, "encrypted", passphrase="secret words")
    assert load_ed25519(encrypted.path) is None  # ssh-keygen asks for the passphrase (or an agent has it)
    open_key = _key(tmp_path, "open")
    open_key.path.chmod(0o644)
    assert load_ed25519(open_key.path) is None  # ssh-keygen refuses it and says why
    corrupt = _key(tmp_path, "corrupt")
    text = corrupt.path.read_text().splitlines()
    corrupt.path.write_text("\n".join([text[0], text[1][:-8] + "AAAAAAAA", *text[2:]]) + "\n")
    assert load_ed25519(corrupt.path) is None
    assert load_ed25519(corrupt.path.with_suffix(".pub")) is None
    assert load_ed25519(tmp_path / "missing") is None


def test_a_batch_spread_over_processes_gives_the_serial_verdicts_in_order(tmp_path, monkeypatch):
    alice, mallory = _key(tmp_path, "alice"), _key(tmp_path, "mallory")
    payloads = [f"tree {i:040x}\n\ncommit {i}\n".encode() for i in range(3)]
    good = [(p, alice.sign(p), (alice.public,)) for p in payloads]
    forged = (payloads[0], mallory.sign(payloads[0]), (alice.public,))
    altered = (payloads[1] + b"!", good[1][1], (alice.public,))
    malformed = (payloads[2], b"-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n", (alice.public,))
    no_key = (payloads[2], good[2][1], ("not a key",))
    batch = [*good, forged, altered, malformed, no_key] * 5
    serial = signatures.verify_many(batch, workers=1)
    assert serial == [True, True, True, False, False, False, False] * 5
    monkeypatch.setattr(signatures, "PARALLEL_MIN", 4)
    pools = _record_pools(monkeypatch)
    assert signatures.verify_many(batch, workers=3) == serial
    assert pools == [3], "three worker processes verified the batch"
    assert signatures._BATCH == (), "the batch is not kept after the workers finished"


def test_a_small_batch_stays_in_process(tmp_path, monkeypatch):
    alice = _key(tmp_path, "alice")
    job = (b"payload", alice.sign(b"payload"), (alice.public,))
    pools = _record_pools(monkeypatch)
    assert signatures.verify_many([job] * 3, workers=8) == [True] * 3
    assert pools == []


def _record_pools(monkeypatch) -> list[int]:
    sizes: list[int] = []
    real = multiprocessing.get_context

    class Recording:
        def __init__(self, method):
            self.context = real(method)

        def Pool(self, processes, **options):  # noqa: N802 - multiprocessing's name
            sizes.append(processes)
            return self.context.Pool(processes, **options)

    monkeypatch.setattr(multiprocessing, "get_context", Recording)
    return sizes


KEY_OF = """
import os, sys, time
from pathlib import Path
from git_agora.identity.keys import default_key_path, signing_key
from git_agora.refs.store import Repository
repo = Repository.discover(Path(sys.argv[1]))
if sys.argv[2] == "reader":  # asks the moment the key file appears: the window a half-written key had
    deadline = time.monotonic() + 30
    while not os.path.exists(default_key_path("acct")) and time.monotonic() < deadline:
        pass
print(signing_key(repo, "acct").public)
"""


SLOW_SSH_KEYGEN = """#!/bin/bash
# ssh-keygen making a key file that appears at once and fills slowly, then its .pub the same way
if [[ " $* " == *" -t ed25519 "* ]]; then
  out="${@: -1}"; draft=$(mktemp -d)
  "%s" "${@:1:$#-1}" "$draft/k" > /dev/null || exit 1
  head -c 20 "$draft/k" > "$out"; sleep 0.3; cat "$draft/k" > "$out"
  : > "$out.pub"; sleep 0.3; cat "$draft/k.pub" > "$out.pub"
  exit 0
fi
exec "%s" "$@"
"""


def test_a_key_being_made_is_never_read_half_written(tmp_path):
    """While one process makes an account's key on first use (here with an ssh-keygen that writes slowly),
    others that find the key file read it whole (a key seen half written failed one first post in ten
    when two processes of one account started together)."""
    real = shutil.which("ssh-keygen")
    assert real is not None
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "ssh-keygen").write_text(SLOW_SSH_KEYGEN % (real, real))
    (tools / "ssh-keygen").chmod(0o755)
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": f"{tools}:{os.environ['PATH']}"}
    command = [sys.executable, "-c", KEY_OF, str(tmp_path / "repo")]
    readers = [
        subprocess.Popen([*command, "reader"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    maker = subprocess.run([*command, "maker"], env=env, capture_output=True, text=True, timeout=60)
    answers = [(maker.returncode, maker.stdout, maker.stderr)]
    answers += [(p.wait(timeout=60), *p.communicate()) for p in readers]
    assert [code for code, _, _ in answers] == [0] * 5, [err for _, _, err in answers if err]
    assert len({out for _, out, _ in answers}) == 1 and answers[0][1].startswith("ssh-ed25519 ")
    keys = tmp_path / "config" / "git-agora" / "keys"
    assert sorted(p.name for p in keys.iterdir()) == [".lock", "acct_ed25519", "acct_ed25519.pub"]


def test_a_draft_left_by_a_killed_key_maker_is_replaced(tmp_path):
    """A process killed while ssh-keygen wrote the draft leaves it behind; the next one makes a whole key."""
    from git_agora.identity.keys import create_key, public_line

    path = tmp_path / "keys" / "acct_ed25519"
    path.parent.mkdir()
    (path.parent / ".acct_ed25519.draft").write_text("-----BEGIN OPENSSH PRIVATE")  # cut short
    (path.parent / ".acct_ed25519.draft.pub").write_text("")
    assert create_key(path, "acct") and not create_key(path, "acct")
    assert sorted(p.name for p in path.parent.iterdir()) == [".lock", "acct_ed25519", "acct_ed25519.pub"]
    derived = subprocess.run(["ssh-keygen", "-y", "-f", str(path)], capture_output=True, text=True, check=True)
    assert public_line(path).split()[:2] == derived.stdout.split()[:2]
