"""Reference recipe: unigram prior from token counts of the stand-in corpus's *training part*.

Not a valid contribution under the task's rules (program.md, as in the paper: no training corpus),
and it needs no donor; it shows what a unigram is worth on the stand-in corpus, from text the
evaluator never scores (`hybridlm train-split`: other help topics than the 200 scored texts; the data
guard keeps refusing the evaluation part). Counts of every token after <|endoftext|> (the first of
each text included), add-alpha smoothed, with alpha chosen on a held-out half of the training part
(first half of the texts counts, second half chooses; then all texts count). Sublayers zeroed.

    hybridlm eval eval/weight_transfer/recipes/unigram_counts.py --json
"""

import torch
from recipekit import set_unigram, train_split_tokens

ALPHAS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def counts(docs, vocab_size):
    c = torch.zeros(vocab_size, dtype=torch.float64)
    for ids in docs:
        c += torch.bincount(torch.tensor(ids, dtype=torch.long), minlength=vocab_size).double()
    return c


def smoothed_logprobs(c, alpha):
    return ((c + alpha) / (c.sum() + alpha * len(c))).log()


def choose_alpha(docs, vocab_size):
    half = len(docs) // 2
    fit, held = counts(docs[:half], vocab_size), counts(docs[half:], vocab_size)
    return min(ALPHAS, key=lambda a: float(-(held * smoothed_logprobs(fit, a)).sum()))


def transfer(model, config):
    docs = train_split_tokens()
    alpha = choose_alpha(docs, config.vocab_size)
    set_unigram(model, config, smoothed_logprobs(counts(docs, config.vocab_size), alpha))
    return model
