"""The training part of the stand-in corpus, for transfers that may read it (the baseline recipes).

The stand-in corpus is split into disjoint parts (`hybridlm.data`): the evaluation part, which only
the scorer reads and which the data guard keeps refusing inside transfer(), and a training part of
other help topics. `train_texts()` may be called inside transfer(): it asks a separate process
(`python -m hybridlm train-split`) for the training part and reads it from that process's output, so
the build process never imports `hybridlm.data` or the corpus, and never holds an evaluation text.

Note: the task's rules (program.md, as in the paper) allow no training corpus in a contribution; the
training part exists for reference baselines, such as a unigram prior from token counts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys

from hybridlm.errors import EvalError, one_line


@functools.lru_cache(maxsize=1)
def train_texts() -> tuple[str, ...]:
    """The training part of the stand-in corpus, in corpus order (58 texts with Python 3.11-3.13)."""
    proc = subprocess.run(
        [sys.executable, "-m", "hybridlm", "train-split"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        reason = one_line(Exception(lines[-1])) if lines else f"exit status {proc.returncode}"
        raise EvalError(f"hybridlm train-split failed: {reason}")
    return tuple(json.loads(line)["text"] for line in proc.stdout.splitlines() if line.strip())


def texts_sha256(texts) -> str:
    """The same digest as `hybridlm.data.texts_sha256` (kept here so the build never imports that module)."""
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode("utf-8") + b"\0")
    return h.hexdigest()
