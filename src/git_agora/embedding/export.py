"""Export the packaged sentence model to ONNX, once per machine; the only step of the fast path that
needs torch.

The encoder (transformers' BertModel, eager attention) is traced with `torch.onnx.export`, quantised
to int8 where that keeps the vectors (`quantise`), and saved with onnxruntime's graph optimisations
applied (loading it later skips them). Every export is checked against torch on `PROBES`: when int8
does not reach `AGREEMENT` on each of them the float32 export is kept, and when that does not either
the export fails (the caller falls back to torch).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .quantise import quantise
from .runtime import INPUTS, max_tokens, mean_pool, open_encoder, optimise_file

AGREEMENT = 0.99  # least cosine with the torch vector, per probe text
PROBES = (
    "Net2Net width expansion of gpt2 MLPs with 0.01 noise, doubled the batch size",
    "Verify: interpolated Kneser-Ney smoothing of order 5\n\nReproduced: 1.412 bpc against the reported 1.409.",
    "bake bread",
    "Longer learning rate warmup stabilises training of the hybrid model; the loss spikes at step 1,200 "
    "disappear and the final bits per byte improve by 0.004 over three seeds.",
    "Idea: transfer the attention weights of the donor model layer by layer, re-initialising the rest. " * 12,
    "dropout",
)


@dataclass(frozen=True)
class Exported:
    """An export written to ``path``: ``precision`` int8 or float32, its least probe agreement."""

    path: Path
    precision: str
    agreement: float
    seconds: float
    probe_vector: tuple[float, ...]  # PROBES[0] through the written file, to check it on load

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "precision": self.precision, "agreement": self.agreement}


def export_model(model_dir: Path, target: Path) -> Exported:
    """Export ``model_dir`` (a sentence-transformers BERT directory) to ``target``, atomically.

    Raises ImportError without torch/transformers, RuntimeError when no export agrees with torch.
    """
    start = time.perf_counter()
    with _quiet():
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()
        transformers_logging.disable_progress_bar()  # "Loading weights" is not for the user's terminal
        model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".export-", dir=target.parent) as tmp:
        float32 = Path(tmp) / "float32.onnx"
        with _quiet():
            _trace(torch, model, float32)
            reference = _torch_vectors(torch, model, model_dir, list(PROBES))
        dim = reference.shape[1]
        best = 0.0
        for precision, source in _candidates(float32, Path(tmp), model_dir):
            path = source.with_suffix(".optimised.onnx")
            optimise_file(source, path)
            encoder = open_encoder(model_dir, path, dim)
            vectors = encoder.encode(list(PROBES))
            agreement = float(np.einsum("ij,ij->i", vectors, reference).min())
            best = max(best, agreement)
            if agreement >= AGREEMENT:
                probe = tuple(float(x) for x in encoder.encode([PROBES[0]])[0])
                os.replace(path, target)
                return Exported(target, precision, agreement, time.perf_counter() - start, probe)
    raise RuntimeError(f"the ONNX export agrees with torch only to cosine {best:.3f}")


def _candidates(float32: Path, folder: Path, model_dir: Path) -> Iterator[tuple[str, Path]]:
    """The exports to try, best first, each made only when the one before it disagreed with torch: int8,
    int8 with 7-bit weights (`reduce_range`: without VNNI, an AVX2 CPU's int8 products saturate, and the
    vectors fell to cosine 0.954), then float32."""
    for name, reduced in (("int8", False), ("int8-reduced", True)):
        path = folder / f"{name}.onnx"
        with _quiet():
            made = quantise(float32, path, model_dir, reduce_range=reduced)
        if made:
            yield "int8", path
    yield "float32", float32


class _Encoder:
    """The model with keyword arguments and one output, as the ONNX graph takes them."""

    def __new__(cls, torch: Any, model: Any) -> Any:
        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                return out.last_hidden_state

        return Wrapped().eval()


def _trace(torch: Any, model: Any, path: Path) -> None:
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()  # a padded row: the mask must stay an input of the graph
    dynamic = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    with torch.no_grad():
        torch.onnx.export(
            _Encoder(torch, model),
            (ids, mask, torch.zeros_like(ids)),
            str(path),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=dynamic,
            opset_version=17,
            dynamo=False,
        )


def _torch_vectors(torch: Any, model: Any, model_dir: Path, texts: list[str]) -> np.ndarray:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_tokens(model_dir))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    batch = tokenizer.encode_batch(texts)
    ids = torch.tensor([e.ids for e in batch], dtype=torch.long)
    mask = torch.tensor([e.attention_mask for e in batch], dtype=torch.long)
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
    return mean_pool(hidden.numpy(), mask.numpy())


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Exporters warn a lot (tracer warnings, a quantiser hint on the root logger): none of it is for users."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)
