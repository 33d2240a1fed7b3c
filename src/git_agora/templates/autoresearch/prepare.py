"""The fixed part of this project (an evaluator file: the setup fixes it, and a contribution that
changes it is invalid): the data, its split, the model format the scorer reads, and the metric.

The data is English prose that ships with Python, the help topics of `pydoc_data`, as UTF-8 bytes:
the tokens are the 256 byte values. Every 8th topic (sorted by name) is held out for validation; the
others are the training text. The metric is `val_bpb`, validation bits per byte (lower is better):
the mean of -log2 p(byte | the bytes before it) over the held-out text (at most VAL_BYTES of it).

The scorer evaluates one family of models, a multilayer perceptron over the last `context` bytes
(Bengio et al., 2003), which the build writes to ARTIFACT/model.npz (`save_model`):

    emb      [256, d]          byte embeddings; the input x is the concatenation of the embeddings of
                               the last `context` bytes (bytes before the start of the text are 0)
    w1, b1 .. wN, bN           N >= 0 hidden layers: h = act(h @ w + b), starting from h = x
    wo, bo   [width, 256], [256]   the output logits: h @ wo + bo (+ x @ wd with a direct connection)
    wd       [context * d, 256]    optional: a direct connection from the input to the logits
    act      tanh | relu | gelu

    python3 prepare.py                          the data: sizes and digest
    python3 prepare.py score ARTIFACT           prints {"val_bpb": ..., "val_bytes": ..., "params": ...,
                                                "data_sha256": ...}: the last line, one JSON object
    python3 prepare.py score ARTIFACT --quick   scores the first QUICK_BYTES held-out bytes, after any number
                                                of steps (not comparable: `git agora run --quick`)

The budget is STEPS training steps, fixed here (the build cannot change it): model.npz records the
steps the build took (`save_model`), and a model trained for fewer is not scored; the scorer prints
{"incomplete": ...} instead, which git-agora records as "the run is incomplete" (a failure, never a
score). The wall clock never changes a score: it can only stop a run (the setup's timeout).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import zipfile
from pydoc_data.topics import topics
from typing import Any

# one BLAS thread, set before numpy loads: the same sums in the same order on every machine, and no
# threads spinning against each other on a busy one (two threads on two shared cores ran 7x slower)
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import numpy as np  # noqa: E402

VOCAB = 256  # the tokens are bytes
VAL_EVERY = 8  # every 8th topic is held out
VAL_BYTES = 40_000  # at most this much held-out text is scored
QUICK_BYTES = 4_000
MAX_CONTEXT = 64
MAX_PARAMS = 4_000_000  # the scorer's budget: larger models are refused
ACTIVATIONS = ("tanh", "relu", "gelu")
STEPS = 2000  # the training budget, in optimiser steps: every result trains exactly this long


def split() -> tuple[np.ndarray, np.ndarray]:
    """(train, val): the training and the held-out text as uint8 arrays of UTF-8 bytes."""
    names = sorted(topics)
    val = "".join(topics[n] for n in names[::VAL_EVERY]).encode()[:VAL_BYTES]
    train = "".join(topics[n] for i, n in enumerate(names) if i % VAL_EVERY).encode()
    return np.frombuffer(train, dtype=np.uint8), np.frombuffer(val, dtype=np.uint8)


def data_sha256() -> str:
    """A digest of both parts (Python versions ship different help texts: results on two never compare)."""
    train, val = split()
    return hashlib.sha256(train.tobytes() + b"\0" + val.tobytes()).hexdigest()[:16]


def contexts(data: np.ndarray, positions: np.ndarray, context: int) -> np.ndarray:
    """[len(positions), context] byte values: the `context` bytes before each position (0 before the start)."""
    padded = np.concatenate([np.zeros(context, dtype=np.uint8), data])
    return padded[positions[:, None] + np.arange(context)[None, :]]


def activate(name: str, z: np.ndarray) -> np.ndarray:
    if name == "tanh":
        return np.tanh(z)
    if name == "relu":
        return np.maximum(z, 0)
    return 0.5 * z * (1 + np.tanh(0.7978845608028654 * (z + 0.044715 * z**3)))  # gelu, tanh form


def save_model(folder: str, params: dict[str, np.ndarray], act: str, steps: int) -> None:
    """Write the model (the arrays named above) to FOLDER/model.npz, in the format `load_model` reads,
    with the number of training steps it took (`STEPS` for a complete run)."""
    os.makedirs(folder, exist_ok=True)
    arrays: dict[str, Any] = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
    np.savez(os.path.join(folder, "model.npz"), **arrays, act=np.array(act), steps=np.array(steps, dtype=np.int64))


def load_model(folder: str) -> dict:
    """The model in FOLDER/model.npz, checked: refused (SystemExit, one line) unless it is well formed."""
    path = os.path.join(folder, "model.npz")
    try:
        with zipfile.ZipFile(path) as archive:
            if sum(i.file_size for i in archive.infolist()) > 8 * MAX_PARAMS + (1 << 20):
                raise SystemExit("model.npz is larger than the scorer's budget")
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise SystemExit(f"model.npz cannot be read: {exc}") from None
    act = arrays.pop("act", None)
    steps = arrays.pop("steps", None)
    if steps is not None and (steps.dtype.kind not in "iu" or steps.shape != () or not 0 <= int(steps) <= STEPS):
        raise SystemExit(f"steps must be an integer from 0 to the budget, {STEPS}")
    if act is None or act.dtype.kind != "U" or act.shape != () or str(act) not in ACTIVATIONS:
        raise SystemExit(f"act must be one of {', '.join(ACTIVATIONS)}")
    layers = 0
    while f"w{layers + 1}" in arrays:
        layers += 1
    expected = {"emb", "wo", "bo"} | {f"{p}{i}" for p in "wb" for i in range(1, layers + 1)}
    if "wd" in arrays:
        expected.add("wd")
    if set(arrays) != expected:
        raise SystemExit(f"model.npz holds {sorted(arrays)}; expected {sorted(expected)}")
    for name, array in arrays.items():
        if array.dtype.kind != "f" or not np.all(np.isfinite(array)):
            raise SystemExit(f"{name} must hold finite floating-point numbers")
    params = {k: v.astype(np.float64) for k, v in arrays.items()}
    emb = params["emb"]
    if emb.ndim != 2 or emb.shape[0] != VOCAB or emb.shape[1] < 1:
        raise SystemExit(f"emb must be [{VOCAB}, d]")
    width = params["w1"].shape[0] if layers else params["wo"].shape[0]
    context = width // emb.shape[1]
    if context * emb.shape[1] != width or not 1 <= context <= MAX_CONTEXT:
        raise SystemExit(f"the first layer's input must be context x d, with context from 1 to {MAX_CONTEXT}")
    for i in range(1, layers + 1):
        w, b = params[f"w{i}"], params[f"b{i}"]
        if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],):
            raise SystemExit(f"w{i} must be [{width}, n] and b{i} [n]")
        width = w.shape[1]
    if params["wo"].shape != (width, VOCAB) or params["bo"].shape != (VOCAB,):
        raise SystemExit(f"wo must be [{width}, {VOCAB}] and bo [{VOCAB}]")
    if "wd" in params and params["wd"].shape != (context * emb.shape[1], VOCAB):
        raise SystemExit(f"wd must be [{context * emb.shape[1]}, {VOCAB}]")
    count = sum(v.size for v in params.values())
    if count > MAX_PARAMS:
        raise SystemExit(f"the model has {count} parameters; the scorer's budget is {MAX_PARAMS}")
    done = 0 if steps is None else int(steps)
    return {"params": params, "act": str(act), "layers": layers, "context": context, "count": count, "steps": done}


def log_probs(model: dict, inputs: np.ndarray) -> np.ndarray:
    """[n, 256] natural-log probabilities of the next byte after each row of `inputs` ([n, context])."""
    params = model["params"]
    x = params["emb"][inputs].reshape(len(inputs), -1)
    h = x
    for i in range(1, model["layers"] + 1):
        h = activate(model["act"], h @ params[f"w{i}"] + params[f"b{i}"])
    logits = h @ params["wo"] + params["bo"]
    if "wd" in params:
        logits = logits + x @ params["wd"]
    logits = logits - logits.max(axis=1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


def val_bpb(model: dict, val: np.ndarray, batch: int = 4096) -> float:
    """Bits per byte of `val` under `model`: every byte scored, in order, from the bytes before it."""
    bits = 0.0
    for start in range(0, len(val), batch):
        positions = np.arange(start, min(start + batch, len(val)))
        logp = log_probs(model, contexts(val, positions, model["context"]))
        bits -= float(logp[np.arange(len(positions)), val[positions]].sum()) / math.log(2)
    return bits / len(val)


def main(argv: list[str]) -> None:
    if not argv:
        train, val = split()
        print(json.dumps({"train_bytes": len(train), "val_bytes": len(val), "data_sha256": data_sha256()}))
        return
    if argv[0] != "score" or len(argv) < 2:
        raise SystemExit("usage: python3 prepare.py [score ARTIFACT [--quick]]")
    model = load_model(argv[1])
    quick = "--quick" in argv[2:]
    if model["steps"] < STEPS and not quick:  # stopped short: no score (the evaluation fails as incomplete)
        print(json.dumps({"incomplete": "steps", "steps": model["steps"], "budget": STEPS}))
        return
    _, val = split()
    if quick:  # a debugging score: less text, any number of steps (never comparable)
        val = val[:QUICK_BYTES]
    result = {
        "val_bpb": round(val_bpb(model, val), 6),
        "val_bytes": len(val),
        "params": model["count"],
        "data_sha256": data_sha256(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
