"""Evaluating contribution code, the most dangerous thing git-agora does: one room for it.

`export` writes a tree from its blobs; `sandbox` is the allow-list a step sees (bubblewrap); `limits`
caps memory, processes and disk (cgroups, else rlimits); `process` runs a step with bounded output;
`artifact` copies the build's artifact out of its reach; `identity` says which evaluator scored;
`record` is what may be published of it; `run` puts them together (`evaluate_tree`); `judge` rules on
a claim. `docs/protocol.md` ("Threat model") says what this guarantees and what it does not.
"""

from .judge import PARTIAL_FACTOR, Judgement, hardware, judge
from .record import Reason
from .run import EvalRun, Evaluation, evaluate_tree

__all__ = ["PARTIAL_FACTOR", "EvalRun", "Evaluation", "Judgement", "Reason", "evaluate_tree", "hardware", "judge"]
