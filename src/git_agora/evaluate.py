"""Running the project's evaluation command on a clean copy of a tree, and judging a claim by it.

The evaluation command (agora.toml `[eval] command`) runs in a fresh export of exactly the tree being
published or verified, never in the user's dirty work tree, and prints a JSON object with the metric.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .config import ProjectConfig
from .errors import AgoraError
from .refs.store import Repository

PARTIAL_FACTOR = 5.0  # a difference within 5x the tolerance is a partial reproduction


@dataclass(frozen=True)
class EvalRun:
    ok: bool
    metrics: Mapping[str, float]
    duration_s: float
    error: str | None = None  # why the run produced no metrics (crash, timeout, no JSON)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "metrics": dict(self.metrics),
            "duration_s": round(self.duration_s, 3),
            "error": self.error,
        }


@dataclass(frozen=True)
class Judgement:
    verdict: str  # confirmed | partial | failed
    reason: str
    claimed: Mapping[str, float] = field(default_factory=dict)
    reproduced: Mapping[str, float] = field(default_factory=dict)
    differences: Mapping[str, float] = field(default_factory=dict)


@contextmanager
def exported_tree(repo: Repository, tree: str) -> Iterator[Path]:
    """A temporary directory holding exactly the files of `tree`."""
    with tempfile.TemporaryDirectory(prefix="agora-eval-") as tmp:
        dest = Path(tmp) / "work"
        dest.mkdir()
        index = Path(tmp) / "index"
        env = {"GIT_INDEX_FILE": str(index)}
        repo.git.run("read-tree", tree, env=env)
        repo.git.run("checkout-index", "--all", f"--prefix={dest}/", env=env)
        yield dest


def run_command(command: str, cwd: Path, timeout: float, metric: str | None) -> EvalRun:
    """Run the evaluation; its last stdout line that is a JSON object carries the metrics."""
    start = time.monotonic()
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return EvalRun(False, {}, time.monotonic() - start, f"timed out after {timeout:g} s")
    duration = time.monotonic() - start
    if proc.returncode != 0:
        last = (err or "").strip().splitlines()[-1:] or [""]
        return EvalRun(False, {}, duration, f"the evaluation exited {proc.returncode}: {last[0][:200]}")
    payload = _last_json_object(out)
    if payload is None:
        return EvalRun(False, {}, duration, "the evaluation printed no JSON object")
    metrics = {
        k: float(v)
        for k, v in payload.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }
    if metric and metric not in metrics:
        return EvalRun(False, metrics, duration, f"the evaluation's JSON has no finite {metric!r}")
    return EvalRun(True, metrics, duration)


def _last_json_object(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def evaluate_tree(repo: Repository, config: ProjectConfig, tree: str, timeout: float | None = None) -> EvalRun:
    if not config.eval_command:
        raise AgoraError("the project has no evaluation command ([eval] command in agora.toml)")
    with exported_tree(repo, tree) as work:
        return run_command(config.eval_command, work, timeout or config.eval_timeout, config.metric)


def judge(claimed: Mapping[str, float], run: EvalRun, tolerance: float, primary: str | None) -> Judgement:
    """Confirmed when every claimed metric reproduces within the tolerance; partial when the primary is
    within PARTIAL_FACTOR x tolerance or only some metrics reproduce; failed otherwise or on a crash."""
    if not run.ok:
        return Judgement("failed", run.error or "the evaluation failed", claimed, run.metrics)
    shared = [name for name in claimed if name in run.metrics]
    if not shared:
        return Judgement("failed", "the evaluation reports none of the claimed metrics", claimed, run.metrics)
    diffs = {name: run.metrics[name] - claimed[name] for name in shared}
    within = {name for name, d in diffs.items() if abs(d) <= tolerance + 1e-12}
    key = primary if primary in diffs else shared[0]
    summary = ", ".join(f"{n}: claimed {claimed[n]:.6g}, reproduced {run.metrics[n]:.6g}" for n in shared)
    if len(within) == len(claimed):
        return Judgement("confirmed", f"within tolerance {tolerance:g} ({summary})", claimed, run.metrics, diffs)
    if abs(diffs[key]) <= PARTIAL_FACTOR * tolerance or within:
        return Judgement("partial", f"only partly reproduced ({summary})", claimed, run.metrics, diffs)
    return Judgement(
        "failed",
        f"not reproduced beyond {PARTIAL_FACTOR:g}x tolerance {tolerance:g} ({summary})",
        claimed,
        run.metrics,
        diffs,
    )


def check_claim(project, tree: str, claimed: Mapping[str, float]) -> tuple[dict[str, float], dict]:
    """For `push --check`: evaluate the tree; fill in the metric; refuse a claim the run contradicts."""
    config = project.config
    run = evaluate_tree(project.repo, config, tree)
    if not run.ok:
        raise AgoraError(f"push --check: {run.error}; nothing published")
    metric = config.metric
    measured = run.metrics[metric] if metric else None
    if metric in claimed and abs(claimed[metric] - measured) > config.tolerance + 1e-12:
        raise AgoraError(
            f"push --check: you claim {metric}={claimed[metric]:.6g} but a clean run measured {measured:.6g} "
            f"(tolerance {config.tolerance:g}); nothing published"
        )
    metrics = dict(claimed)
    if metric:
        metrics[metric] = measured
    return metrics, {
        "command": config.eval_command,
        "measured": dict(run.metrics),
        "duration_s": round(run.duration_s, 3),
    }


def hardware() -> dict:
    info = {
        "machine": platform.machine(),
        "system": platform.system(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "processor": platform.processor() or None,
    }
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        if out.returncode == 0:
            info["gpus"] = out.stdout.strip().splitlines()
    return info


def command_hash(command: str) -> str:
    return hashlib.sha256(command.encode()).hexdigest()
