"""The build step (`hybridlm transfer`): run the untrusted transfer file on the random target and write
the artifact (weights + manifest). This process never loads, tokenises or holds the evaluation texts;
the data guard keeps the transfer from fetching them while it runs.

Order, as the evaluator has always done it: deterministic settings, seed every RNG with 42, build the
target (seed 42) on the device, import the file and call `transfer(model, config)` under the guard and
`--timeout`, check what it returned, copy the weights into a model built by hybridlm's own code, save.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import platform
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import hybridlm
from hybridlm import artifact
from hybridlm.determinism import (
    SEED,
    configure_determinism,
    default_threads,
    seed_everything,
)
from hybridlm.errors import EvalError, one_line
from hybridlm.guard import DATA_MODULES

TRANSFER_MODULE = "hybridlm_transfer_under_eval"


class TransferTimeout(BaseException):  # BaseException: a transfer's `except Exception` cannot swallow it
    pass


@dataclass(frozen=True)
class BuildOptions:
    transfer_file: str
    out: str
    donors: str | None = None
    timeout: float | None = None
    config_name: str = "full"
    threads: int | None = None
    device: str = "cpu"
    protected_paths: tuple[str, ...] = field(default_factory=tuple)  # e.g. the evaluator's --data file


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
        raise EvalError(f"cannot compile {path.name}: {one_line(exc)}") from None


def load_transfer(path: Path):
    """Import the transfer file and return its `transfer` function."""
    check_transfer_source(path)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)  # its small helper modules; appended, so they shadow nothing installed
    spec = importlib.util.spec_from_file_location(TRANSFER_MODULE, path)
    if spec is None or spec.loader is None:
        raise EvalError(f"{path.name} cannot be imported as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise EvalError(f"importing {path.name} raised {type(exc).__name__}: {one_line(exc)}") from None
    fn = getattr(module, "transfer", None)
    if fn is None:
        raise EvalError(f"{path.name} defines no `transfer(model, config)` function")
    if not callable(fn):
        raise EvalError(f"`transfer` in {path.name} is not callable")
    return fn


@contextmanager
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


def _call_transfer(path: Path, model, config):
    """(result, None) or (None, EvalError): import the file and call transfer(model, config)."""
    try:
        return load_transfer(path)(model, config), None
    except EvalError as exc:
        return None, exc
    except SystemExit as exc:
        return None, EvalError(f"transfer() called sys.exit({exc.code!r})")
    except Exception as exc:
        return None, EvalError(f"transfer() raised {type(exc).__name__}: {one_line(exc)}")


def run_transfer(path: Path, model, config, timeout: float | None, protected_paths=()):
    """Import and call transfer(model, config) with the data guard on and the time limit armed. A
    recorded data access fails the run first, whatever the transfer did with the exception."""
    from hybridlm.guard import transfer_guard

    try:
        with transfer_guard(protected_paths) as violations, time_limit(timeout):
            result, error = _call_transfer(path, model, config)
    except TransferTimeout:
        result, error = None, EvalError(f"transfer() took longer than --timeout {timeout:g} s")
    if violations:
        raise EvalError(f"transfer() touched the evaluation data: {violations[0]}")
    if error is not None:
        raise error
    return result


def check_returned_model(result, config):
    """Validate what transfer returned; return a fresh HybridLM (reference code) holding its weights."""
    from hybridlm.model import HybridLM

    if result is None:
        raise EvalError("transfer() returned None; it must return the model")
    if not isinstance(result, HybridLM):
        raise EvalError(f"transfer() returned {type(result).__name__}, not a hybridlm.model.HybridLM")
    if result.config != config:
        raise EvalError("transfer() changed the model config; the architecture is fixed")
    return artifact.checked_model(result.state_dict(), config)


def refuse_loaded_data_modules() -> None:
    loaded = [name for name in DATA_MODULES if name in sys.modules]
    if loaded:
        raise EvalError(
            f"internal error: {loaded[0]} is loaded in the build process, which must never hold the evaluation texts"
        )


def build(opts: BuildOptions) -> dict:
    """The whole build step; returns the manifest written next to the weights, or raises EvalError."""
    started = time.perf_counter()
    path, out = Path(opts.transfer_file), Path(opts.out)
    check_transfer_source(path)  # fail fast, before torch is imported
    if out.exists() and not out.is_dir():
        raise EvalError(f"--out {out} exists and is not a folder")
    if out.is_dir():
        artifact.clear(out)
    threads = opts.threads or default_threads()
    configure_determinism(opts.device, threads)
    import torch

    from hybridlm import donors
    from hybridlm.model import HybridLM, config_named

    config = config_named(opts.config_name)
    refuse_loaded_data_modules()
    donors.set_donor_root(opts.donors)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    seed_everything(SEED)
    target = HybridLM(config, seed=SEED).to(opts.device)
    config_before = copy.deepcopy(config)

    t0 = time.perf_counter()
    result = run_transfer(path, target, config, opts.timeout, opts.protected_paths)
    transfer_seconds = time.perf_counter() - t0
    if config != config_before:
        raise EvalError("transfer() changed the config object; the architecture is fixed")
    model = check_returned_model(result, config_before)
    del result, target
    return artifact.save(
        out,
        model.state_dict(),
        {
            "config": opts.config_name,
            "transfer_file": str(path),
            "transfer_sha256": artifact.file_sha256(path),
            "seed": SEED,
            "threads": threads,
            "device": opts.device,
            "torch_version": torch.__version__,
            "hybridlm_version": hybridlm.__version__,
            "python_version": platform.python_version(),
            "transfer_seconds": round(transfer_seconds, 3),
            "seconds": round(time.perf_counter() - started, 3),
        },
    )
