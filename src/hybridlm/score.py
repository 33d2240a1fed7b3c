"""The score step (`hybridlm score DIR`): load an artifact's weights into a HybridLM built by hybridlm's
own code and score bits per byte. It never imports or runs the transfer file.

Scoring: each text is its own document, tokenised with GPT-2 BPE and preceded by <|endoftext|> (50256)
as context, so every token of the text is predicted exactly once. The input sequence [eot, t1..tn-1]
with targets [t1..tn] is cut into non-overlapping windows of `chunk` (512) positions; each window is
scored on its own, with no context carried over. bpb = (sum of next-token losses in nats / ln 2) /
(UTF-8 bytes of the texts); loss_nats = the mean loss per predicted token.
"""

from __future__ import annotations

import math
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hybridlm import artifact
from hybridlm.determinism import configure_determinism, default_threads, device_label
from hybridlm.errors import EvalError

if TYPE_CHECKING:
    from hybridlm.data import TextSet


@dataclass(frozen=True)
class ScoreOptions:
    artifact: str
    data: str | None = None
    n_texts: int = 200
    chunk: int = 512
    device: str = "cpu"
    threads: int | None = None
    batch_size: int = 4
    config_name: str = "full"  # the architecture the scorer expects; the artifact must match it


@dataclass(frozen=True)
class EvalTexts:
    textset: TextSet
    token_docs: list
    n_bytes: int


def check_options(chunk: int, batch_size: int) -> None:
    if chunk < 1:
        raise EvalError(f"--chunk must be positive, got {chunk}")
    if batch_size < 1:
        raise EvalError(f"--batch-size must be positive, got {batch_size}")


def load_eval_texts(data: str | None, n_texts: int) -> EvalTexts:
    from hybridlm.data import DataError, load_texts
    from hybridlm.tokenizer import encode_batch

    try:
        textset = load_texts(data, n_texts)
    except DataError as exc:
        raise EvalError(str(exc)) from None
    token_docs = encode_batch(list(textset.texts))
    n_bytes = sum(len(t.encode("utf-8")) for t in textset.texts)
    if n_bytes == 0 or sum(map(len, token_docs)) == 0:
        raise EvalError(f"{textset.source}: the selected texts are empty; nothing to score")
    return EvalTexts(textset, token_docs, n_bytes)


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
            losses = F.cross_entropy(
                logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-100, reduction="none"
            )
            total += float(losses.double().sum())
            count += int((targets != -100).sum())
    return total, count


def load_checked_model(directory: Path, manifest: dict, config_name: str):
    from hybridlm.model import config_named

    config = config_named(config_name)
    if manifest["config"] != config_name:
        raise EvalError(
            f"the artifact was built for --config {manifest['config']!r}; this score expects "
            f"{config_name!r} (pass the same --config to both steps)"
        )
    return artifact.checked_model(artifact.load_state(directory, manifest), config)


def score_artifact(opts: ScoreOptions) -> dict:
    """The whole score step; returns the result record or raises EvalError. Every field is computed here
    or read from this scorer's own data: nothing the artifact's manifest says is repeated (the artifact
    is the build's to write, and a scorer that echoed it would publish whatever the build chose)."""
    started = time.perf_counter()
    check_options(opts.chunk, opts.batch_size)
    directory = Path(opts.artifact)
    manifest = artifact.load_manifest(directory)
    texts = load_eval_texts(opts.data, opts.n_texts)
    threads = opts.threads or default_threads()
    configure_determinism(opts.device, threads)
    import torch

    from hybridlm.model import count_parameters

    model = load_checked_model(directory, manifest, opts.config_name)
    t0 = time.perf_counter()
    total_nats, n_tokens = score(model, texts.token_docs, opts.chunk, opts.device, opts.batch_size)
    score_seconds = time.perf_counter() - t0
    if not math.isfinite(total_nats):
        raise EvalError("the model's loss is not finite on the evaluation texts")
    bpb = total_nats / math.log(2) / texts.n_bytes
    return {
        "bpb": bpb,
        "bpb_hex": bpb.hex(),
        "loss_nats": total_nats / n_tokens,
        "tokens": n_tokens,
        "bytes": texts.n_bytes,
        "texts": len(texts.textset.texts),
        "chunk": opts.chunk,
        "data_source": texts.textset.source,
        "data_sha256": texts.textset.sha256,
        "comparable_to_paper": texts.textset.comparable_to_paper,
        "data_note": texts.textset.note,
        "config": opts.config_name,
        "parameters": count_parameters(model),
        "device": device_label(opts.device),
        "threads": threads,
        "batch_size": opts.batch_size,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "score_seconds": round(score_seconds, 3),
        "tokens_per_second": round(n_tokens / score_seconds, 1) if score_seconds > 0 else None,
        "seconds": round(time.perf_counter() - started, 3),
    }
