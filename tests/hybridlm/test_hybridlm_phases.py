"""Build (`hybridlm transfer`) and score (`hybridlm score`) as separate processes, through the real CLI:
the same bpb as ever, the transfer cannot reach the evaluation texts, and stopping `eval` leaves nothing."""

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hybridlm_helpers import (
    BASELINE,
    RECORDED_TINY,
    cli_command,
    cli_env,
    error_of,
    eval_tiny,
    recorded_tiny_bpb,
    result_of,
    run_cli,
    score_tiny,
    transfer_tiny,
)

pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")

slow = pytest.mark.slow
TRANSFERS = Path(__file__).parent / "transfers"


def _eval_texts_and_tokens():
    from hybridlm.data import load_texts
    from hybridlm.tokenizer import encode_batch

    texts = load_texts(None, 2).texts
    return [t[:100] for t in texts], [d[:20] for d in encode_batch(list(texts))]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # exited; only its parent may reap it
    except psutil.NoSuchProcess:
        return True


def _wait_for_file(path: Path, proc: subprocess.Popen, seconds=90) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


@slow
def test_eval_and_transfer_then_score_give_the_recorded_bpb(tmp_path, baseline_eval):
    """The agora command shapes: build in the contribution's folder, score from a folder without it; the
    whole `hybridlm eval` of the same file is the session's shared run (`baseline_eval`)."""
    work, elsewhere, artifact = tmp_path / "work", tmp_path / "elsewhere", tmp_path / "out" / "artifact"
    work.mkdir()
    elsewhere.mkdir()
    shutil.copy(BASELINE, work / "transfer.py")
    built = transfer_tiny("transfer.py", artifact, cwd=work)
    assert built.returncode == 0, built.stderr
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert {
        "config",
        "transfer_sha256",
        "seed",
        "threads",
        "torch_version",
        "hybridlm_version",
        "transfer_seconds",
        "model_sha256",
    } <= set(manifest) and manifest["seed"] == 42
    assert sorted(p.name for p in artifact.iterdir()) == ["manifest.json", "model.safetensors"]

    split = result_of(score_tiny(artifact, cwd=elsewhere))
    whole = baseline_eval
    assert split["bpb_hex"] == whole["bpb_hex"] and split["bpb"] == whole["bpb"]
    assert whole["transfer_sha256"] == manifest["transfer_sha256"]  # the one-process evaluator ran that file
    # the score step repeats nothing of the artifact's manifest: the build chose it
    assert not {"transfer_file", "transfer_sha256", "transfer_seconds"} & set(split)
    assert set(split) | {"transfer_file", "transfer_sha256", "transfer_seconds"} == set(whole)
    if all(whole[key] == value for key, value in RECORDED_TINY.items() if key != "bpb_hex"):
        recorded, within = recorded_tiny_bpb()  # bit-identical to the single-process evaluator, same kernels
        assert abs(float.fromhex(whole["bpb_hex"]) - recorded) <= within, (whole["bpb_hex"], recorded.hex())


@slow
def test_frame_and_gc_inspection_finds_no_evaluation_text(tmp_path, baseline_eval):
    report = tmp_path / "report.json"
    attacked = result_of(eval_tiny(TRANSFERS / "frame_inspection.py", env={"HYBRIDLM_ATTACK_REPORT": str(report)}))
    found = json.loads(report.read_text())
    texts, tokens = _eval_texts_and_tokens()
    assert not any(t in found["texts"] for t in texts)
    assert not any(d in found["docs"] for d in tokens)
    assert attacked["bpb_hex"] == baseline_eval["bpb_hex"]  # found nothing, so random init


STAND_IN_TOPICS = "os.path.join(os.path.dirname(os.__file__), 'pydoc_data', 'topics.py')"
DATA_MODULE_SOURCE = "importlib.util.find_spec('hybridlm.data').origin"


