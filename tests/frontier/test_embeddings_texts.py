"""`TextsOf` is `texts_by_sha`, one text at a time."""

from __future__ import annotations

import pyarrow as pa

from git_agora.frontier.embeddings import TextsOf, texts_by_sha


def test_texts_of_equals_texts_by_sha():
    table = pa.table(
        {
            "sha": ["a", "b", "c", "d", "e"],
            "title": ["t1", "t2", None, "t4", "same"],
            "description": ["t1\nmore", "other", "only a description", None, "same"],
            "valid": [True, False, True, None, True],
        }
    )
    lazy, eager = TextsOf(table), texts_by_sha(table)
    assert dict(lazy) == eager and list(lazy) == list(eager) and len(lazy) == len(eager) == 3
    assert "b" not in lazy and lazy["c"] == "only a description"
    some = TextsOf(table, ["e", "b", "zz", "a"])  # in this order; b is invalid, zz unknown
    assert list(some) == ["e", "a"] and dict(some) == {"e": eager["e"], "a": eager["a"]}
