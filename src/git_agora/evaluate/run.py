"""One evaluation of a tree under a policy: export, build, copy the artifact, score, identify.

In the one-command form the command runs in the exported tree and prints the metric. In the two-phase
form the contribution's code only builds (in the exported tree, writing an artifact); the score step
runs the policy's evaluator files alone, on a copy of the artifact, in a second sandbox that shares
nothing else with the first. Every way an evaluation can go wrong ends as an `EvalRun` with a fixed
`Reason` (a build that fails, hangs, fills its disk, spawns without end, kills its parent, writes a
link into its artifact...): the only errors raised are the caller's to fix (no sandbox here, a scorer
package that differs from the pinned one, no evaluation in the setup).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..config import ARTIFACT, EvalSpec
from ..errors import AgoraError
from ..feedback import Feedback
from ..identity.keys import KEY_CONFIG
from ..refs.store import Repository
from . import sandbox as jail
from .artifact import ArtifactRefused, receive
from .cleanup import remove_tree
from .export import ExportError, export_tree, tree_entries
from .identity import check_pins, evaluator_identity, evaluator_paths, files_identity, policy_identity
from .limits import Applied, Enforcement, Limits, MiB, enforced, sweep_stale
from .process import StepOutcome, run_step
from .record import Reason, declared_output, finite_numbers, output_problem, reportable_metrics

KEEP_RUNS = 20  # local run folders kept in .git/agora/runs
HOME_BYTES = 64 * MiB


@dataclass(frozen=True)
class EvalRun:
    ok: bool
    metrics: Mapping[str, float]  # every finite number the evaluator printed (kept local)
    duration_s: float
    reason: Reason | None = None  # why it produced no metric; None when ok
    detail: str | None = None  # for the person who ran it: exit status, last stderr line, the logs
    output: Mapping[str, object] | None = None  # the evaluator's whole JSON object (kept local)
    exit_status: int | None = None

    @property
    def error(self) -> str | None:
        if self.reason is None:
            return None
        return f"{self.reason.value} ({self.detail})" if self.detail else self.reason.value

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "metrics": dict(self.metrics),
            "duration_s": round(self.duration_s, 3),
            "error": self.error,
            "reason": self.reason.value if self.reason else None,
        }


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of a tree under a policy: the run, the evaluator identity that scored, whether
    it ran sandboxed and how its limits were enforced."""

    run: EvalRun
    identity: dict
    quick: bool = False
    sandbox: bool = True
    limits: Mapping[str, Any] = field(default_factory=dict)
    run_folder: str | None = None

    def record(self, spec: EvalSpec, primary: str | None) -> dict[str, Any]:
        """What a published result or verdict may carry of this evaluation (numbers and fixed words)."""
        fields = spec.declared_output
        output = declared_output(self.run.output or {}, fields) or {}
        return {
            "evaluator": self.identity,
            "output": output,
            "measured": reportable_metrics(self.run.metrics, primary, fields),
            "duration_s": round(self.run.duration_s, 3),
            "exit_status": self.run.exit_status,
            "reason": self.run.reason.value if self.run.reason else None,
            "sandbox": self.sandbox,
            "limits": dict(self.limits),
        }


def evaluate_tree(
    repo: Repository,
    policy,
    tree: str,
    timeout: float | None = None,
    feedback: Feedback | None = None,
    quick: bool = False,
    sandbox: bool = True,
) -> Evaluation:
    """Evaluate `tree` with the evaluator of `policy` (a `policy.Policy`), in the sandbox unless
    `sandbox` is False. `quick` appends `[eval] quick` to the (score) command."""
    spec: EvalSpec = policy.config.evaluation
    if not spec.configured:
        raise AgoraError("the project has no evaluation ([eval] command, or build and score, in agora.toml)")
    if quick and not spec.quick:
        raise AgoraError("the project declares no quick evaluation ([eval] quick in agora.toml)")
    check_pins(spec, policy_identity(repo, policy))  # before any work
    steps = _Steps(repo, spec, timeout or spec.timeout, feedback, sandbox)
    protected = tree_entries(repo, policy.tree, list(policy.protected)) if policy.protected else {}
    evaluator_files = evaluator_paths(protected, policy)
    with steps:
        try:
            source = steps.folder("tree")
            export_tree(repo, tree, source, protected, policy.protected, spec.limits.disk)
        except ExportError as exc:
            failed = EvalRun(False, {}, 0.0, Reason.UNEXPORTABLE_TREE, str(exc))
            return steps.evaluation(failed, policy_identity(repo, policy), quick)
        kept = f"; the steps' output is kept in {steps.run_folder}" if steps.run_folder else ""
        steps._say(f"export: tree {tree[:12]} in {source} (removed when the evaluation ends){kept}")
        extra = f" {spec.quick}" if quick else ""
        if not spec.two_phase:
            assert spec.command is not None
            identity = evaluator_identity(spec, files_identity(source, evaluator_files))
            outcome = steps.run("command", spec.command + extra, source, None, Reason.COMMAND_FAILED)
            return steps.evaluation(_scored(outcome, policy.config.metric, spec), identity, quick)
        built, artifact = steps.build(source)
        if not built.ok:
            return steps.evaluation(built, policy_identity(repo, policy), quick)
        scorer = steps.folder("scorer")
        export_tree(repo, None, scorer, protected)
        identity = evaluator_identity(spec, files_identity(scorer, evaluator_files))
        check_pins(spec, identity)  # the scorer as installed now, after the build
        assert spec.score is not None and artifact is not None
        scored = _scored(steps.score(spec.score + extra, scorer, artifact), policy.config.metric, spec)
        total = replace(scored, duration_s=built.duration_s + scored.duration_s)
        return steps.evaluation(total, identity, quick)


