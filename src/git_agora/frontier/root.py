"""What the reader's setup says that the records alone do not: who is trusted from the start, and which
policies score under the current evaluator. Pure data; the project computes it (`ops.standing.reader_root`).

- ``accounts``: trusted from the start besides the setup's own account (always trusted, read from the
  table): the policy's `[identity] members` and its `[ci] accounts`.
- ``epoch``: the setup and amendment shas whose evaluator is the current one (evaluator files, build and
  score commands, scorer and pins); None when every policy has the same evaluator (nothing to set apart).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Root:
    accounts: frozenset[str] = frozenset()
    epoch: frozenset[str] | None = None
