"""`TextsOf`: the text embedded for each valid contribution, made when asked for."""

from __future__ import annotations

import pyarrow as pa

from git_agora.frontier.embeddings import TextsOf


def test_texts_of_the_valid_rows_in_order():
    table = pa.table(
        {
            "sha": ["a", "b", "c", "d", "e"],
            "title": ["t1", "t2", None, "t4", "same"],
            "description": ["t1\nmore", "other", "only a description", None, "same"],
            "valid": [True, False, True, None, True],
        }
    )
    texts = TextsOf(table)
    assert dict(texts) == {"a": "t1\nmore", "c": "only a description", "e": "same"}
    assert list(texts) == ["a", "c", "e"] and len(texts) == 3 and "b" not in texts
    some = TextsOf(table, ["e", "b", "zz", "a"])  # in this order; b is invalid, zz unknown
    assert list(some) == ["e", "a"] and dict(some) == {"e": "same", "a": "t1\nmore"}
