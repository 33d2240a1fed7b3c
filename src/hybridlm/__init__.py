"""hybridlm: the frozen 119,572,320-parameter attention/SSM target of the weight-transfer task and its
deterministic bits-per-byte evaluator. Submodules import torch; this package root does not."""

__version__ = "0.1.0"