def _scored(outcome: _Outcome, metric: str | None, spec: EvalSpec) -> EvalRun:
    """The metric of a step that printed it (its last JSON line), or why there is none."""
    if outcome.failed is not None:
        return outcome.failed
    payload = _last_json_object(outcome.step.stdout_tail)
    duration = outcome.step.duration_s
    if payload is None:
        return EvalRun(False, {}, duration, Reason.NO_METRIC, "the evaluator printed no JSON object", None, 0)
    if payload.get(INCOMPLETE_KEY) not in (None, False):  # the scorer's word: short of the setup's budget
        detail = "the evaluator found the run short of its budget"
        return EvalRun(False, {}, duration, Reason.INCOMPLETE, detail + _budget_detail(payload), payload, 0)
    metrics = finite_numbers(payload)
    if metric and metric not in metrics:
        detail = f"its JSON has no finite {metric!r}"
        return EvalRun(False, metrics, duration, Reason.NO_METRIC, detail, payload, 0)
    problem = output_problem(payload, spec.declared_output)
    if problem is not None:
        detail = f"one of {', '.join(spec.declared_output)}: {problem.value}"
        return EvalRun(False, metrics, duration, problem, detail, payload, 0)
    return EvalRun(True, metrics, duration, None, None, payload, 0)


INCOMPLETE_KEY = "incomplete"  # an evaluator's JSON object holding it (not false or null) scores nothing


def _budget_detail(payload: Mapping[str, Any]) -> str:
    """`: STEPS of BUDGET` when the evaluator printed both as numbers (shown locally, never published)."""
    done, budget = payload.get("steps"), payload.get("budget")
    numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (done, budget))
    return f": {done} of {budget} steps" if numbers else ""


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
    return None


@dataclass(frozen=True)
class _Outcome:
    step: StepOutcome
    failed: EvalRun | None  # None: the step exited 0 within its limits


# the wrapper every sandboxed step runs: the step, then every process it left is killed, then the
# status (and, for a build, the artifact as a tar stream) goes to the channel, file descriptor @CH@
_WRAPPER = """set -u
if [ "$2" != score ]; then
  cp -R /agora/src/. /agora/work/ 2>/dev/null || { echo "agora-status copy 1" >&@CH@; exit 0; }
fi
bash -c "$1" @CH@>&- </dev/null
status=$?
for _ in $(seq 200); do kill -KILL -1 2>/dev/null || break; done
full=0
for folder in /agora/work /tmp /agora/artifact; do
  [ -d "$folder" ] && [ "$(stat -f -c %a "$folder" 2>/dev/null)" = 0 ] && full=1
done
echo "agora-status $status $full" >&@CH@
if [ "$2" = build ] && [ "$status" = 0 ]; then tar -C /agora/artifact -cf - . 2>/dev/null >&@CH@; fi
exit 0
"""


