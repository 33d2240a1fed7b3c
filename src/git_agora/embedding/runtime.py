"""Sentence vectors from an exported ONNX model with `onnxruntime` and `tokenizers`: no torch, no
sentence-transformers, so a query costs a session load (tens of milliseconds), not a torch import.

The recipe is sentence-transformers' for all-MiniLM-L6-v2: the model's own tokenizer (`tokenizer.json`)
truncating to `max_seq_length` (`sentence_bert_config.json`), padding to the longest text of a batch,
mean pooling of the last hidden state over real tokens (`mean_pool`), then unit length. Texts are
batched by token count, so a batch pads little (`length_batches`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
DEFAULT_MAX_TOKENS = 256
BATCH = 32  # measured: 16 to 64 encode at the same speed once batches are sorted by length


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling then normalisation: the mean of the token vectors where
    ``mask`` is 1 (at least 1e-9 tokens), divided by its norm (at least 1e-12)."""
    weights = mask.astype(np.float32)[..., None]
    summed = (hidden.astype(np.float32) * weights).sum(axis=1)
    mean = summed / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(mean, axis=1, keepdims=True)
    return (mean / np.maximum(norms, 1e-12)).astype(np.float32)


def length_batches(lengths: list[int], size: int) -> list[np.ndarray]:
    """Row indices grouped into batches of at most ``size``, shortest texts first (stable)."""
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i : i + size] for i in range(0, len(order), size)]


def optimise_file(source: Path, target: Path) -> None:
    """Write ``source`` with onnxruntime's graph optimisations applied (fused layer norms, GELU,
    quantised products), so that loading it later skips them. The result needs this onnxruntime."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def max_tokens(model_dir: Path) -> int:
    try:
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULT_MAX_TOKENS


def usable_cores() -> int:
    """The cores this process may run on (a container's affinity, not the host's count), at most 8."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, 8))


@dataclass(frozen=True, eq=False)
class OnnxEncoder:
    """A loaded ONNX session and its tokenizer; ``encode(texts)`` returns unit rows (n, dim) float32."""

    session: Any
    tokenizer: Any
    dim: int
    batch_size: int = BATCH

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch([str(t) for t in texts])
        for rows in length_batches([len(e.ids) for e in encodings], self.batch_size):
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for j, i in enumerate(rows):
                ids[j, : len(encodings[i].ids)] = encodings[i].ids
                mask[j, : len(encodings[i].ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            (hidden,) = self.session.run(None, feed)
            out[rows] = mean_pool(hidden, mask)
        return out


def open_encoder(
    model_dir: Path, onnx_file: Path, dim: int, threads: int | None = None, optimise: bool = False
) -> OnnxEncoder:
    """Load ``onnx_file`` with the tokenizer of ``model_dir``. Raises whatever onnxruntime raises for a
    damaged file (the caller rebuilds it).

    ``threads``: intra-op threads (None: every usable core; one query needs 1, and creating a thread
    pool on a busy machine costs more than the query). ``optimise``: run onnxruntime's graph
    optimisations now; the cached file was optimised when it was exported, so loading skips them.
    """
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()  # batches are padded here, to their longest text
    tokenizer.enable_truncation(max_length=max_tokens(model_dir))
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: a warning is not for the user's terminal
    options.intra_op_num_threads = threads or usable_cores()
    if not optimise:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    if names != set(INPUTS):
        raise ValueError(f"{onnx_file.name} takes {sorted(names)}, not {list(INPUTS)}")
    return OnnxEncoder(session, tokenizer, dim)
