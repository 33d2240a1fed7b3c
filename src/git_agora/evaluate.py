"""Evaluating a tree with the policy's evaluator, and judging a claim by it.

The evaluation runs on a fresh export of exactly the tree being published or verified (never the
user's dirty work tree), with the evaluator files of the policy in force put in place of the tree's
own. In the two-phase form the contribution's code only builds an artifact; the score step runs the
evaluator files alone, in a directory where the contribution's code is not importable.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from .config import ARTIFACT
from .errors import AgoraError
from .feedback import Feedback
from .policy import Policy, evaluator_identity
from .refs.store import Repository

PARTIAL_FACTOR = 5.0  # a difference within 5x the tolerance is a partial reproduction


@dataclass(frozen=True)
class EvalRun:
    ok: bool
    metrics: Mapping[str, float]
    duration_s: float
    error: str | None = None  # why the run produced no metrics (crash, timeout, no JSON)
    output: Mapping[str, object] | None = None  # the evaluator's whole JSON object

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
def exported_tree(repo: Repository, tree: str, policy: Policy | None = None) -> Iterator[Path]:
    """A temporary directory holding exactly the files of `tree`, with the policy's evaluator files
    (and agora.toml) in place of the tree's own: the one home of exporting a tree for evaluation."""
    with tempfile.TemporaryDirectory(prefix="agora-eval-") as tmp:
        dest = Path(tmp) / "work"
        _checkout(repo, Path(tmp) / "index", dest, tree, policy)
        yield dest


def _checkout(repo: Repository, index: Path, dest: Path, tree: str | None, policy: Policy | None) -> None:
    """Write `tree` (None: nothing) plus the policy's protected files into `dest` through a scratch index."""
    dest.mkdir(parents=True)
    env = {"GIT_INDEX_FILE": str(index)}
    repo.git.run("read-tree", *([tree] if tree else ["--empty"]), env=env)
    if policy is not None:
        paths = list(policy.protected)
        repo.git.run("rm", "--cached", "-r", "-q", "--ignore-unmatch", "--", *paths, env=env)
        entries = repo.git.run_bytes("ls-tree", "-r", "-z", policy.tree, "--", *paths)
        repo.git.run_bytes("update-index", "-z", "--index-info", input=entries, env=env)
    repo.git.run("checkout-index", "--all", f"--prefix={dest}/", env=env)


def sandbox_argv(command: str, writable: Path) -> list[str]:
    """`command` under bubblewrap: no network, the whole file system read-only except `writable` (the
    export and the artifact) and a private /tmp."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise AgoraError("--sandbox needs bubblewrap (bwrap), which is not installed here (apt-get install bubblewrap)")
    return [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--bind",
        str(writable),
        str(writable),
        "--unshare-net",
        "--die-with-parent",
        "bash",
        "-c",
        command,
    ]


def run_command(
    command: str,
    cwd: Path,
    timeout: float,
    metric: str | None,
    feedback: Feedback | None = None,
    expect_json: bool = True,
    sandbox: Path | None = None,
) -> EvalRun:
    """Run one evaluation step; its last stdout line that is a JSON object carries the metrics.

    The step runs in its own process group; its stderr goes to `feedback.output` as it comes; SIGINT
    and SIGTERM sent to this process are passed to the whole group, which is waited for, so a stopped
    `git agora run` leaves no evaluator behind.
    """
    start = time.monotonic()
    argv = sandbox_argv(command, sandbox) if sandbox is not None else ["bash", "-c", command]
    with contextlib.ExitStack() as forwarding:
        with _signals_held():  # a stop that arrives while the step starts is handled once it is known
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,
                env={**os.environ, "PYTHONHASHSEED": "0"},
                preexec_fn=_release_signals,
            )
            forwarding.enter_context(_forwarding_signals(proc))
        try:
            stdout, stderr = _pump(proc.stdout), _pump(proc.stderr, feedback.output if feedback else None)
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return EvalRun(False, {}, time.monotonic() - start, f"timed out after {timeout:g} s")
        except _Stopped as stop:  # waiting here, not in the handler: Popen.wait holds a lock there
            _kill_group(proc, stop.signum)
            raise KeyboardInterrupt if stop.signum == signal.SIGINT else SystemExit(128 + stop.signum) from None
    duration = time.monotonic() - start
    out, err = stdout.text(), stderr.text()
    if proc.returncode != 0:
        last = err.strip().splitlines()[-1:] or [""]
        return EvalRun(False, {}, duration, f"the evaluation exited {proc.returncode}: {last[0][:200]}")
    if not expect_json:
        return EvalRun(True, {}, duration)
    payload = _last_json_object(out)
    if payload is None:
        return EvalRun(False, {}, duration, "the evaluation printed no JSON object")
    metrics = {
        k: float(v)
        for k, v in payload.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }
    if metric and metric not in metrics:
        return EvalRun(False, metrics, duration, f"the evaluation's JSON has no finite {metric!r}", payload)
    return EvalRun(True, metrics, duration, None, payload)


class _Pump(threading.Thread):
    """Reads one stream to its end (so the child never blocks on a full pipe), line by line."""

    def __init__(self, stream, on_line):
        super().__init__(daemon=True)
        self.stream, self.on_line, self.lines = stream, on_line, []
        self.start()

    def run(self) -> None:
        for line in self.stream:
            self.lines.append(line)
            if self.on_line is not None:
                self.on_line(line.rstrip("\n"))

    def text(self) -> str:
        self.join()
        return "".join(self.lines)


def _pump(stream, on_line=None) -> _Pump:
    return _Pump(stream, on_line)


_STOPS = {signal.SIGINT, signal.SIGTERM}


class _Stopped(BaseException):  # BaseException: an evaluator's own `except Exception` cannot swallow it
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM (main thread only): they are delivered when the block ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)


def _release_signals() -> None:
    """In the step's process, before exec: it must receive the stops it is sent."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)


