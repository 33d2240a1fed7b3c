"""Fixed seeds, kernels and thread count, shared by the build and the score steps (same settings as
ever: bit-identical results need the same code, machine, device, thread count and batch size)."""

from __future__ import annotations

import contextlib
import os
import random
import sys

from hybridlm.errors import EvalError

SEED = 42


def default_threads() -> int:
    return min(8, os.cpu_count() or 1)


def configure_determinism(device: str, threads: int) -> None:
    """Deterministic kernels, fixed thread count, no TF32; call before any CUDA work."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    use_deterministic_algorithms(torch)
    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # only settable before the first parallel region
        torch.set_num_interop_threads(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    if device == "cuda" and not torch.cuda.is_available():
        raise EvalError("--device cuda but CUDA is not available")


def use_deterministic_algorithms(torch) -> None:
    """`torch.use_deterministic_algorithms(True)` without its import of the compiler (torch._inductor, about
    1.5 s of every evaluation process's start, while nothing here compiles): the kernels' flag is set directly,
    and the compiler, should a transfer import it later, reads the same setting from its environment variable."""
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if "torch._inductor.config" in sys.modules or set_flag is None:
        torch.use_deterministic_algorithms(True)
        return
    os.environ["TORCHINDUCTOR_DETERMINISTIC"] = "1"
    set_flag(True, warn_only=False)


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
