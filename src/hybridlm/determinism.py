"""Fixed seeds, kernels and thread count, shared by the build and the score steps (same settings as
ever: bit-identical results need the same code, machine, device, thread count and batch size)."""

from __future__ import annotations

import contextlib
import os
import random

from hybridlm.errors import EvalError

SEED = 42


def default_threads() -> int:
    return min(8, os.cpu_count() or 1)


def configure_determinism(device: str, threads: int) -> None:
    """Deterministic kernels, fixed thread count, no TF32; call before any CUDA work."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # only settable before the first parallel region
        torch.set_num_interop_threads(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    if device == "cuda" and not torch.cuda.is_available():
        raise EvalError("--device cuda but CUDA is not available")


def seed_everything(seed: int = SEED) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def device_label(device: str) -> str:
    if device == "cpu":
        return device
    import torch

    return f"{device}:{torch.cuda.get_device_name()}"
