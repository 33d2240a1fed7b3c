"""The evaluator: run a transfer file on the random target, check what it returns, score bits per byte.

Scoring: each text is its own document, tokenised with GPT-2 BPE and preceded by <|endoftext|> (50256)
as context, so every token of the text is predicted exactly once. The input sequence [eot, t1..tn-1]
with targets [t1..tn] is cut into non-overlapping windows of `chunk` (512) positions; each window is
scored on its own, with no context carried over. bpb = (sum of next-token losses in nats / ln 2) /
(UTF-8 bytes of the texts); loss_nats = the mean loss per predicted token.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.util
import math
import os
import platform
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SEED = 42


class EvalError(Exception):
    """A one-line reason the evaluation cannot produce a score."""


class TransferTimeout(BaseException):  # BaseException: a transfer's `except Exception` cannot swallow it
    pass


@dataclass(frozen=True)
class EvalOptions:
    transfer_file: str
    data: str | None = None
    n_texts: int = 200
    chunk: int = 512
    device: str = "cpu"
    donors: str | None = None
    timeout: float | None = None
    config_name: str = "full"
    threads: int | None = None
    batch_size: int = 4


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


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_transfer_source(path: Path) -> None:
    """Cheap checks before anything heavy is imported: the file exists and parses."""
    if not path.exists():
        raise EvalError(f"transfer file not found: {path}")
    if not path.is_file():
        raise EvalError(f"transfer file is not a file: {path}")
    try:
        compile(path.read_bytes(), str(path), "exec")
    except SyntaxError as exc:
        raise EvalError(f"syntax error in {path.name} line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # e.g. null bytes
        raise EvalError(f"cannot compile {path.name}: {_one_line(exc)}") from None


def load_transfer(path: Path):
    """Import the transfer file and return its `transfer` function."""
    check_transfer_source(path)
    spec = importlib.util.spec_from_file_location("hybridlm_transfer_under_eval", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise EvalError(f"importing {path.name} raised {type(exc).__name__}: {_one_line(exc)}") from None
    fn = getattr(module, "transfer", None)
    if fn is None:
        raise EvalError(f"{path.name} defines no `transfer(model, config)` function")
    if not callable(fn):
        raise EvalError(f"`transfer` in {path.name} is not callable")
    return fn


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else "(no message)"


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise TransferTimeout after `seconds` (SIGALRM); if Python never gets control back (a long C
    call), a watchdog ends the process 30 s later with the same one-line reason."""
    if not seconds:
        yield
        return

    def on_alarm(signum, frame):
        raise TransferTimeout()

    def watchdog():
        sys.stderr.write(f"hybridlm: error: transfer() took longer than --timeout {seconds:g} s\n")
        sys.stderr.flush()
        os._exit(1)

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    dog = threading.Timer(seconds + 30, watchdog)
    dog.daemon = True
    dog.start()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        dog.cancel()


def run_transfer(path: Path, model, config, timeout: float | None, protected_paths=()):
    """Import and call transfer(model, config) with the data guard on and the time limit armed."""
    from hybridlm.guard import DataAccessError, transfer_guard

    result = None
    try:
        with transfer_guard(protected_paths) as violations, time_limit(timeout):
            try:
                fn = load_transfer(path)
                result = fn(model, config)
            except DataAccessError:
                pass  # recorded in `violations`; reported below
            except EvalError:
                raise
            except SystemExit as exc:
                raise EvalError(f"transfer() called sys.exit({exc.code!r})") from None
            except Exception as exc:
                if not violations:
                    raise EvalError(f"transfer() raised {type(exc).__name__}: {_one_line(exc)}") from None
    except TransferTimeout:
        raise EvalError(f"transfer() took longer than --timeout {timeout:g} s") from None
    if violations:
        raise EvalError(f"transfer() touched the evaluation data: {violations[0]}")
    return result


def check_model(result, config):
    """Validate what transfer returned; return a fresh HybridLM (reference code) holding its weights."""
    import torch

    from hybridlm.model import HybridLM, build_meta

    if result is None:
        raise EvalError("transfer() returned None; it must return the model")
    if not isinstance(result, HybridLM):
        raise EvalError(f"transfer() returned {type(result).__name__}, not a hybridlm.model.HybridLM")
    if result.config != config:
        raise EvalError("transfer() changed the model config; the architecture is fixed")
    reference = build_meta(config)
    expected = {n: p for n, p in reference.state_dict().items()}
    got = result.state_dict()
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    if missing or extra:
        raise EvalError(f"parameter names differ from the target: missing {missing[:3]}, unexpected {extra[:3]}")
    for name, ref in expected.items():
        t = got[name]
        if tuple(t.shape) != tuple(ref.shape):
            raise EvalError(f"{name} has shape {tuple(t.shape)}, expected {tuple(ref.shape)}")
        if t.dtype != ref.dtype:
            raise EvalError(f"{name} has dtype {t.dtype}, expected {ref.dtype}")
        if t.is_meta:
            raise EvalError(f"{name} holds no data (meta tensor)")
        if not bool(torch.isfinite(t).all()):
            raise EvalError(f"{name} has non-finite values (NaN or inf)")
    state = {n: t.detach().to("cpu", copy=True) for n, t in got.items()}
    reference.load_state_dict(state, strict=True, assign=True)
    return reference.eval()


