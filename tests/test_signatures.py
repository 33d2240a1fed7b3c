"""Signature verification in process, serial and spread over processes, against ssh-keygen's signatures."""

from __future__ import annotations

import multiprocessing
import subprocess

from git_agora.identity import signatures
from git_agora.identity.keys import SigningKey


def _key(tmp_path, name: str) -> SigningKey:
    path = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return SigningKey(path, path.with_suffix(".pub").read_text().strip())


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

        def Pool(self, processes):  # noqa: N802 - multiprocessing's name
            sizes.append(processes)
            return self.context.Pool(processes)

    monkeypatch.setattr(multiprocessing, "get_context", Recording)
    return sizes
