import importlib.util
import json
import os
from pathlib import Path

import pytest

from hybridlm.data import DataError, TextSet, check_source, load_texts, texts_sha256
from hybridlm.guard import DataAccessError, check_data_access, transfer_guard, violations


def test_stand_in_is_deterministic_labelled_and_has_200_texts():
    a, b = load_texts(None, 200), load_texts("stand-in", 200)
    assert isinstance(a, TextSet) and len(a.texts) == 200 and a.texts == b.texts
    assert a.sha256 == b.sha256 == texts_sha256(a.texts)
    assert not a.comparable_to_paper and "NOT comparable" in a.note


def test_jsonl_takes_the_first_texts_in_file_order(small_jsonl):
    ts = load_texts(str(small_jsonl), 3)
    assert [t[:10] for t in ts.texts] == ["Document 0", "Document 1", "Document 2"]
    assert ts.source == "file:texts.jsonl" and not ts.comparable_to_paper


def test_parquet_is_read_too(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": ["alpha beta", "", "gamma"]}), path)
    assert load_texts(str(path), 2).texts == ("alpha beta", "gamma")


def test_hash_depends_on_text_boundaries():
    assert texts_sha256(["ab", "c"]) != texts_sha256(["a", "bc"])


@pytest.mark.parametrize("content", ["", "\n\n", '{"text": ""}\n', '{"other": "x"}\n'])
def test_empty_data_is_a_clear_error(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match="0 usable texts"):
        load_texts(str(path), 1)


def test_too_few_texts_and_bad_files_are_clear_errors(tmp_path, small_jsonl):
    with pytest.raises(DataError, match="has 5 usable texts, fewer than --texts 200"):
        load_texts(str(small_jsonl), 200)
    with pytest.raises(DataError, match="not found"):
        load_texts(str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(DataError, match="bad.jsonl:1"):
        load_texts(str(bad), 1)


def test_loader_raises_inside_the_transfer_guard(small_jsonl):
    with transfer_guard():
        with pytest.raises(DataAccessError, match="off limits"):
            load_texts(str(small_jsonl), 1)
        with pytest.raises(DataAccessError):
            load_texts(None, 1)
    assert violations()
    assert load_texts(str(small_jsonl), 1).texts  # and works again afterwards


def test_opening_the_protected_file_inside_the_guard_is_caught(small_jsonl):
    with transfer_guard([small_jsonl]) as seen:
        with pytest.raises(DataAccessError, match="opened the evaluation data"):
            open(small_jsonl).read()
        try:  # a transfer that swallows the error is still recorded
            json.loads(small_jsonl.read_text())
        except DataAccessError:
            pass
    assert len(seen) == 2
    assert small_jsonl.read_text()  # no guard outside transfer
    check_data_access()


def test_links_to_the_protected_file_are_caught(tmp_path, small_jsonl):
    hard, soft = tmp_path / "hard.txt", tmp_path / "soft.txt"
    os.link(small_jsonl, hard)
    soft.symlink_to(small_jsonl)
    with transfer_guard([small_jsonl]) as seen:
        for path in (hard, soft):
            with pytest.raises(DataAccessError, match="opened the evaluation data"):
                path.read_bytes()
    assert len(seen) == 2


def test_the_stand_in_sources_are_protected_by_default():
    topics = Path(importlib.util.find_spec("pydoc_data.topics").origin)
    with transfer_guard():
        with pytest.raises(DataAccessError, match="topics.py"):
            topics.read_text()
        with pytest.raises(DataAccessError, match="data.py"):
            Path(importlib.util.find_spec("hybridlm.data").origin).read_text()
    assert topics.read_text()


def test_check_source_reads_no_text(tmp_path, small_jsonl):
    check_source(None)
    check_source("stand-in")
    check_source(str(small_jsonl))
    with pytest.raises(DataError, match="not found"):
        check_source(str(tmp_path / "missing.jsonl"))
    (tmp_path / "t.csv").write_text("text\n")
    with pytest.raises(DataError, match="expected a .jsonl or .parquet"):
        check_source(str(tmp_path / "t.csv"))
