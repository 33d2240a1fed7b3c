"""Shared pieces of the weight-transfer recipes (a helper module next to the transfer files: the build
step appends the transfer file's folder to sys.path, so `import recipekit` works there).

Everything here uses only donors' weights and forward passes, except `train_split_tokens`, which reads
the stand-in corpus's training part (see `hybridlm.train_split`; outside the paper's rules, used only
by the reference recipe `unigram_counts.py`).
"""

from __future__ import annotations

import math

import torch

from hybridlm import donors

END_OF_TEXT = 50256
LOGPROB_CLIP = 25.0  # Algorithm 1: donor log-softmax clipped to [-25, 25]


class RecipeError(RuntimeError):
    """A recipe cannot run with the donors it was given."""


# --- donors -----------------------------------------------------------------------------------------


def donor_names() -> list[str]:
    names = donors.list_donors()
    if not names:
        raise RecipeError("no donors: pass --donors DIR to the evaluator or set HYBRIDLM_DONORS")
    return names


def load_all(vocab_size: int | None = None) -> dict[str, torch.nn.Module]:
    """Every donor (each checked for weights before any work), or those whose vocabulary is `vocab_size`
    (predictions are only comparable in the target's token space: GPT-2's 50,257 tokens)."""
    names = donor_names()
    for name in names:
        donors.check_donor_weights(name)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # e.g. the Mamba's notice that it runs its slow path on CPU
    hf_logging.disable_progress_bar()
    if vocab_size is not None:
        names = [n for n in names if getattr(donors.load_donor_config(n), "vocab_size", None) == vocab_size]
        if not names:
            raise RecipeError(f"no donor with the target's vocabulary of {vocab_size} tokens in {donors.donor_root()}")
    return {name: donors.load_donor(name, dtype=torch.float32) for name in names}


@torch.no_grad()
def last_logprobs(donor, seqs: torch.Tensor) -> torch.Tensor:
    """The donor's next-token log-softmax after each sequence (batch, T) -> (batch, vocab), float32."""
    logits = donor(input_ids=seqs, logits_to_keep=1).logits[:, -1].float()
    return torch.log_softmax(logits, dim=-1)


@torch.no_grad()
def sampled_unigram(donor, n_seqs: int = 16, length: int = 32, seed: int = 0) -> torch.Tensor:
    """The donor's own token marginal: sample `n_seqs` sequences from it (ancestral, temperature 1,
    starting at <|endoftext|>) and average its predicted next-token distribution over every position.
    Forward passes only; returns probabilities (vocab,), float64."""
    g = torch.Generator().manual_seed(seed)
    seqs = torch.full((n_seqs, 1), END_OF_TEXT, dtype=torch.long)
    total = None
    for _ in range(length):
        probs = last_logprobs(donor, seqs).double().exp()
        total = probs.sum(0) if total is None else total + probs.sum(0)
        nxt = torch.multinomial(probs.float(), 1, generator=g)
        seqs = torch.cat([seqs, nxt], dim=1)
    assert total is not None
    return total / total.sum()


def blended_unigram(models: dict, **kwargs) -> torch.Tensor:
    """Mean of the donors' sampled marginals (equal weights); probabilities (vocab,), float64."""
    return torch.stack([sampled_unigram(m, **kwargs) for m in models.values()]).mean(0)


# --- the target -------------------------------------------------------------------------------------


@torch.no_grad()
def disable_sublayers(model) -> None:
    """Zero every residual sublayer's output projection: attention, SwiGLU and SSM add exactly nothing,
    so the network computes head(norm(embed(token)))."""
    for name, p in model.named_parameters():
        if name.endswith(("attn.w_o.weight", "ffn.w_down.weight", "ssm.out_proj.weight")):
            p.zero_()


def norm_gain(config) -> float:
    """What the final RMSNorm (weight 1) multiplies a hidden state [1, 0, ..., 0] by."""
    return 1.0 / math.sqrt(1.0 / config.d_model + config.norm_eps)


@torch.no_grad()
def set_unigram(model, config, logprobs: torch.Tensor) -> None:
    """Every token embeds as [1, 0, ..., 0] and the head maps that to `logprobs`: with the sublayers off,
    the model predicts the same distribution at every position."""
    disable_sublayers(model)
    model.embed.weight.zero_()
    model.embed.weight[:, 0] = 1.0
    model.lm_head.weight.zero_()
    model.lm_head.weight[:, 0] = (logprobs.double() / norm_gain(config)).float()


def unigram_logprobs(probs: torch.Tensor) -> torch.Tensor:
    return probs.double().clamp_min(math.exp(-LOGPROB_CLIP)).log()


# --- randomized SVD (Halko, Martinsson and Tropp), torch, explicit generator ------------------------


def randomized_svd(a: torch.Tensor, rank: int, oversample: int = 32, n_iter: int = 1, seed: int = 0):
    """U (m, rank), S (rank,), Vh (rank, n) of the best rank-`rank` approximation of `a`, found in a random
    subspace of rank + oversample dimensions with `n_iter` power iterations; deterministic given `seed`."""
    m, n = a.shape
    k = min(rank + oversample, m, n)
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(a @ torch.randn(n, k, generator=g, dtype=a.dtype))
    for _ in range(n_iter):
        z, _ = torch.linalg.qr(a.T @ q)
        q, _ = torch.linalg.qr(a @ z)
    u_small, s, vh = torch.linalg.svd(q.T @ a, full_matrices=False)
    return (q @ u_small)[:, :rank], s[:rank], vh[:rank]


# --- the training split (reference baseline only) ---------------------------------------------------


def train_split_tokens() -> list[list[int]]:
    """The stand-in corpus's training part, tokenised, one list per text (never an evaluation text)."""
    from hybridlm.tokenizer import encode_batch
    from hybridlm.train_split import train_texts

    return encode_batch(list(train_texts()))
