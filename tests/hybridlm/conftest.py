import fcntl
import json
from pathlib import Path

import pytest

from hybridlm_helpers import BASELINE, FINEWEB_150, eval_tiny, result_of


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


@pytest.fixture(scope="session")
def baseline_eval(tmp_path_factory, worker_id) -> dict:
    """One real `hybridlm eval` of the kit's baseline transfer.py (the tiny config, eval_tiny's texts), run
    once per test session and shared by the tests that compare against it: under xdist the first worker
    to need it runs it and the others read its result (each result is the record of one real run)."""
    if worker_id == "master":  # no xdist: this process is the whole session
        return result_of(eval_tiny(BASELINE))
    shared = tmp_path_factory.getbasetemp().parent / "hybridlm-baseline-eval.json"  # this run's, all workers
    with open(shared.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.is_file():
            shared.write_text(json.dumps(result_of(eval_tiny(BASELINE))))
        return json.loads(shared.read_text())