@pytest.mark.parametrize(
    "attempt, reason",
    [
        ("import hybridlm.data", "imported hybridlm.data"),
        ("from hybridlm import data", "imported hybridlm.data"),
        ("import pydoc_data.topics", "imported pydoc_data.topics"),
        ("help('if')", "imported pydoc_data.topics"),
        (f"open({STAND_IN_TOPICS}).read()", "opened the evaluation data file"),
        (f"open({DATA_MODULE_SOURCE}).read()", "opened the evaluation data file"),
    ],
)
def test_transfer_cannot_reach_the_stand_in_texts(tmp_path, write_transfer, attempt, reason):
    body = (
        "import importlib.util, os\n\ndef transfer(model, config):\n"
        f"    try:\n        {attempt}\n    except Exception:\n        pass  # swallowing does not help\n"
        "    return model\n"
    )
    out = tmp_path / "artifact"
    out.mkdir()
    (out / "manifest.json").write_text("{}")  # an older artifact never survives a failed build
    (out / "model.safetensors").write_bytes(b"")
    line = error_of(transfer_tiny(write_transfer(body), out))
    assert "touched the evaluation data" in line and reason in line
    assert not (out / "manifest.json").exists() and not (out / "model.safetensors").exists()


@slow
def test_eval_refuses_opening_its_data_file(write_transfer, small_jsonl):
    body = "import os\n\ndef transfer(model, config):\n    open(os.environ['DATA_PATH']).read()\n    return model\n"
    proc = eval_tiny(write_transfer(body), "--data", small_jsonl, env={"DATA_PATH": str(small_jsonl)})
    assert f"opened the evaluation data file {small_jsonl}" in error_of(proc)


@pytest.mark.parametrize("contents", [None, [], ["model.safetensors"], ["manifest.json"]])
def test_score_without_an_artifact_is_a_one_line_error(tmp_path, contents):
    artifact = tmp_path / "artifact"
    if contents is not None:
        artifact.mkdir()
        for name in contents:
            (artifact / name).write_text("{}")
    proc = run_cli("score", artifact, "--json")
    line = error_of(proc)
    assert proc.returncode == 1 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert "artifact" in line and str(artifact) in line


@slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stopping_eval_stops_the_build_process(tmp_path, write_transfer, signum):
    started = tmp_path / "started"
    body = (
        "import os, time\n\ndef transfer(model, config):\n"
        f"    open({str(started)!r}, 'w').write(str(os.getpid()))\n    time.sleep(120)\n    return model\n"
    )
    command = cli_command("eval", write_transfer(body), "--config", "tiny", "--texts", 2, "--threads", 1, "--json")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env())
    child = int(_wait_for_file(started, proc))
    assert child != proc.pid and psutil.Process(child).ppid() == proc.pid
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum
    assert stderr.strip().splitlines()[-1] == f"hybridlm: error: stopped by {signum.name}; the build process was ended"
    assert _gone(child)


@slow
def test_processes_started_by_the_transfer_end_with_the_build(tmp_path, write_transfer):
    pid_file = tmp_path / "sleeper"
    body = (
        "import subprocess\n\ndef transfer(model, config):\n"
        "    sleeper = subprocess.Popen(['sleep', '300'])\n"
        f"    open({str(pid_file)!r}, 'w').write(str(sleeper.pid))\n    return model\n"
    )
    result_of(eval_tiny(write_transfer(body)))
    assert _gone(int(pid_file.read_text()))


def test_failed_build_reports_one_line_and_writes_nothing(tmp_path, write_transfer):
    out = tmp_path / "artifact"
    line = error_of(transfer_tiny(write_transfer("def transfer(model, config):\n    raise ValueError('boom')\n"), out))
    assert line == "hybridlm: error: transfer() raised ValueError: boom"
    assert not (out / "manifest.json").exists()


def test_build_step_never_loads_the_data_modules(tmp_path, write_transfer):
    body = (
        "import sys\n\ndef transfer(model, config):\n"
        "    assert not {'hybridlm.data', 'hybridlm.tokenizer', 'pydoc_data.topics'} & set(sys.modules)\n"
        "    return model\n"
    )
    assert transfer_tiny(write_transfer(body), tmp_path / "artifact").returncode == 0


def test_helper_modules_next_to_the_transfer_import(tmp_path, write_transfer):
    (tmp_path / "transfer_helpers.py").write_text("def improve(model):\n    return model\n")
    body = "from transfer_helpers import improve\n\ndef transfer(model, config):\n    return improve(model)\n"
    assert transfer_tiny(write_transfer(body), tmp_path / "artifact", cwd="/").returncode == 0
