"""What the reader's setup says that the records alone do not: who is trusted from the start, and which
policies score under the current evaluator. Pure data; the project computes it (`ops.standing.reader_root`).

- ``accounts``: trusted from the start besides the setup's own account (always trusted, read from the
  table): the policy's `[identity] members` and its `[ci] accounts`.
- ``witnesses``: the policy's `[ci] accounts`, whose witness records date what they saw;
  ``witnessed``: what those records reached and when (``Witnessed``; the reader resolves it with Git,
  ``ops.witness``), None when there are none.
- ``epoch``: the setup and amendment shas whose evaluator is the current one (evaluator files, build and
  score commands, scorer and pins); None when every policy has the same evaluator (nothing to set apart).
- ``ranks``: the current policy's `[verdicts] format` is 2 or more (docs/protocol.md, "Whose verdicts
  count"): the trust root outranks the accounts whose standing its confirmation minted, only the root
  mints standing, and a contested result does not lead (``evidence``, ``scored.may_lead``). False: the
  rules of format 1, which older projects keep until an amendment adds the key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


@dataclass(frozen=True, eq=False)
class Witnessed:
    """What the CI's witness records reached: each sha with the time of the earliest record that reached
    it (shas that are not contributions, such as log commits, are ignored), and the latest record's time."""

    shas: pa.Array
    times: np.ndarray
    latest: int


@dataclass(frozen=True)
class Root:
    accounts: frozenset[str] = frozenset()
    epoch: frozenset[str] | None = None
    witnesses: frozenset[str] = frozenset()
    witnessed: Witnessed | None = None
    ranks: bool = False
