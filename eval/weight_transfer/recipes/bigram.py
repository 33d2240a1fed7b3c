"""Recipe: Stage A of the paper's Algorithm 1, a bigram transition prior from donor predictions, factorised
by randomized SVD into the embedding and the head (the paper's Table 4, 2.1284 bpb).

1. Rows: the ROWS tokens the donors predict most often (their sampled marginals, as in unigram.py),
   and <|endoftext|>. A full 50,257 x 50,257 table needs a GPU (the paper: five minutes on an H100);
   ROWS x 50,257 fits a CPU. Tokens outside the rows embed as the anchor only (a unigram prediction).
2. For each donor j, context p (PREFIXES, after <|endoftext|>) and row token v: the donor's next-token
   log-softmax after (p, v), clipped to [-25, 25], weighted per row by w_{j,p}(v): the z-scores, across
   the row tokens, of its naturalness (the donor's log-probability of v after p) and of its variance
   (of the row's log-probabilities), w = clip(1 + (z_nat + z_var) / 4, 0.5, 1.5), normalised over the
   contexts. M(v, .) = sum_j alpha_j sum_p w_{j,p}(v) logprob_{j,p}(v, .), alpha_j equal.
3. u = column mean of M (the anchor); C = M - 1 u^T.
4. Randomized SVD of C to rank d - 1 (oversampling 32, one power iteration, seed 0).
5. Embedding: column 0 = 1, columns 1.. = U / sqrt(d); head: column 0 = u / (g T_u), columns 1.. =
   V S sqrt(d) / (g T_b), g the final RMSNorm's gain; every sublayer's output projection = 0, norms = 1.
   The network then computes logits(v) = u / T_u + C_r(v, .) / T_b (times RMSNorm's per-row factor
   1 / sqrt(1 + |U_v|^2 / d), within 1% of 1): a factorised bigram model.
Forward passes only, one per (donor, context, row); memory: three ROWS x vocab float32 tables (the
blend, one donor's weighted sum, one context's block), 600 MB at ROWS = 1024.

    hybridlm eval eval/weight_transfer/recipes/bigram.py --donors DIR --json
"""

import math

import torch
from recipekit import (
    END_OF_TEXT,
    LOGPROB_CLIP,
    blended_unigram,
    disable_sublayers,
    last_logprobs,
    load_all,
    norm_gain,
    randomized_svd,
)

ROWS = 1024
PREFIXES = ("", "\n", "\n\n", " the", ".", ",", " is", " of")
BATCH = 256
T_U, T_B = 1.0, 1.0


def prefix_ids(prefixes=PREFIXES) -> list[list[int]]:
    from hybridlm.tokenizer import encode

    return [[END_OF_TEXT, *encode(p)] for p in prefixes]


def row_tokens(models, n_rows: int) -> torch.Tensor:
    probs = blended_unigram(models).clone()
    probs[END_OF_TEXT] = math.inf  # always a row: every document starts from it
    return torch.sort(torch.topk(probs, min(n_rows, len(probs))).indices).values


def _zscore(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean()) / x.std().clamp_min(1e-6)


def context_rows(donor, context: list[int], rows: torch.Tensor, batch: int):
    """Yield (start, log-softmax block) for the sequences (context, v), v in rows, in batches."""
    for start in range(0, len(rows), batch):
        v = rows[start : start + batch]
        seqs = torch.cat([torch.tensor(context).expand(len(v), -1), v[:, None]], dim=1)
        yield start, last_logprobs(donor, seqs).clamp(-LOGPROB_CLIP, LOGPROB_CLIP)


def context_block(donor, context: list[int], rows: torch.Tensor, out: torch.Tensor, batch: int) -> torch.Tensor:
    """Write the donor's log-softmax after each (context, v), v in rows, into `out`; return the raw row
    weights w~_p(v) = clip(1 + (z_nat + z_var) / 4, 0.5, 1.5), z-scores across the rows."""
    natural = last_logprobs(donor, torch.tensor([context]))[0, rows]
    for start, block in context_rows(donor, context, rows, batch):
        out[start : start + len(block)] = block
    return (1 + (_zscore(natural) + _zscore(out.var(dim=1))) / 4).clamp(0.5, 1.5)


def transition_table(models, rows: torch.Tensor, contexts, batch: int = BATCH) -> torch.Tensor:
    """M (rows, vocab), float32: the weighted, blended donor log-probabilities after each row token. One
    pass per donor and context; memory: the table, one context's block, and one donor's sum."""
    vocab = next(iter(models.values())).config.vocab_size
    block = torch.empty(len(rows), vocab)
    table = torch.zeros(len(rows), vocab) if len(models) > 1 else None
    for donor in models.values():
        weighted, total = torch.zeros(len(rows), vocab), torch.zeros(len(rows))
        for context in contexts:
            w = context_block(donor, context, rows, block, batch)
            weighted.addcmul_(w[:, None], block)
            total += w
        weighted /= total[:, None]  # weights normalised over the contexts
        if table is None:
            return weighted
        table.add_(weighted, alpha=1.0 / len(models))
    assert table is not None
    return table


@torch.no_grad()
def set_bigram(model, config, rows: torch.Tensor, table: torch.Tensor, t_u: float = T_U, t_b: float = T_B):
    d = config.d_model
    anchor = table.mean(0)
    table -= anchor  # C = M - 1 u^T, in place: one table in memory
    rank = min(d - 1, len(rows) - 1)
    u, s, vh = randomized_svd(table, rank, oversample=32, n_iter=1, seed=0)
    g = norm_gain(config)
    disable_sublayers(model)
    model.embed.weight.zero_()
    model.embed.weight[:, 0] = 1.0
    model.embed.weight[rows, 1 : rank + 1] = u / math.sqrt(d)
    model.lm_head.weight.zero_()
    model.lm_head.weight[:, 0] = anchor / (g * t_u)
    model.lm_head.weight[:, 1 : rank + 1] = (vh.T * s) * (math.sqrt(d) / (g * t_b))


def transfer(model, config):
    models = load_all(vocab_size=config.vocab_size)
    rows = row_tokens(models, ROWS)
    set_bigram(model, config, rows, transition_table(models, rows, prefix_ids()))
    return model
