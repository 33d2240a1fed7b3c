"""Recipe: unigram prior from donor predictions, residual sublayers zeroed (the paper's Table 4, 2.5151 bpb).

Each donor (GPT-2 vocabulary) samples 16 sequences of 32 tokens from itself, starting at
<|endoftext|>; its predicted next-token distributions, averaged over every position, estimate its
token marginal. The donors' marginals are averaged, and the target is set to predict that one
distribution everywhere: every sublayer's output projection is zeroed, every token embeds as
[1, 0, ..., 0] and the head's first column holds the log-probabilities. Forward passes only.

    hybridlm eval eval/weight_transfer/recipes/unigram.py --donors DIR --json
"""

from recipekit import blended_unigram, load_all, set_unigram, unigram_logprobs

N_SEQS, LENGTH = 16, 32


def transfer(model, config):
    models = load_all(vocab_size=config.vocab_size)
    probs = blended_unigram(models, n_seqs=N_SEQS, length=LENGTH)
    set_unigram(model, config, unigram_logprobs(probs))
    return model
