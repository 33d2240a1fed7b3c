"""Shared helpers of the hybridlm tests (a unique module name: no clash with other test folders)."""

import json
import os
import subprocess
import sys
from pathlib import Path


PROJECT_ROOT = Path(__file__).resolve().parents[2]
FINEWEB_150 = PROJECT_ROOT / ".." / "shared" / "data" / "fineweb-edu-150.jsonl"
BASELINE = PROJECT_ROOT / "eval" / "weight_transfer" / "transfer.py"


def run_cli(*args, timeout=120):
    """Run the real CLI (`python -m hybridlm`) in a subprocess, one thread, tiny model unless told."""
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "hybridlm", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def eval_tiny(transfer, *extra, texts=2, chunk=128):
    return run_cli("eval", transfer, "--config", "tiny", "--texts", texts, "--chunk", chunk, "--threads", 1, "--json", *extra)


def result_of(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def error_of(proc) -> str:
    """The one-line error: non-zero exit, `hybridlm: error: ...` as the last stderr line."""
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("hybridlm: error: "), proc.stderr
    return lines[-1]