def windows(token_docs, chunk: int):
    """(inputs, targets) windows: each document is [eot] + ids, cut into non-overlapping pieces."""
    from hybridlm.tokenizer import END_OF_TEXT

    out = []
    for ids in token_docs:
        seq = [END_OF_TEXT] + list(ids)
        for start in range(0, len(seq) - 1, chunk):
            piece = seq[start : start + chunk + 1]
            out.append((piece[:-1], piece[1:]))
    return out


def score(model, token_docs, chunk: int, device: str, batch_size: int = 4) -> tuple[float, int]:
    """Sum of next-token losses (nats, float64) and number of predicted tokens."""
    import torch
    import torch.nn.functional as F

    from hybridlm.tokenizer import END_OF_TEXT

    model = model.to(device).eval()
    pieces = windows(token_docs, chunk)
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(pieces), batch_size):
            batch = pieces[i : i + batch_size]
            width = max(len(x) for x, _ in batch)
            # Right padding never affects earlier positions: both attention and the SSM are causal.
            inputs = torch.tensor([x + [END_OF_TEXT] * (width - len(x)) for x, _ in batch], device=device)
            targets = torch.tensor([y + [-100] * (width - len(y)) for _, y in batch], device=device)
            logits = model(inputs).float()
            losses = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-100, reduction="none")
            total += float(losses.double().sum())
            count += int((targets != -100).sum())
    return total, count


def evaluate(opts: EvalOptions) -> dict:
    """The whole evaluation; returns the result record or raises EvalError."""
    started = time.perf_counter()
    threads = opts.threads or min(8, os.cpu_count() or 1)
    if opts.chunk < 1:
        raise EvalError(f"--chunk must be positive, got {opts.chunk}")
    if opts.batch_size < 1:
        raise EvalError(f"--batch-size must be positive, got {opts.batch_size}")
    path = Path(opts.transfer_file)
    check_transfer_source(path)  # fail fast, before torch is imported

    from hybridlm.data import DataError, load_texts
    from hybridlm.tokenizer import encode_batch

    try:  # data before transfer, so bad data fails before a long transfer; the guard protects it after
        textset = load_texts(opts.data, opts.n_texts)
    except DataError as exc:
        raise EvalError(str(exc)) from None
    token_docs = encode_batch(list(textset.texts))
    n_bytes = sum(len(t.encode("utf-8")) for t in textset.texts)
    if n_bytes == 0 or sum(map(len, token_docs)) == 0:
        raise EvalError(f"{textset.source}: the selected texts are empty; nothing to score")

    configure_determinism(opts.device, threads)
    import torch

    from hybridlm import donors
    from hybridlm.model import CONFIGS, HybridLM, count_parameters

    if opts.config_name not in CONFIGS:
        raise EvalError(f"unknown --config {opts.config_name!r} (have: {', '.join(CONFIGS)})")
    config = CONFIGS[opts.config_name]

    donors.set_donor_root(opts.donors)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    seed_everything(SEED)
    target = HybridLM(config, seed=SEED).to(opts.device)
    config_before = copy.deepcopy(config)
    protected = [opts.data] if opts.data and Path(opts.data).is_file() else []

    t0 = time.perf_counter()
    result = run_transfer(path, target, config, opts.timeout, protected)
    transfer_seconds = time.perf_counter() - t0
    if config != config_before:
        raise EvalError("transfer() changed the config object; the architecture is fixed")
    model = check_model(result, config_before)
    del result, target

    t0 = time.perf_counter()
    total_nats, n_tokens = score(model, token_docs, opts.chunk, opts.device, opts.batch_size)
    score_seconds = time.perf_counter() - t0
    if not math.isfinite(total_nats):
        raise EvalError("the model's loss is not finite on the evaluation texts")
    bpb = total_nats / math.log(2) / n_bytes
    return {
        "bpb": bpb,
        "bpb_hex": bpb.hex(),
        "loss_nats": total_nats / n_tokens,
        "tokens": n_tokens,
        "bytes": n_bytes,
        "texts": len(textset.texts),
        "chunk": opts.chunk,
        "data_source": textset.source,
        "data_sha256": textset.sha256,
        "comparable_to_paper": textset.comparable_to_paper,
        "data_note": textset.note,
        "transfer_file": str(path),
        "transfer_sha256": file_sha256(path),
        "config": opts.config_name,
        "parameters": count_parameters(model),
        "device": opts.device if opts.device == "cpu" else f"{opts.device}:{torch.cuda.get_device_name()}",
        "threads": threads,
        "batch_size": opts.batch_size,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "transfer_seconds": round(transfer_seconds, 3),
        "score_seconds": round(score_seconds, 3),
        "tokens_per_second": round(n_tokens / score_seconds, 1) if score_seconds > 0 else None,
        "seconds": round(time.perf_counter() - started, 3),
    }
