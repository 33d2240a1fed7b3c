"""Build and score pieces in process: model checks, the guard around transfer, windows, near-uniform init."""

import math
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from hybridlm.build import check_returned_model, run_transfer  # noqa: E402
from hybridlm.data import load_texts  # noqa: E402
from hybridlm.errors import EvalError  # noqa: E402
from hybridlm.model import CONFIGS, HybridConfig, HybridLM  # noqa: E402
from hybridlm.score import score, windows  # noqa: E402
from hybridlm.tokenizer import END_OF_TEXT, encode_batch  # noqa: E402

TINY = CONFIGS["tiny"]


def test_windows_predict_every_text_token_once():
    docs = [list(range(1, 11)), [5]]
    pieces = windows(docs, chunk=4)
    assert [len(x) for x, _ in pieces] == [4, 4, 2, 1]  # inputs [eot, 1..9], targets [1..10]
    assert pieces[0] == ([END_OF_TEXT, 1, 2, 3], [1, 2, 3, 4]) and pieces[2] == ([8, 9], [9, 10])
    assert [t for _, y in pieces[:3] for t in y] == docs[0] and pieces[3] == ([END_OF_TEXT], [5])


def test_check_model_rejects_changed_shapes_and_types():
    model = HybridLM(TINY)
    model.lm_head = torch.nn.Linear(64, 100, bias=False)
    with pytest.raises(EvalError, match=r"lm_head.weight has shape \(100, 64\)"):
        check_returned_model(model, TINY)
    with pytest.raises(EvalError, match="returned Linear"):
        check_returned_model(torch.nn.Linear(2, 2), TINY)
    with pytest.raises(EvalError, match="dtype"):
        check_returned_model(HybridLM(TINY).double(), TINY)


def test_check_model_scores_with_reference_code_not_a_patched_instance():
    model = HybridLM(TINY)
    model.forward = lambda idx: torch.zeros(1)  # monkeypatching the instance gains nothing
    fresh = check_returned_model(model, TINY)
    assert fresh is not model and torch.equal(fresh.embed.weight, model.embed.weight)
    assert fresh(torch.tensor([[1, 2, 3]])).shape == (1, 3, TINY.vocab_size)


def test_guard_catches_opening_the_data_file(tmp_path, small_jsonl):
    transfer = tmp_path / "t.py"
    transfer.write_text(f"def transfer(model, config):\n    open({str(small_jsonl)!r}).read()\n    return model\n")
    with pytest.raises(EvalError, match="opened the evaluation data file"):
        run_transfer(transfer, HybridLM(TINY), TINY, None, [small_jsonl])


@pytest.fixture(scope="module")
def full_model():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # robust when other jobs share the cores (see docs/hybridlm.md, Threads)
    yield HybridLM(HybridConfig()).eval()
    torch.set_num_threads(threads)


def _random_init_vs_uniform(model, texts):
    """bpb of the random full-size target and of a uniform distribution, on texts that fit one batch."""
    docs = encode_batch(texts)
    n_bytes = sum(len(t.encode()) for t in texts)
    nats, tokens = score(model, docs, 512, "cpu")
    return nats / math.log(2) / n_bytes, math.log2(50257) * tokens / n_bytes


# Full-size checks on a few short texts (one forward pass each); the full runs are in the benchmark.
@pytest.mark.slow
def test_full_random_init_is_near_uniform_on_the_stand_in(full_model):
    texts = [t for t in load_texts(None, 200).texts if len(t) < 2000][:3]
    bpb, uniform = _random_init_vs_uniform(full_model, texts)
    assert abs(bpb / uniform - 1) < 0.02


@pytest.mark.slow
def test_full_random_init_is_near_uniform_on_fineweb(full_model, fineweb_150):
    texts = [t for t in load_texts(str(fineweb_150), 150).texts if len(t) < 2000][:3]
    bpb, uniform = _random_init_vs_uniform(full_model, texts)
    assert abs(bpb / uniform - 1) < 0.02


def test_determinism_is_switched_on_without_importing_the_compiler_and_the_compiler_agrees():
    """configure_determinism sets what torch.use_deterministic_algorithms(True) sets, for kernels and for the
    compiler a transfer might import later; neither it nor the reference model on the meta device pays the
    compiler's import (torch._inductor, torch._dynamo: 3 s of every evaluation process's start)."""
    probe = (
        "import sys, torch\n"
        "from hybridlm.determinism import configure_determinism\n"
        "from hybridlm.model import CONFIGS, build_meta\n"
        "configure_determinism('cpu', 1)\n"
        "build_meta(CONFIGS['tiny'])\n"
        "print(torch.are_deterministic_algorithms_enabled(), {'torch._inductor', 'torch._dynamo'} & set(sys.modules))\n"
        "import torch._inductor.config as c\n"
        "print(c.deterministic)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "set()", "True"]
