"""Baseline transfer: return the random target unchanged (about 3.39 bpb on the paper's texts).

Contract: transfer(model, config) receives the randomly initialised hybridlm.model.HybridLM and its
HybridConfig, and returns a HybridLM with the same parameter names, shapes and dtype (float32), all
finite, config unchanged. Donor models: `from hybridlm import donors; donors.list_donors()`,
`donors.load_donor(name)`. Only the donors' weights and forward passes: no training data and no
gradient update on the target. Never read the evaluation data here: the build fails if you do.
Evaluate with `hybridlm transfer transfer.py --out artifact` then `hybridlm score artifact --json`.
"""


def transfer(model, config):
    return model