class _Channel:
    """The pipe a sandboxed step's wrapper reports on: `agora-status CODE FULL`, then for a build the
    artifact's tar stream, received into `artifact` (never trusted: the build could write here too)."""

    def __init__(self, artifact: str | None, limit: int):
        self.read_fd, self.write_fd = os.pipe()
        self.artifact, self.limit = artifact, limit
        self.status: tuple[str, bool] | None = None
        self.refused: ArtifactRefused | None = None
        self.received = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def started(self) -> None:
        os.close(self.write_fd)

    def _read(self) -> None:
        with os.fdopen(self.read_fd, "rb") as stream:
            words = stream.readline(200).split()
            if len(words) == 3 and words[0] == b"agora-status":
                self.status = (words[1].decode("ascii", "replace"), words[2] == b"1")
            if self.artifact is not None and self.status is not None and self.status[0] == "0":
                try:
                    self.received = receive(stream, self.artifact, self.limit) > 0
                except ArtifactRefused as exc:
                    self.refused = exc

    def wait(self, seconds: float) -> None:
        self.thread.join(seconds)


class _Steps:
    """The steps of one evaluation: their folders, sandbox, limits and local logs."""

    def __init__(self, repo: Repository, spec: EvalSpec, timeout: float, feedback: Feedback | None, sandbox: bool):
        self.repo, self.spec, self.timeout, self.feedback, self.sandbox = repo, spec, timeout, feedback, sandbox
        self.limits: Limits = spec.limits
        self.started = time.monotonic()
        self.applied: Applied | None = None
        self.stack = contextlib.ExitStack()
        self.run_folder = _run_folder(repo)

    def __enter__(self) -> _Steps:
        # what a killed evaluation left, a day old (/tmp is shared with other PID namespaces)
        left = sweep_stale(tempfile.gettempdir(), "agora-eval-", remove_tree, older_than_s=86400)
        self._left_behind("what an earlier evaluation left cannot be removed", left)
        self.tmp = tempfile.mkdtemp(prefix=f"agora-eval-{os.getpid()}-")
        self.stack.callback(self._remove_tmp)
        try:
            if self.sandbox:
                jail.require_bwrap()  # a missing bubblewrap is a one-line error before any work
                self.env, self.mounts = self._sandbox_env()
                jail.write_etc(os.path.join(self.tmp, "etc"))
        except BaseException:
            self.stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def _remove_tmp(self) -> None:
        """The evaluation's temporary folder, whatever an unsandboxed build made in it (the sandbox's
        writable folders are tmpfs that die with it; the artifact's copy is checked as it is written)."""
        self._left_behind("this evaluation's temporary folder cannot be removed", remove_tree(self.tmp))

    def _left_behind(self, what: str, problems: list[str]) -> None:
        """One line for what stays on disk (an immutable file): the evaluation goes on."""
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            self._say(f"{what}: {problems[0]}{more}; remove it by hand")

    def folder(self, name: str) -> str:
        """A new folder under the evaluation's temporary folder (a unique name: nothing that ran
        before can have made it)."""
        path = tempfile.mkdtemp(prefix=f"{name}-", dir=self.tmp)
        os.chmod(path, 0o755)
        return path

    def evaluation(self, run: EvalRun, identity: dict, quick: bool) -> Evaluation:
        limits = self.applied.to_dict() if self.applied else Applied(self.limits, self.timeout).to_dict()
        limits["hit"] = sorted(self.applied.hit) if self.applied else []
        return Evaluation(run, identity, quick, self.sandbox, limits, self.run_folder)

    def left(self) -> float:
        return max(self.timeout - (time.monotonic() - self.started), 1.0)

    # --- the steps ---

    def build(self, source: str) -> tuple[EvalRun, str | None]:
        assert self.spec.build is not None
        artifact = self.folder("artifact")
        if self.sandbox:
            outcome = self.run("build", self.spec.build, source, artifact, Reason.BUILD_FAILED)
        else:
            built = self.folder("built")
            command = self.spec.build.replace(ARTIFACT, shlex.quote(built))
            outcome = self.run("build", command, source, None, Reason.BUILD_FAILED)
            if outcome.failed is None:
                outcome = _Outcome(outcome.step, self._copy_out(built, artifact, outcome.step))
        if outcome.failed is not None:
            return outcome.failed, None
        return EvalRun(True, {}, outcome.step.duration_s), artifact

    def score(self, command: str, scorer: str, artifact: str) -> _Outcome:
        return self.run("score", command, scorer, artifact, Reason.SCORE_FAILED)

    def run(self, name: str, command: str, folder: str, artifact: str | None, failure: Reason) -> _Outcome:
        """Run one step: `folder` is the exported tree (command, build) or the scorer (score); for a
        sandboxed build `artifact` receives the artifact, for a score it is the artifact to read."""
        limit = self.left()
        shown = command.replace(ARTIFACT, "/agora/artifact" if self.sandbox else (artifact or ARTIFACT))
        how = "in the sandbox" if self.sandbox else "unsandboxed"
        self._say(f"{name}: `{shown}` ({how}, {_time_limit(limit, self.timeout)})")
        log = os.path.join(self.run_folder, name) if self.run_folder else None
        with enforced(self.limits, round(self.timeout, 3), self.sandbox) as enforcement:
            if self.sandbox:
                step, status, refused = self._sandboxed(name, command, folder, artifact, limit, enforcement, log)
            else:
                cwd = folder
                command = command.replace(ARTIFACT, shlex.quote(artifact)) if artifact else command
                env = {**os.environ, "PYTHONHASHSEED": "0"}
                argv = ["bash", "-c", command]
                step = run_step(argv, env, cwd, limit, enforcement.preexec, self.feedback, log, reap=enforcement.finish)
                status = (str(step.returncode), False) if step.returncode is not None else None
                refused = None
            self.applied = enforcement.applied
        return _Outcome(step, self._judged(name, step, status, refused, failure))

    def _sandboxed(self, name, command, folder, artifact, limit, enforcement: Enforcement, log):
        inside = command.replace(ARTIFACT, "/agora/artifact")
        scratch = [("/tmp", self.limits.disk), ("/agora/home", HOME_BYTES)]
        if name == "score":
            readonly = [(folder, "/agora/scorer"), (artifact, "/agora/artifact")]
            cwd = "/agora/scorer"
        else:
            readonly = [(folder, "/agora/src")]
            scratch.append(("/agora/work", self.limits.disk))
            if name == "build":
                scratch.append(("/agora/artifact", self.limits.artifact))
            cwd = "/agora/work"
        box = jail.Box(tuple(readonly), tuple(scratch), cwd, self.env, self.spec.network, tuple(self.mounts))
        channel = _Channel(artifact if name == "build" else None, self.limits.artifact)
        info_read, info_write = os.pipe()
        info_open = [True]  # closed once, by whichever comes first: a second close could hit a reused number
        try:
            wrapper = _WRAPPER.replace("@CH@", str(channel.write_fd))
            argv = jail.bwrap_argv(
                box, ["bash", "-c", wrapper, "agora", inside, name], os.path.join(self.tmp, "etc"), info_write
            )

            def started() -> None:
                channel.started()
                info_open[0] = False
                os.close(info_write)

            step = run_step(
                argv,
                self.env,
                "/",
                limit,
                enforcement.preexec,
                self.feedback,
                log,
                pass_fds=(channel.write_fd, info_write),
                after_start=started,
                reap=enforcement.finish,
            )
        finally:
            if info_open[0]:
                info_open[0] = False
                os.close(info_write)
        with os.fdopen(info_read, "rb") as info:
            came_up = bool(info.read())
        if not came_up:
            raise _unavailable(step)
        channel.wait(10.0)
        refused = channel.refused or (
            ArtifactRefused(Reason.NO_ARTIFACT, "its artifact folder is empty")
            if name == "build" and channel.status and channel.status[0] == "0" and not channel.received
            else None
        )
        return step, channel.status, refused

    def _judged(
        self, name, step: StepOutcome, status, refused: ArtifactRefused | None, failure: Reason
    ) -> EvalRun | None:
        """None when the step succeeded; else the failed run with its reason."""
        hit = self.applied.hit if self.applied else set()
        where = f"see {os.path.join(self.run_folder, name)}.err" if self.run_folder else "its output was not kept"
        if "memory" in hit:  # a cap it hit says more than the time limit it then ran into
            return EvalRun(False, {}, step.duration_s, Reason.OVER_MEMORY, where)
        if "processes" in hit:
            return EvalRun(False, {}, step.duration_s, Reason.OVER_PROCESSES, where)
        if step.returncode is None:
            return EvalRun(False, {}, step.duration_s, Reason.TIMED_OUT, f"after {self.timeout:g} s; {where}")
        if status is None:
            return EvalRun(False, {}, step.duration_s, failure, f"it stopped its own supervisor; {where}")
        code, full = status if isinstance(status, tuple) else (status, False)
        if code == "copy":
            return EvalRun(False, {}, step.duration_s, Reason.OVER_DISK, "the tree does not fit the sandbox's disk")
        exit_status = int(code) if code.isdigit() else None
        if exit_status != 0:
            reason = Reason.OVER_DISK if full else failure
            last = f": {step.last_error_line[:200]}" if step.last_error_line else ""
            detail = f"exit {code}{last}; {where}"
            return EvalRun(False, {}, step.duration_s, reason, detail, None, exit_status)
        if refused is not None:
            return EvalRun(False, {}, step.duration_s, refused.reason, str(refused), None, 0)
        return None

    def _copy_out(self, built: str, artifact: str, step: StepOutcome) -> EvalRun | None:
        """Unsandboxed: the build's artifact folder through `tar` into a fresh folder, checked as a
        sandboxed one is (its processes are gone: killed with its group and cgroup)."""
        if not os.path.isdir(built) or os.path.islink(built):
            return EvalRun(False, {}, step.duration_s, Reason.NO_ARTIFACT, f"{built} is gone")
        tar = subprocess.Popen(["tar", "-C", built, "-cf", "-", "."], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert tar.stdout is not None
        try:
            if receive(tar.stdout, artifact, self.limits.artifact) == 0:
                return EvalRun(False, {}, step.duration_s, Reason.NO_ARTIFACT, "its artifact folder is empty", None, 0)
        except ArtifactRefused as exc:
            return EvalRun(False, {}, step.duration_s, exc.reason, str(exc), None, 0)
        finally:
            tar.stdout.close()
            tar.kill()
            tar.wait()
        return None

    # --- the environment ---

    def _sandbox_env(self) -> tuple[dict[str, str], list[str]]:
        """(PATH, a locale, HOME, TMPDIR and only the variables the setup lists; the read-only folders
        the steps need: interpreters, scorer packages, `[eval] mounts`, refused if one holds a key)."""
        mounts, bins = jail.interpreter_paths()
        mounts += jail.package_paths(self.spec.scorer)
        named = []
        for entry in self.spec.mounts:
            path = os.path.expandvars(os.path.expanduser(entry))
            if "$" in path:
                self._say(f"[eval] mounts: {entry} names a variable that is not set here: not mounted")
            else:
                named.append(path)
        missing = [p for p in named if not os.path.exists(p)]
        if missing:
            raise AgoraError(f"[eval] mounts names {', '.join(missing)}, which does not exist here")
        mounts += [os.path.abspath(p) for p in named]
        jail.refuse_secret_folders(mounts, jail.secret_folders(self._private_paths()))
        env = {
            "PATH": jail.sandbox_path(bins),
            "HOME": jail.SANDBOX_HOME,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        for name in self.spec.env:
            if name in os.environ:
                env[name] = os.environ[name]
        return env, jail.outermost(mounts)

    def _private_paths(self) -> list[str]:
        """This clone's git folders and its configured signing key's folder: never shown to a step."""

        private = [self.repo.git_path, self.repo.common_path, self.repo.worktree_path]
        key = self.repo.git.config_get(KEY_CONFIG)
        if key:
            private.append(os.path.dirname(os.path.abspath(os.path.expanduser(key))))
        return private

    def _say(self, message: str) -> None:
        if self.feedback is not None:
            self.feedback.notice(message)


def _unavailable(step: StepOutcome) -> jail.SandboxUnavailable:
    said = step.last_error_line.strip() or f"bwrap exited {step.returncode}"
    hint = ""
    if any(word in said for word in ("namespace", "uid map", "Operation not permitted", "Permission denied")):
        hint = (
            " (user namespaces are off here: kernel.unprivileged_userns_clone=0, AppArmor's restriction on "
            "Ubuntu 24.04 (sysctl kernel.apparmor_restrict_unprivileged_userns=0, or a profile for bwrap), "
            "or a container without them)"
        )
    return jail.SandboxUnavailable(f"the sandbox cannot start: {said}{hint}")


def _run_folder(repo: Repository) -> str | None:
    """A new local folder for this evaluation's logs under .git/agora/runs (the newest KEEP_RUNS are
    kept); None where it cannot be made (a read-only clone): the logs are then not kept."""
    runs = os.path.join(repo.agora_path, "runs")
    name = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        os.makedirs(os.path.join(runs, name))
        old = sorted(os.listdir(runs))[:-KEEP_RUNS]
    except OSError:
        return None
    for stale in old:
        remove_tree(os.path.join(runs, stale))
    return os.path.join(runs, name)


def _time_limit(left: float, limit: float) -> str:
    """One time limit covers the whole evaluation: a later step gets what the earlier ones left."""
    if limit - left < 1:
        return f"time limit {limit:g} s"
    return f"time limit {limit:g} s, {left:.0f} s of it left: the steps before used {limit - left:.0f} s"
