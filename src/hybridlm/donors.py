"""Donor models for transfer(): local Hugging Face folders, read offline.

The evaluator points this module at `--donors DIR` (or the HYBRIDLM_DONORS environment variable), the
way the paper's workers read donors from object storage. Inside transfer():

    from hybridlm import donors
    for name in donors.list_donors():
        donor = donors.load_donor(name)          # a transformers model, eval mode, on CPU
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "HYBRIDLM_DONORS"
_root: Path | None = None


class DonorError(LookupError):
    pass


def set_donor_root(path) -> None:
    """Set (or with None, unset) the folder whose subfolders are donor models."""
    global _root
    _root = Path(path) if path is not None else None


def donor_root() -> Path | None:
    if _root is not None:
        return _root
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else None


def list_donors() -> list[str]:
    """Names (subfolder names, sorted) of the donor folders that hold a `config.json`."""
    root = donor_root()
    if root is None or not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "config.json").is_file())


def donor_path(name: str) -> Path:
    root = donor_root()
    if root is None:
        raise DonorError("no donor folder: pass --donors DIR to the evaluator or set HYBRIDLM_DONORS")
    path = root / name
    if name not in list_donors():
        raise DonorError(f"no donor {name!r} in {root} (have: {', '.join(list_donors()) or 'none'})")
    return path


WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def check_donor_weights(name: str) -> Path:
    """The donor's folder, if it holds weights (safetensors or PyTorch, single or sharded)."""
    path = donor_path(name)
    if not any((path / f).is_file() for f in WEIGHT_FILES):
        raise DonorError(f"donor {name!r} in {path.parent} has no weights (model.safetensors or pytorch_model.bin)")
    return path


def load_donor_config(name: str):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(donor_path(name), local_files_only=True)


def load_donor(name: str, **kwargs):
    """The donor as a transformers causal LM (`AutoModelForCausalLM`), offline, in eval mode."""
    from transformers import AutoModelForCausalLM

    kwargs.setdefault("local_files_only", True)
    model = AutoModelForCausalLM.from_pretrained(check_donor_weights(name), **kwargs)
    return model.eval()


def load_donor_state_dict(name: str) -> dict:
    """The donor's tensors by name, without building its module."""
    return {k: v for k, v in load_donor(name).state_dict().items()}
