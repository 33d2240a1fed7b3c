"""`index.listing.listed_mask`: a row counts as listed exactly when the log of the account it names lists
its sha, whatever the nulls, repeats and order on either side."""

from __future__ import annotations

import random

import pyarrow as pa

from git_agora.index import listing


def test_listed_mask_is_membership_of_the_rows_pair_among_the_listed_pairs():
    rng = random.Random(4)
    shas = [f"{n:040x}" for n in range(300)] + [None]
    accounts = ["alice", "bob", "Alice", "carol", None]
    for _ in range(20):
        rows = [(rng.choice(shas), rng.choice(accounts)) for _ in range(rng.randint(0, 400))]
        pairs = [(rng.choice(shas), rng.choice(accounts)) for _ in range(rng.randint(0, 400))]
        table = pa.table(
            {"sha": pa.array([s for s, _ in rows], pa.string()), "account": pa.array([a for _, a in rows], pa.string())}
        )
        listed = listing.Listed(
            pa.array([s for s, _ in pairs], pa.string()), pa.array([a for _, a in pairs], pa.string())
        )
        known = {(s, a) for s, a in pairs if s is not None and a is not None}
        expected = [s is not None and a is not None and (s, a) in known for s, a in rows]
        assert listing.listed_mask(table, listed).to_pylist() == expected
        as_dict: dict[str, set[str]] = {}
        for s, a in known:
            as_dict.setdefault(s, set()).add(a)
        assert listing.listed_mask(table, as_dict).to_pylist() == expected
