"""Tiny local donors for the recipes: a GPT-2 and a Mamba, trained a few steps on the stand-in corpus's
*training part* (`hybridlm train-split`, disjoint from the texts the evaluator scores), saved with
`save_pretrained`. No download: both are built from a config with `transformers`.

    python eval/weight_transfer/recipes/make_donors.py DIR [--steps 300] [--width 64]

The donors' shapes match the target's `tiny` config (hidden 64; the Mamba has expand 2, d_state 16,
d_conv 4, dt_rank 4), so a slice copy fills whole tensors there. Training is deterministic given the
seed (same machine, same thread count). Training a donor is allowed by the task: only the target's
weights may never see a gradient.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

VOCAB = 50257
END_OF_TEXT = 50256
GPT2_NAME, MAMBA_NAME = "gpt2-tiny", "mamba-tiny"


def train_tokens() -> list[int]:
    """The training part of the stand-in corpus as one token stream, each text after <|endoftext|>."""
    from hybridlm.tokenizer import encode_batch
    from hybridlm.train_split import train_texts

    stream: list[int] = []
    for ids in encode_batch(list(train_texts())):
        stream += [END_OF_TEXT, *ids]
    return stream


def gpt2_config(width: int, layers: int):
    from transformers import GPT2Config

    return GPT2Config(vocab_size=VOCAB, n_positions=256, n_embd=width, n_layer=layers, n_head=2)


def mamba_config(width: int, layers: int):
    from transformers import MambaConfig

    return MambaConfig(
        vocab_size=VOCAB,
        hidden_size=width,
        state_size=16,
        num_hidden_layers=layers,
        expand=2,
        conv_kernel=4,
        time_step_rank=max(1, width // 16),
        use_bias=False,
        bos_token_id=END_OF_TEXT,
        eos_token_id=END_OF_TEXT,
        pad_token_id=END_OF_TEXT,
    )


def train(model, tokens: list[int], steps: int, batch: int = 8, length: int = 64, lr: float = 3e-3, seed: int = 0):
    """AdamW on random windows of the token stream; returns the last loss (nats per token)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    data = torch.tensor(tokens)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    loss = float("nan")
    for _ in range(steps):
        starts = torch.randint(0, len(data) - length - 1, (batch,), generator=g)
        x = torch.stack([data[s : s + length] for s in starts.tolist()])
        out = model(input_ids=x, labels=x)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss = out.loss.item()
    return model.eval(), loss


def make_donors(
    root, steps: int = 300, width: int = 64, layers: int = 2, kinds=("gpt2", "mamba"), batch: int = 8, log=None
) -> Path:
    """Train and save the donors under `root` (one folder each, `batch` windows of 64 tokens a step)."""
    import torch
    from transformers import GPT2LMHeadModel, MambaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the Mamba's "slow path" notice on CPU is expected
    root = Path(root)
    tokens = train_tokens()
    builders = {
        "gpt2": (GPT2_NAME, lambda: GPT2LMHeadModel(gpt2_config(width, layers))),
        "mamba": (MAMBA_NAME, lambda: MambaForCausalLM(mamba_config(width, layers))),
    }
    for kind in kinds:
        name, build = builders[kind]
        torch.manual_seed(0)
        started = time.perf_counter()
        model, loss = train(build(), tokens, steps, batch=batch)
        model.save_pretrained(root / name)
        if log:
            log(f"{name}: {steps} steps, last loss {loss:.3f} nats, {time.perf_counter() - started:.0f} s")
    return root


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="folder to write the donors into (one subfolder each)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    make_donors(args.out, args.steps, args.width, args.layers, log=lambda m: print(m, file=sys.stderr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
