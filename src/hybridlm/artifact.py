"""The artifact between the build and the score steps: a folder with the weights and a manifest.

    DIR/model.safetensors   every parameter of the target, by name (float32, CPU)
    DIR/manifest.json       how it was built: config, transfer file sha256, seed, threads, versions, time

The build writes both (manifest last, each through a temporary name, so a folder with a manifest is
complete); the scorer reads them with no code from the transfer file. Everything in the folder is
untrusted: the weights are checked against the scorer's own model (names, shapes, dtype, finite) and
only known manifest fields, of the expected types, are used.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from hybridlm.errors import EvalError

MODEL_FILE = "model.safetensors"
MANIFEST_FILE = "manifest.json"
FORMAT = "hybridlm-artifact/1"
MAX_MANIFEST_BYTES = 64 * 1024
MANIFEST_TYPES: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "config": str,
    "transfer_file": str,
    "transfer_sha256": str,
    "model_sha256": str,
    "seed": int,
    "threads": int,
    "device": str,
    "torch_version": str,
    "hybridlm_version": str,
    "python_version": str,
    "transfer_seconds": (int, float),
    "seconds": (int, float),
}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def clear(directory: Path) -> None:
    """Remove an earlier artifact from `directory`, so a failed build never leaves a scorable one."""
    for name in (MANIFEST_FILE, MODEL_FILE):
        (directory / name).unlink(missing_ok=True)


def save(directory: Path, state: dict, manifest: dict) -> dict:
    """Write the weights, then the manifest (with the weights' sha256); returns the manifest written."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    clear(directory)
    model_path = directory / MODEL_FILE
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in state.items()}
    save_file(tensors, str(_temporary(model_path)), metadata={"format": FORMAT})
    os.replace(_temporary(model_path), model_path)
    manifest = {"format": FORMAT, **manifest, "model_sha256": file_sha256(model_path)}
    _temporary(directory / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(_temporary(directory / MANIFEST_FILE), directory / MANIFEST_FILE)
    return manifest


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp")


def _regular_file(path: Path) -> Path:
    if path.is_symlink() or not path.is_file():
        raise EvalError(f"no artifact in {path.parent}: {path.name} is missing (run `hybridlm transfer` first)")
    return path


def load_manifest(directory: Path) -> dict:
    """The manifest's known fields, type-checked; an EvalError for a missing or malformed one."""
    if not directory.is_dir():
        raise EvalError(f"artifact folder not found: {directory}")
    path = _regular_file(directory / MANIFEST_FILE)
    _regular_file(directory / MODEL_FILE)
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise EvalError(f"{path}: larger than {MAX_MANIFEST_BYTES} bytes; not a manifest")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise EvalError(f"{path}: not a {FORMAT} manifest")
    manifest = {}
    for key, kind in MANIFEST_TYPES.items():
        value = raw.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise EvalError(f"{path}: field {key!r} missing or not {getattr(kind, '__name__', 'a number')}")
        manifest[key] = value[:200] if isinstance(value, str) else value
    return manifest


def load_state(directory: Path, manifest: dict) -> dict:
    """The weights by name (checked_model copies them into fresh memory); the file must match the
    manifest's sha256."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = _regular_file(directory / MODEL_FILE)
    if file_sha256(path) != manifest["model_sha256"]:
        raise EvalError(f"{path}: sha256 differs from the manifest's model_sha256 (changed after the build)")
    try:
        return load_file(str(path), device="cpu")
    except (SafetensorError, OSError, ValueError) as exc:
        raise EvalError(f"{path}: cannot read the weights ({exc})") from None


def checked_model(state: dict, config):
    """A fresh HybridLM (the evaluator's own code) holding `state`, after checking every tensor."""
    import torch

    from hybridlm.model import build_meta

    reference = build_meta(config)
    expected = reference.state_dict()
    missing, extra = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or extra:
        raise EvalError(f"parameter names differ from the target: missing {missing[:3]}, unexpected {extra[:3]}")
    for name, ref in expected.items():
        t = state[name]
        if not isinstance(t, torch.Tensor):
            raise EvalError(f"{name} is a {type(t).__name__}, not a tensor")
        if tuple(t.shape) != tuple(ref.shape):
            raise EvalError(f"{name} has shape {tuple(t.shape)}, expected {tuple(ref.shape)}")
        if t.dtype != ref.dtype:
            raise EvalError(f"{name} has dtype {t.dtype}, expected {ref.dtype}")
        if t.is_meta:
            raise EvalError(f"{name} holds no data (meta tensor)")
        if not bool(torch.isfinite(t).all()):
            raise EvalError(f"{name} has non-finite values (NaN or inf)")
    fresh = {n: t.detach().to("cpu", copy=True) for n, t in state.items()}  # fresh memory, as ever
    reference.load_state_dict(fresh, strict=True, assign=True)
    return reference.eval()