@contextmanager
def _forwarding_signals(proc: subprocess.Popen) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum, frame):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signum)
        raise _Stopped(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _kill_group(proc: subprocess.Popen, signum: int = signal.SIGKILL, grace: float = 10.0) -> None:
    """Send `signum` to the step's process group, wait for it, and kill whatever is left after `grace`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signum)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


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


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of a tree under a policy: the run, and the evaluator identity it ran under."""

    run: EvalRun
    identity: dict
    quick: bool = False


def evaluate_tree(
    repo: Repository,
    policy: Policy,
    tree: str,
    timeout: float | None = None,
    feedback: Feedback | None = None,
    quick: bool = False,
    sandbox: bool = False,
) -> Evaluation:
    """Evaluate `tree` with the policy's evaluator: one command in the export, or build there then
    score in a directory that holds only the evaluator files. `quick` appends `[eval] quick`;
    `sandbox` runs every step under bubblewrap (`sandbox_argv`)."""
    spec = policy.config.evaluation
    if not spec.configured:
        raise AgoraError("the project has no evaluation ([eval] command, or build and score, in agora.toml)")
    if quick and not spec.quick:
        raise AgoraError("the project declares no quick evaluation ([eval] quick in agora.toml)")
    limit = timeout or spec.timeout
    metric = policy.config.metric
    extra = f" {spec.quick}" if quick else ""
    identity = evaluator_identity(policy)
    if sandbox:
        sandbox_argv("true", Path("/"))  # a missing bwrap is a one-line error before any work
    with exported_tree(repo, tree, policy) as work:
        jail = work.parent if sandbox else None
        if not spec.two_phase:
            _say(feedback, f"evaluating {work} with `{spec.command}{extra}` (timeout {limit:g} s)")
            run = run_command(f"{spec.command}{extra}", work, limit, metric, feedback, sandbox=jail)
            return Evaluation(run, identity, quick)
        artifact = work.parent / "artifact"
        build = spec.build.replace(ARTIFACT, shlex.quote(str(artifact)))
        _say(feedback, f"build: `{build}` in {work} (timeout {limit:g} s)")
        built = run_command(build, work, limit, None, feedback, expect_json=False, sandbox=jail)
        if not built.ok:
            return Evaluation(replace(built, error=f"build step: {built.error}"), identity, quick)
        if not artifact.is_dir():
            return Evaluation(
                EvalRun(
                    False, {}, built.duration_s, "the build step did not create the artifact directory ({artifact})"
                ),
                identity,
                quick,
            )
        scorer = work.parent / "scorer"
        _checkout(repo, work.parent / "scorer-index", scorer, None, policy)
        score = spec.score.replace(ARTIFACT, shlex.quote(str(artifact))) + extra
        left = max(limit - built.duration_s, 1.0)
        _say(feedback, f"score: `{score}` in {scorer}, the evaluator files only (timeout {left:.0f} s)")
        scored = run_command(score, scorer, left, metric, feedback, sandbox=jail)
        total = replace(scored, duration_s=built.duration_s + scored.duration_s)
        if scored.error == "the evaluation printed no JSON object":
            total = replace(total, error="the score step printed no metric (a JSON object)")
        elif scored.error:
            total = replace(total, error=f"score step: {scored.error}")
        return Evaluation(total, identity, quick)


def _say(feedback: Feedback | None, message: str) -> None:
    if feedback is not None:
        feedback.notice(message)


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
