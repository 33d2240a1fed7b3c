"""The real CLI in a subprocess (`python -m hybridlm`): determinism, bad inputs, the params table."""

import json

import pytest

from hybridlm_helpers import BASELINE, error_of, eval_tiny, result_of

pytest.importorskip("torch")

slow = pytest.mark.slow


@slow
def test_two_runs_print_bit_identical_bpb(baseline_eval):
    first, second = baseline_eval, result_of(eval_tiny(BASELINE))  # the session's shared run, and one more
    assert first["bpb_hex"] == second["bpb_hex"] and first["bpb"] == second["bpb"]
    assert first["data_sha256"] == second["data_sha256"] and first["transfer_sha256"] == second["transfer_sha256"]
    assert first["comparable_to_paper"] is False and first["data_source"].startswith("stand-in")
    expected = {
        "bpb",
        "loss_nats",
        "tokens",
        "bytes",
        "texts",
        "data_source",
        "data_sha256",
        "comparable_to_paper",
        "transfer_sha256",
        "device",
        "torch_version",
        "seconds",
    }
    assert expected <= set(first)
    assert first["texts"] == 2 and first["tokens"] > 0 and first["bytes"] > first["tokens"]


def test_missing_transfer_file(tmp_path):
    assert "transfer file not found" in error_of(eval_tiny(tmp_path / "nope.py"))


def test_syntax_error(write_transfer):
    line = error_of(eval_tiny(write_transfer("def transfer(model, config)\n    return model\n")))
    assert "syntax error in transfer.py line 1" in line


def test_empty_data(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert "0 usable texts" in error_of(eval_tiny(BASELINE, "--data", empty))


def test_tiny_data(tmp_path):
    tiny = tmp_path / "tiny.jsonl"
    tiny.write_text(json.dumps({"text": "  "}) + "\n" + json.dumps({"text": "x"}) + "\n")
    assert "1 usable texts, fewer than --texts 2" in error_of(eval_tiny(BASELINE, "--data", tiny))


@slow
def test_no_transfer_function(write_transfer):
    assert "defines no `transfer(model, config)`" in error_of(eval_tiny(write_transfer("x = 1\n")))


@slow
def test_transfer_raises(write_transfer):
    line = error_of(eval_tiny(write_transfer("def transfer(model, config):\n    raise ValueError('boom')\n")))
    assert "transfer() raised ValueError: boom" in line


@slow
def test_transfer_returns_none(write_transfer):
    assert "returned None" in error_of(eval_tiny(write_transfer("def transfer(model, config):\n    pass\n")))


@slow
def test_transfer_returns_a_different_architecture(write_transfer):
    body = (
        "from hybridlm.model import CONFIGS, HybridLM\n\n"
        "def transfer(model, config):\n    return HybridLM(CONFIGS['small'])\n"
    )
    assert "changed the model config" in error_of(eval_tiny(write_transfer(body)))


@slow
def test_transfer_produces_nan(write_transfer):
    body = "def transfer(model, config):\n    model.layers[1].ssm.D.data[3] = float('nan')\n    return model\n"
    assert "layers.1.ssm.D has non-finite values" in error_of(eval_tiny(write_transfer(body)))


@slow
def test_transfer_reads_the_data(write_transfer):
    body = (
        "from hybridlm.data import load_texts\n\n"
        "def transfer(model, config):\n"
        "    try:\n        load_texts(None, 1)\n    except Exception:\n        pass  # swallowing does not help\n"
        "    return model\n"
    )
    assert "touched the evaluation data" in error_of(eval_tiny(write_transfer(body)))


@slow
def test_transfer_timeout(write_transfer):
    body = "import time\n\ndef transfer(model, config):\n    time.sleep(60)\n    return model\n"
    proc = eval_tiny(write_transfer(body), "--timeout", "1")
    assert "took longer than --timeout 1 s" in error_of(proc)


def test_params_table(capsys):
    from hybridlm.cli import main

    assert main(["params", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 119_572_320
    assert main(["params"]) == 0
    assert "119,572,320" in capsys.readouterr().out
