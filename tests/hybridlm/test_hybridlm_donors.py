"""Donors: tiny GPT-2 models built locally with transformers (no download), listed and loaded offline."""

import hashlib

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hybridlm import donors  # noqa: E402
from hybridlm_helpers import BASELINE, eval_tiny, result_of  # noqa: E402


@pytest.fixture
def donor_dir(tmp_path):
    root = tmp_path / "donors"
    for name, n_layer in (("gpt2-tiny-a", 1), ("gpt2-tiny-b", 2)):
        config = transformers.GPT2Config(vocab_size=50257, n_positions=128, n_embd=64, n_layer=n_layer, n_head=2)
        transformers.GPT2LMHeadModel(config).save_pretrained(root / name)
    (root / "not-a-model").mkdir()
    return root


def test_list_and_load_donors_offline(donor_dir):
    donors.set_donor_root(donor_dir)
    try:
        assert donors.list_donors() == ["gpt2-tiny-a", "gpt2-tiny-b"]
        model = donors.load_donor("gpt2-tiny-b")
        assert model.config.n_layer == 2 and not model.training
        assert donors.load_donor_config("gpt2-tiny-a").n_embd == 64
        with pytest.raises(donors.DonorError, match="no donor 'missing'"):
            donors.load_donor("missing")
    finally:
        donors.set_donor_root(None)


def test_no_donor_folder_lists_nothing(monkeypatch):
    monkeypatch.delenv(donors.ENV_VAR, raising=False)
    donors.set_donor_root(None)
    assert donors.list_donors() == []
    with pytest.raises(donors.DonorError, match="--donors"):
        donors.load_donor("x")


@pytest.mark.slow
def test_transfer_can_use_donors_through_the_cli(donor_dir, write_transfer):
    body = (
        "import torch\nfrom hybridlm import donors\n\n"
        "def transfer(model, config):\n"
        "    assert donors.list_donors() == ['gpt2-tiny-a', 'gpt2-tiny-b'], donors.list_donors()\n"
        "    donor = donors.load_donor('gpt2-tiny-a')\n"
        "    with torch.no_grad():\n"
        "        model.embed.weight.copy_(donor.transformer.wte.weight)\n"
        "        model.lm_head.weight.copy_(donor.transformer.wte.weight)\n"
        "    return model\n"
    )
    moved = result_of(eval_tiny(write_transfer(body), "--donors", donor_dir))
    assert moved["bpb"] > 0 and moved["transfer_sha256"] != hashlib.sha256(BASELINE.read_bytes()).hexdigest()
