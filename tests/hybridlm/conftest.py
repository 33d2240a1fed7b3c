import json
from pathlib import Path

import pytest

from hybridlm_helpers import FINEWEB_150


@pytest.fixture
def write_transfer(tmp_path):
    def write(body: str, name="transfer.py") -> Path:
        path = tmp_path / name
        path.write_text(body)
        return path

    return write


@pytest.fixture
def small_jsonl(tmp_path) -> Path:
    path = tmp_path / "texts.jsonl"
    rows = [{"text": f"Document {i}: the quick brown fox jumps over the lazy dog. " * 3} for i in range(5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def fineweb_150() -> Path:
    if not FINEWEB_150.is_file():
        pytest.skip("../shared/data/fineweb-edu-150.jsonl not present")
    return FINEWEB_150.resolve()
