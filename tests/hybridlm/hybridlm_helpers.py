"""Shared helpers of the hybridlm tests (a unique module name: no clash with other test folders)."""

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FINEWEB_150 = PROJECT_ROOT / ".." / "shared" / "data" / "fineweb-edu-150.jsonl"
BASELINE = PROJECT_ROOT / "eval" / "weight_transfer" / "transfer.py"


# The baseline's bpb on the tiny config (2 stand-in texts, chunk 128, 1 thread, batch 4), recorded with the
# single-process evaluator before the build/score split; exact for the same texts, torch and CPU kernels.
RECORDED_TINY = {
    "bpb_hex": "0x1.101af1ab2a0acp+2",
    "torch_version": "2.13.0+cpu",
    "data_sha256": "20e6c44fb1a71b64a22e3319f953d4d87d360ca8f2de0c0bcf374acf1d8550f4",
}
# The same bits differ by CPU kernels: torch's AVX2 kernels (an AMD EPYC without AVX-512, 2026-12-02) give
# 5.0e-9 more than the recording machine's. Where the capability is listed, the bits are checked exactly;
# elsewhere, to 1e-7.
RECORDED_TINY_BY_CPU = {"AVX2": "0x1.101af1b08c4cbp+2"}


def recorded_tiny_bpb() -> tuple[float, float]:
    """The recorded bpb for this machine's CPU kernels, and how far from it a run may be."""
    import torch

    exact = RECORDED_TINY_BY_CPU.get(torch.backends.cpu.get_cpu_capability())
    return (float.fromhex(exact), 0.0) if exact else (float.fromhex(RECORDED_TINY["bpb_hex"]), 1e-7)


def cli_env(**extra) -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)


def cli_command(*args) -> list[str]:
    return [sys.executable, "-m", "hybridlm", *map(str, args)]


def run_cli(*args, timeout=600, cwd=None, env=None):  # a bound on a hang: a loaded machine needs minutes
    """Run the real CLI (`python -m hybridlm`) in a subprocess, one thread, tiny model unless told."""
    return subprocess.run(
        cli_command(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd, env=cli_env(**(env or {}))
    )


def eval_tiny(transfer, *extra, texts=2, chunk=128, env=None):
    return run_cli(
        "eval",
        transfer,
        "--config",
        "tiny",
        "--texts",
        texts,
        "--chunk",
        chunk,
        "--threads",
        1,
        "--json",
        *extra,
        env=env,
    )


def transfer_tiny(transfer, out, *extra, cwd=None, env=None):
    """The build step alone: `hybridlm transfer TRANSFER --out DIR` on the tiny config."""
    return run_cli("transfer", transfer, "--out", out, "--config", "tiny", "--threads", 1, *extra, cwd=cwd, env=env)


def score_tiny(artifact, *extra, texts=2, chunk=128, cwd=None):
    """The score step alone: `hybridlm score DIR --json`, with eval_tiny's texts and windows."""
    return run_cli(
        "score",
        artifact,
        "--config",
        "tiny",
        "--texts",
        texts,
        "--chunk",
        chunk,
        "--threads",
        1,
        "--json",
        *extra,
        cwd=cwd,
    )


def result_of(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def error_of(proc) -> str:
    """The one-line error: non-zero exit, `hybridlm: error: ...` as the last stderr line."""
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("hybridlm: error: "), proc.stderr
    return lines[-1]
