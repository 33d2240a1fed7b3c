"""The exported ONNX model in the user's cache directory: where it lives, whether it is intact, and
exporting it again when it is missing or damaged.

`$XDG_CACHE_HOME/git-agora/onnx/<model>-<key>/` (default `~/.cache/...`) holds `model.onnx` and
`meta.json` (precision, size, and the vector of a probe text through this very file). The key changes
with the packaged model's files and the export recipe, so an upgrade exports again. A file that does not
load, has another size, or no longer reproduces the probe vector is damaged: it is exported again and
the caller says so in one line. Writers take a lock and replace files atomically.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .runtime import OnnxEncoder, open_encoder

RECIPE = "2"  # bump with any change to export.py or quantise.py: the cached files then live under a new key
MODEL_FILE = "model.onnx"
META_FILE = "meta.json"
FAILED_FILE = "failed.txt"  # why the last export failed: not retried until it is deleted
PROBE_AGREEMENT = 0.999  # the probe through a loaded file, against the vector recorded at export


class OnnxUnavailable(ImportError):
    """onnxruntime or tokenizers cannot be imported: the caller uses torch."""


class ExportFailed(RuntimeError):
    """Exporting failed (now or before, see `FAILED_FILE`): the caller uses torch."""


@dataclass(frozen=True)
class LoadedModel:
    """An ONNX encoder ready to use; ``notice`` says, in one line, that it was just exported or rebuilt."""

    encoder: OnnxEncoder
    precision: str
    path: Path
    notice: str | None = None


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "git-agora" / "onnx"


def model_key(model_dir: Path) -> str:
    """A fingerprint of the model's files (contents of the small ones, size and time of the weights),
    the recipe and the onnxruntime version (the file holds that version's fused operators)."""
    import onnxruntime

    digest = hashlib.sha256(f"{RECIPE} {onnxruntime.__version__}".encode())
    for path in sorted(model_dir.glob("*")):
        if not path.is_file():
            continue
        stat = path.stat()
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if stat.st_size < 1 << 20 else f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def model_location(model_dir: Path, name: str) -> Path:
    return cache_root() / f"{name}-{model_key(model_dir)}"


def load_onnx(
    model_dir: Path,
    name: str,
    dim: int = 384,
    threads: int | None = None,
    exporting: Callable[[str], AbstractContextManager[Any]] | None = None,
) -> LoadedModel:
    """The ONNX encoder of ``model_dir``, exported on first use. Raises `OnnxUnavailable` without
    onnxruntime or tokenizers, and `ExportFailed` when exporting fails (recorded, so that later calls do
    not try again until the record is deleted). ``threads``: see `runtime.open_encoder`. ``exporting``:
    a context the export runs in, given what it does (say, `feedback.when_slow`'s progress)."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise OnnxUnavailable(str(exc)) from exc
    directory = model_location(model_dir, name)
    found = _open_intact(model_dir, directory, dim, threads)
    if isinstance(found, LoadedModel):
        return found
    with _locked(directory):
        again = _open_intact(model_dir, directory, dim, threads)  # another process may have exported meanwhile
        if isinstance(again, LoadedModel):
            return again
        if (directory / FAILED_FILE).exists():
            reason = (directory / FAILED_FILE).read_text().strip()
            raise ExportFailed(f"{reason}; delete {directory / FAILED_FILE} to try again")
        from .export import export_model

        shown = exporting(f"embeddings: exporting {name} to ONNX (first use, cached after)") if exporting else None
        try:
            with shown or contextlib.nullcontext():
                exported = export_model(model_dir, directory / MODEL_FILE)
        except ImportError as exc:  # torch or transformers missing: cheap to find out again next time
            raise ExportFailed(f"{type(exc).__name__}: {exc}") from exc
        except Exception as exc:  # no torch, an exporter that cannot trace this model, a full disk
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else 'no message'}"
            _write_atomically(directory / FAILED_FILE, reason + "\n")
            raise ExportFailed(reason) from exc
        meta = {
            "recipe": RECIPE,
            "precision": exported.precision,
            "agreement": exported.agreement,
            "size": exported.path.stat().st_size,
            "probe_vector": list(exported.probe_vector),
        }
        _write_atomically(directory / META_FILE, json.dumps(meta) + "\n")
    encoder = open_encoder(model_dir, directory / MODEL_FILE, dim, threads)
    what = f"exported {name} to ONNX ({exported.precision}) in {exported.seconds:.1f} s, cached in {directory}"
    if found is not None:
        what = f"the cached ONNX model was damaged ({found}); {what}"
    return LoadedModel(encoder, exported.precision, directory / MODEL_FILE, f"embeddings: {what}")


def _open_intact(model_dir: Path, directory: Path, dim: int, threads: int | None) -> LoadedModel | str | None:
    """The loaded model; else what is wrong with the cached one (None: there is none)."""
    from .export import PROBES

    model, meta_file = directory / MODEL_FILE, directory / META_FILE
    if not model.exists() and not meta_file.exists():
        return None
    try:
        meta = json.loads(meta_file.read_text())
        if meta.get("recipe") != RECIPE or int(meta["size"]) != model.stat().st_size:
            return "the model file and its meta.json do not match"
        encoder = open_encoder(model_dir, model, dim, threads)
        probe = encoder.encode([PROBES[0]])[0]
        expected = np.asarray(meta["probe_vector"], dtype=np.float32)
        if probe.shape != expected.shape or float(probe @ expected) < PROBE_AGREEMENT:
            return "it no longer reproduces its probe vector"
    except Exception as exc:  # a truncated or overwritten file: onnxruntime raises its own types
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else 'unreadable'}"
    return LoadedModel(encoder, str(meta.get("precision")), model)


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
