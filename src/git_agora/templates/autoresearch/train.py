"""The training script: the file to change. It trains a byte-level language model on the training
text of `prepare.py` and writes it to ARTIFACT/model.npz, where the project's fixed scorer
(`python3 prepare.py score ARTIFACT`) measures its validation bits per byte.

    python3 train.py ARTIFACT

Yours to change: the model's shape within the family prepare.py scores (context, embedding, hidden
layers, activation, a direct connection), the initialisation, the optimiser, the schedule, the batch,
the sampling of the training text. Train on the training text only (prepare.split()[0]).
"""

from __future__ import annotations

import math
import os
import sys
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"  # one BLAS thread, set before numpy loads (prepare.py says why)

import numpy as np  # noqa: E402
import prepare  # noqa: E402

# The budget is prepare.STEPS optimiser steps, fixed by the setup: the scorer reads the steps done from
# model.npz and does not score a model trained for fewer. The clock never stops training (a run the
# setup's timeout stops has no score), so the same tree gives the same model on a busy machine.
MAX_STEPS = prepare.STEPS

# The model (prepare.py's family): the last CONTEXT bytes, embedded, through the hidden layers.
CONTEXT = 12
EMBED = 24
HIDDEN = (384,)
ACTIVATION = "tanh"  # tanh | relu | gelu
DIRECT = False  # a direct connection from the input to the logits

# The optimisation: AdamW, a linear warmup then a cosine decay to FINAL_LR_FRACTION.
BATCH = 128
LEARNING_RATE = 3e-3
BETAS = (0.9, 0.99)
WEIGHT_DECAY = 0.0
WARMUP_STEPS = 50
FINAL_LR_FRACTION = 0.1
SEED = 0


def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    width = CONTEXT * EMBED
    params = {"emb": rng.normal(0.0, 1.0, (prepare.VOCAB, EMBED))}
    for i, size in enumerate(HIDDEN, start=1):
        params[f"w{i}"] = rng.normal(0.0, 1.0 / math.sqrt(width), (width, size))
        params[f"b{i}"] = np.zeros(size)
        width = size
    params["wo"] = rng.normal(0.0, 0.1 / math.sqrt(width), (width, prepare.VOCAB))
    params["bo"] = np.zeros(prepare.VOCAB)
    if DIRECT:
        params["wd"] = np.zeros((CONTEXT * EMBED, prepare.VOCAB))
    return params


def act_grad(z: np.ndarray, h: np.ndarray) -> np.ndarray:
    """d act(z) / dz, given z and h = act(z)."""
    if ACTIVATION == "tanh":
        return 1 - h * h
    if ACTIVATION == "relu":
        return (z > 0).astype(z.dtype)
    t = np.tanh(0.7978845608028654 * (z + 0.044715 * z**3))
    return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * z * z)


def loss_and_grads(params: dict[str, np.ndarray], inputs: np.ndarray, targets: np.ndarray):
    """The mean cross-entropy (nats) of the batch, and its gradient for every parameter."""
    n = len(inputs)
    x = params["emb"][inputs].reshape(n, -1)
    zs, hs = [], [x]
    for i in range(1, len(HIDDEN) + 1):
        z = hs[-1] @ params[f"w{i}"] + params[f"b{i}"]
        zs.append(z)
        hs.append(prepare.activate(ACTIVATION, z))
    logits = hs[-1] @ params["wo"] + params["bo"]
    if DIRECT:
        logits += x @ params["wd"]
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    loss = -float(np.log(probs[np.arange(n), targets] + 1e-12).mean())

    grads: dict[str, np.ndarray] = {}
    d_logits = probs
    d_logits[np.arange(n), targets] -= 1
    d_logits /= n
    grads["wo"] = hs[-1].T @ d_logits
    grads["bo"] = d_logits.sum(axis=0)
    d_h = d_logits @ params["wo"].T
    d_x = d_logits @ params["wd"].T if DIRECT else 0.0
    if DIRECT:
        grads["wd"] = x.T @ d_logits
    for i in range(len(HIDDEN), 0, -1):
        d_z = d_h * act_grad(zs[i - 1], hs[i])
        grads[f"w{i}"] = hs[i - 1].T @ d_z
        grads[f"b{i}"] = d_z.sum(axis=0)
        d_h = d_z @ params[f"w{i}"].T
    d_x = d_x + d_h
    grads["emb"] = np.zeros_like(params["emb"])
    np.add.at(grads["emb"], inputs, d_x.reshape(n, CONTEXT, EMBED))
    return loss, grads


def learning_rate(step: int) -> float:
    if step < WARMUP_STEPS:
        return LEARNING_RATE * (step + 1) / WARMUP_STEPS
    progress = (step - WARMUP_STEPS) / max(1, MAX_STEPS - WARMUP_STEPS)
    cosine = 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
    return LEARNING_RATE * (FINAL_LR_FRACTION + (1 - FINAL_LR_FRACTION) * cosine)


def train(train_text: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    params = init_params(rng)
    moments = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in params.items()}
    started = time.monotonic()  # for the progress lines only
    for step in range(MAX_STEPS):
        positions = rng.integers(0, len(train_text), BATCH)
        loss, grads = loss_and_grads(params, prepare.contexts(train_text, positions, CONTEXT), train_text[positions])
        lr = learning_rate(step)
        for name, grad in grads.items():
            m, v = moments[name]
            m *= BETAS[0]
            m += (1 - BETAS[0]) * grad
            v *= BETAS[1]
            v += (1 - BETAS[1]) * grad * grad
            m_hat = m / (1 - BETAS[0] ** (step + 1))
            v_hat = v / (1 - BETAS[1] ** (step + 1))
            params[name] -= lr * (m_hat / (np.sqrt(v_hat) + 1e-8) + WEIGHT_DECAY * params[name])
        if step % 200 == 0:
            print(f"step {step}: loss {loss / math.log(2):.3f} bits/byte, lr {lr:.2e}", file=sys.stderr)
    print(f"train.py: {MAX_STEPS} steps in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return params


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit("usage: python3 train.py ARTIFACT")
    train_text, _ = prepare.split()
    prepare.save_model(argv[0], train(train_text), ACTIVATION, MAX_STEPS)


if __name__ == "__main__":
    main(sys.argv[1:])
