"""The weight-transfer recipes (eval/weight_transfer/recipes/) and the stand-in corpus's training split.

Tiny donors (a GPT-2 and a Mamba, one layer, trained 30 steps on the training split) are built once
per module in a temporary folder. The recipes run through the real CLI (`hybridlm eval` on the tiny
config, 2 scored texts): the unigram priors score below the random init on those held-out texts; the
pieces (SVD, unigram and bigram heads, slice copy) are checked in process.
"""

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hybridlm import data, donors, train_split  # noqa: E402
from hybridlm.guard import DataAccessError, transfer_guard  # noqa: E402
from hybridlm.model import CONFIGS, HybridLM  # noqa: E402
from hybridlm_helpers import PROJECT_ROOT, error_of, eval_tiny, result_of, transfer_tiny  # noqa: E402

RECIPES = PROJECT_ROOT / "eval" / "weight_transfer" / "recipes"
TINY = CONFIGS["tiny"]
slow = pytest.mark.slow


def _recipe_module(name: str):
    """Import a recipe file as the build does (its folder on sys.path, appended, for `recipekit`)."""
    if str(RECIPES) not in sys.path:
        sys.path.append(str(RECIPES))
    spec = importlib.util.spec_from_file_location(f"recipe_{name}", RECIPES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def donor_dir(tmp_path_factory):
    make = _recipe_module("make_donors")
    torch.set_num_threads(1)
    return make.make_donors(tmp_path_factory.mktemp("donors"), steps=30, width=64, layers=1, batch=4)


@pytest.fixture(scope="module")
def random_bpb(baseline_eval):
    return baseline_eval["bpb"]


@pytest.fixture(scope="module")
def unigram_bpb(donor_dir):
    """The donor-prediction unigram recipe's bpb through the kit's evaluation (read by two tests)."""
    return result_of(eval_tiny(RECIPES / "unigram.py", "--donors", donor_dir))["bpb"]


@pytest.fixture
def use_donors(donor_dir):
    donors.set_donor_root(donor_dir)
    yield donor_dir
    donors.set_donor_root(None)


# --- the corpus split and the guard ------------------------------------------------------------------


def test_train_split_shares_no_text_or_topic_with_the_scored_texts():
    scored = data.load_texts(None, data.STAND_IN_EVAL_TEXTS).texts
    train = data.stand_in_train_texts()
    assert len(train) >= 50 and not set(train) & set(scored)
    topic = {text: name for name, text in data._stand_in_pieces()}
    assert not {topic[t] for t in train} & {topic[t] for t in scored}
    with pytest.raises(data.DataError, match="has 200 usable texts"):
        data.load_texts(None, data.STAND_IN_EVAL_TEXTS + 1)  # the evaluation part ends where training starts


def test_train_split_command_writes_json_lines(tmp_path):
    from hybridlm.cli import main

    out = tmp_path / "train.jsonl"
    assert main(["train-split", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["text"] for r in rows] == data.stand_in_train_texts()


def test_the_guard_allows_the_train_split_and_still_refuses_the_evaluation_part():
    train_split.train_texts.cache_clear()
    topics = Path(importlib.util.find_spec("pydoc_data.topics").origin)
    with transfer_guard() as seen:
        texts = train_split.train_texts()
        assert not seen
        with pytest.raises(DataAccessError, match="topics.py"):
            topics.read_text()
        with pytest.raises(DataAccessError, match="off limits"):
            data.load_texts(None, 1)
    assert texts == tuple(data.stand_in_train_texts())
    assert train_split.texts_sha256(texts) == data.texts_sha256(texts)


def test_a_build_reads_the_train_split_without_loading_the_evaluation_texts(tmp_path, write_transfer):
    report = tmp_path / "n_texts"
    body = (
        "import sys\nfrom hybridlm.train_split import train_texts\n\ndef transfer(model, config):\n"
        "    texts = train_texts()\n"
        "    assert not {'hybridlm.data', 'pydoc_data.topics'} & set(sys.modules)\n"
        f"    open({str(report)!r}, 'w').write(str(len(texts)))\n    return model\n"
    )
    assert transfer_tiny(write_transfer(body), tmp_path / "artifact").returncode == 0
    assert int(report.read_text()) == len(data.stand_in_train_texts())
    attempt = "from hybridlm.train_split import train_texts\nimport pydoc_data.topics\n\n"
    attempt += "def transfer(model, config):\n    return model\n"
    line = error_of(transfer_tiny(write_transfer(attempt), tmp_path / "b"))
    assert "touched the evaluation data" in line and "imported pydoc_data.topics" in line


# --- the pieces, in process --------------------------------------------------------------------------


def test_randomized_svd_recovers_a_low_rank_matrix():
    kit = _recipe_module("recipekit")
    g = torch.Generator().manual_seed(1)
    a = torch.randn(40, 6, generator=g, dtype=torch.float64) @ torch.randn(6, 300, generator=g, dtype=torch.float64)
    u, s, vh = kit.randomized_svd(a, rank=6, oversample=4, n_iter=1, seed=0)
    assert torch.allclose((u * s) @ vh, a, atol=1e-9)
    assert torch.allclose(s, torch.linalg.svdvals(a)[:6])
    again = kit.randomized_svd(a, rank=6, oversample=4, n_iter=1, seed=0)
    assert all(torch.equal(x, y) for x, y in zip((u, s, vh), again))  # deterministic given the seed


def test_unigram_head_predicts_the_given_distribution_everywhere():
    kit = _recipe_module("recipekit")
    probs = torch.rand(TINY.vocab_size, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) ** 4
    probs /= probs.sum()
    model = HybridLM(TINY)
    kit.set_unigram(model, TINY, kit.unigram_logprobs(probs))
    with torch.no_grad():
        out = torch.log_softmax(model(torch.tensor([[50256, 11, 3000, 11]])), dim=-1)[0]
    expected = kit.unigram_logprobs(probs).float()  # clipped at -25, like every donor log-prob
    assert all(torch.allclose(row, expected, atol=1e-3) for row in out)
    layer0 = model.layers[0]
    assert not layer0.attn.w_o.weight.any() and not layer0.ffn.w_down.weight.any()
    assert not model.layers[1].ssm.out_proj.weight.any()


def test_bigram_embedding_and_head_compute_the_transition_rows():
    """With C of full rank (16 rows), logits(v) = M(v, .) times RMSNorm's per-row factor; other tokens get u."""
    bigram = _recipe_module("bigram")
    g = torch.Generator().manual_seed(3)
    rows = torch.sort(torch.randperm(TINY.vocab_size, generator=g)[:16]).values
    table = torch.log_softmax(3 * torch.randn(16, TINY.vocab_size, generator=g), dim=-1)
    expected, anchor = table.clone(), table.mean(0)
    model = HybridLM(TINY)
    bigram.set_bigram(model, TINY, rows, table)
    with torch.no_grad():
        logits = model(rows[None, :])[0]
        other = model(torch.tensor([[int(rows.max()) + 1]]))[0, 0]
        e = model.embed.weight[rows].double()
        gain = 1 / torch.sqrt(e.pow(2).mean(1) + TINY.norm_eps)  # what RMSNorm multiplies each row by
    factor = (gain / bigram.norm_gain(TINY)).float()[:, None]
    assert torch.allclose(logits, expected * factor, atol=2e-3)
    assert torch.allclose(other, anchor, atol=1e-4)


def test_transition_table_rows_are_weighted_means_of_donor_log_probs(use_donors):
    bigram = _recipe_module("bigram")
    models = bigram.load_all(vocab_size=TINY.vocab_size)
    rows = bigram.row_tokens(models, 8)
    assert 50256 in rows.tolist() and len(rows) == 8
    contexts = bigram.prefix_ids(("", " the"))
    table = bigram.transition_table(models, rows, contexts, batch=3)
    assert table.shape == (8, TINY.vocab_size) and torch.isfinite(table).all()
    assert table.min() >= -bigram.LOGPROB_CLIP and table.max() <= 0
    # a weighted mean of log-softmax rows: exp sums to at most 1 (Jensen), and not far below
    mass = table.exp().sum(1)
    assert (mass <= 1 + 1e-4).all() and (mass > 0.2).all()


def test_slice_copy_puts_the_donors_leading_slices(use_donors):
    sc = _recipe_module("slice_copy")
    models = sc.load_all()
    gpt2, mamba = models["gpt2-tiny"], models["mamba-tiny"]
    model = sc.transfer(HybridLM(TINY), TINY)
    wte = gpt2.transformer.wte.weight
    assert torch.equal(model.embed.weight, wte) and torch.equal(model.lm_head.weight, wte)
    qkv = gpt2.transformer.h[0].attn.c_attn.weight.T
    assert torch.equal(model.layers[0].attn.w_k.weight, qkv[64:128])
    assert torch.equal(model.layers[0].ffn.w_gate.weight, gpt2.transformer.h[0].mlp.c_fc.weight.T[:128])
    mixer = mamba.backbone.layers[0].mixer
    assert torch.equal(model.layers[1].ssm.in_proj.weight, mixer.in_proj.weight)
    assert torch.equal(model.layers[1].ssm.conv.weight, mixer.conv1d.weight)
    small = CONFIGS["small"]  # 128 wide, 4 layers: the 1-block donors cover a slice of layers 0 and 1 only
    copied, untouched = sc.transfer(HybridLM(small), small), HybridLM(small)
    assert torch.equal(copied.embed.weight[:, :64], wte) and torch.equal(
        copied.embed.weight[:, 64:], untouched.embed.weight[:, 64:]
    )
    assert torch.equal(copied.layers[2].attn.w_q.weight, untouched.layers[2].attn.w_q.weight)
    assert torch.equal(copied.layers[3].ssm.in_proj.weight, untouched.layers[3].ssm.in_proj.weight)
    wide, narrow = torch.zeros(3, 5), torch.ones(2, 7)
    sc.put(wide, narrow)
    assert wide.sum() == 10 and wide[2].sum() == 0 and wide[:, :2].sum() == 4


# --- the recipes through the kit's evaluation --------------------------------------------------------


def test_unigram_from_training_split_counts_beats_random(random_bpb):
    result = result_of(eval_tiny(RECIPES / "unigram_counts.py"))
    assert result["bpb"] < random_bpb - 1.0
    assert math.isfinite(result["bpb"])


def test_unigram_from_donor_predictions_beats_random(unigram_bpb, random_bpb):
    assert unigram_bpb < random_bpb - 0.5


@slow
def test_bigram_beats_unigram_beats_random_and_slice_copy_runs(donor_dir, random_bpb, unigram_bpb):
    unigram = unigram_bpb
    bigram = result_of(eval_tiny(RECIPES / "bigram.py", "--donors", donor_dir))["bpb"]
    sliced = result_of(eval_tiny(RECIPES / "slice_copy.py", "--donors", donor_dir))["bpb"]
    assert bigram < unigram < random_bpb
    assert math.isfinite(sliced)  # its place in the ordering depends on the donors: see docs/hybridlm.md


@pytest.mark.parametrize("recipe", ["slice_copy", "unigram", "bigram"])
def test_a_donor_folder_without_weights_is_one_line_and_no_artifact(tmp_path, recipe):
    root = tmp_path / "donors"
    (root / "gpt2-empty").mkdir(parents=True)
    (root / "gpt2-empty" / "config.json").write_text('{"model_type": "gpt2", "vocab_size": 50257}')
    out = tmp_path / "artifact"
    line = error_of(transfer_tiny(RECIPES / f"{recipe}.py", out, "--donors", root))
    assert line == f"hybridlm: error: transfer() raised DonorError: donor 'gpt2-empty' in {root} has no weights " + (
        "(model.safetensors or pytorch_model.bin)"
    )
    assert not (out / "manifest.json").exists() and not (out / "model.safetensors").exists()


def test_a_donor_recipe_without_donors_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv(donors.ENV_VAR, raising=False)
    line = error_of(transfer_tiny(RECIPES / "unigram.py", tmp_path / "artifact"))
    assert line == "hybridlm: error: transfer() raised RecipeError: no donors: pass --donors DIR to the evaluator " + (
        "or set HYBRIDLM_DONORS"
    )
