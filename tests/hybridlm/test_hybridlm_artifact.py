"""The artifact between build and score, in process: what the scorer accepts and what it refuses."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from hybridlm import artifact  # noqa: E402
from hybridlm.errors import EvalError  # noqa: E402
from hybridlm.model import CONFIGS, HybridLM  # noqa: E402
from hybridlm.score import load_checked_model  # noqa: E402

TINY = CONFIGS["tiny"]
FIELDS = {
    "config": "tiny",
    "transfer_file": "transfer.py",
    "transfer_sha256": "0" * 64,
    "seed": 42,
    "threads": 1,
    "device": "cpu",
    "torch_version": torch.__version__,
    "hybridlm_version": "0.1.0",
    "python_version": "3",
    "transfer_seconds": 0.0,
    "seconds": 0.0,
}


def _save(directory, state=None):
    state = HybridLM(TINY).state_dict() if state is None else state
    return artifact.save(directory, state, FIELDS)


def test_round_trip_gives_the_same_weights_in_a_fresh_model(tmp_path):
    model = HybridLM(TINY, seed=3)
    manifest = _save(tmp_path, model.state_dict())
    assert artifact.load_manifest(tmp_path) == manifest
    loaded = load_checked_model(tmp_path, manifest, "tiny")
    assert loaded is not model and all(torch.equal(a, b) for a, b in zip(loaded.parameters(), model.parameters()))


def test_weights_changed_after_the_build_are_refused(tmp_path):
    manifest = _save(tmp_path)
    with open(tmp_path / artifact.MODEL_FILE, "r+b") as f:
        f.seek(-4, 2)
        f.write(b"\x7f\x7f\x7f\x7f")
    with pytest.raises(EvalError, match="sha256 differs"):
        artifact.load_state(tmp_path, manifest)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s["layers.1.ssm.D"].__setitem__(0, float("nan")), "layers.1.ssm.D has non-finite values"),
        (lambda s: s.pop("norm.weight"), "missing \\['norm.weight'\\]"),
        (lambda s: s.__setitem__("extra", torch.zeros(1)), "unexpected \\['extra'\\]"),
        (lambda s: s.__setitem__("norm.weight", torch.ones(3)), "norm.weight has shape \\(3,\\)"),
        (lambda s: s.__setitem__("norm.weight", torch.ones(64, dtype=torch.float64)), "norm.weight has dtype"),
    ],
)
def test_the_scorer_checks_every_tensor(tmp_path, change, message):
    state = dict(HybridLM(TINY).state_dict())
    change(state)
    manifest = _save(tmp_path, state)
    with pytest.raises(EvalError, match=message):
        load_checked_model(tmp_path, manifest, "tiny")


def test_the_scorer_decides_the_architecture(tmp_path):
    manifest = _save(tmp_path)
    with pytest.raises(EvalError, match="built for --config 'tiny'; this score expects 'full'"):
        load_checked_model(tmp_path, manifest, "full")


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.pop("transfer_sha256"),
        lambda m: m.__setitem__("seed", "42"),
        lambda m: m.__setitem__("format", "other"),
    ],
)
def test_malformed_manifests_are_one_line_errors(tmp_path, edit):
    manifest = _save(tmp_path)
    edit(manifest)
    (tmp_path / artifact.MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(EvalError, match="manifest.json"):
        artifact.load_manifest(tmp_path)
