"""`git agora demo`: a throwaway project on one machine, several workers publishing at once.

A bare repository is the remote; each worker has its own clone and account and runs as its own
process; they follow the research loop on a small real task (the character n-gram model in `task/`).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import git_agora as agora

from ..errors import AgoraError

MARKER = ".agora-demo"
ACCOUNTS = ("ada", "ben", "cyd", "dee", "eli", "fay", "gus", "hal", "ivy", "jon", "kim", "lou")
TASK_FILES = ("choices.py", "train.py", "corpus.py", "score.py")
AGORA_TOML = """[project]
name = "char-ngram-demo"

[metric]
name = "bpc"
direction = "min"
tolerance = 1e-06

[eval]
format = 2  # output needs a git-agora that reads [eval] format 2
build = "python3 train.py --out {artifact}"  # the contribution's code: writes the model
score = "python3 score.py {artifact}"  # the evaluator alone: scores the held-out text as written
files = ["score.py", "corpus.py"]  # the evaluator files: fixed by this setup
quick = "--quick"  # git agora run --quick: scores 2,000 of the 12,000 held-out characters
output = ["train_chars", "test_chars"]  # what a published result records of the scorer's output
timeout = 60

[embeddings]
model = "hashing"  # fast lexical embeddings keep the demo quick; remove to use all-MiniLM-L6-v2
"""
BRIEF = """# Character n-gram demo

Minimise `bpc`, the bits per character of a character n-gram language model on held-out English text
(Python's own help topics, `pydoc_data`). Change `choices.py` (context order, smoothing method,
discount, pseudo-count, interpolation, case folding) or `train.py`, which builds the model. Evaluation
has two steps: `python3 train.py --out DIR` (your code) writes the model, then the project's own
`score.py` scores the held-out text as written; `score.py` and `corpus.py` are fixed by the setup, and a
contribution that changes them is invalid. Deterministic, so every claim can be verified exactly.

The loop: `git agora analyze`, pick a slot, `git agora checkout SHA`, change one knob, `git agora run
--quick` while you iterate (2,000 of the 12,000 held-out characters: not comparable, never published),
then `git agora push --check --predict LOW..HIGH -m "change, parent score, prediction, measured" --tag
result`, which evaluates a clean export in full and records the measured bpc next to your predicted
band (the order-2 baseline scores 3.048; `git agora analyze --view calibration` shows how well each
account predicts).
Share insights and hypotheses with `git agora post`; verify others with `git agora verify SHA`.
"""


@dataclass(frozen=True)
class DemoPlan:
    directory: Path
    workers: int
    rounds: int
    seed: int
    sandbox: bool = True  # False: every clone says `git config agora.sandbox off`

    @classmethod
    def create(cls, directory: Path | None, workers: int, rounds: int, seed: int, sandbox: bool = True) -> DemoPlan:
        """A plan in `directory` (default: a new temporary one), made empty for the run. The sandbox is
        checked first: where it cannot start, nothing is made and the error says what to do."""
        if sandbox:
            from ..ops.evaluate import check_sandbox

            check_sandbox()
        directory = (directory or default_directory()).resolve()
        prepare_directory(directory)
        return cls(directory, workers, rounds, seed, sandbox)


def prepare_directory(directory: Path) -> None:
    """Refuse a non-empty directory unless an earlier demo made it; then start it afresh."""
    if directory.exists() and any(directory.iterdir()):
        if not (directory / MARKER).exists():
            raise AgoraError(f"{directory} is not empty and not an earlier demo: choose another --dir")
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("made by `git agora demo`; safe to delete\n")


def environment() -> dict[str, str]:
    """Workers find this installation's `git agora` and `python3` first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "AGORA_ACCOUNT": ""}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=environment())


def make_clone(plan: DemoPlan, name: str, account: str) -> Path:
    clone = plan.directory / name
    clone.mkdir()
    git(clone, "init", "-q")
    git(clone, "remote", "add", "origin", str(plan.directory / "remote.git"))
    git(clone, "config", "agora.account", account)
    if not plan.sandbox:
        git(clone, "config", "agora.sandbox", "off")
    return clone


def found_project(plan: DemoPlan, ucb: str = "") -> Path:
    """The founder's clone: the task files, agora.toml (`ucb`: an `[ucb]` table to add), the brief, the
    setup and a baseline result."""
    git(plan.directory, "init", "-q", "--bare", "remote.git")
    founder = make_clone(plan, "founder", "founder")
    task = files("git_agora") / "demo" / "task"
    for name in TASK_FILES:
        (founder / name).write_text((task / name).read_text())
    (founder / ".gitignore").write_text("__pycache__/\n")
    (founder / "agora.toml").write_text(AGORA_TOML + ucb)
    (founder / "program.md").write_text(BRIEF)
    _with_tools_on_path()
    project = agora.open_project(founder, account="founder")
    agora.init_project(project)
    agora.publish_worktree(project, agora.Push("Baseline: order-2 additive smoothing", check_claim=True, rerun=True))
    return founder


def _with_tools_on_path() -> None:
    """The evaluation command (`python3 ngram.py`) runs with this installation's python first."""
    os.environ["PATH"] = environment()["PATH"]


def start_workers(plan: DemoPlan) -> list[subprocess.Popen]:
    procs = []
    for n in range(plan.workers):
        account = ACCOUNTS[n % len(ACCOUNTS)] + ("" if n < len(ACCOUNTS) else str(n // len(ACCOUNTS)))
        clone = make_clone(plan, f"worker-{account}", account)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "git_agora.demo.worker",
                    "--clone",
                    str(clone),
                    "--account",
                    account,
                    "--rounds",
                    str(plan.rounds),
                    "--seed",
                    str(plan.seed),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=environment(),
            )
        )
    return procs


def follow(procs: list[subprocess.Popen], on_event) -> list[dict]:
    """Read every worker's JSON events as they come; call on_event for each; wait for the ends."""
    events: queue.Queue = queue.Queue()

    def pump(proc):
        for line in proc.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                events.put(json.loads(line))
        proc.wait()
        events.put(None)

    threads = [threading.Thread(target=pump, args=(p,), daemon=True) for p in procs]
    for t in threads:
        t.start()
    seen, finished = [], 0
    while finished < len(procs):
        event = events.get()
        if event is None:
            finished += 1
            continue
        seen.append(event)
        on_event(event)
    return seen


def default_directory() -> Path:
    return Path(tempfile.mkdtemp(prefix="agora-demo-"))


@dataclass(frozen=True)
class DemoSummary:
    """The founder's view at the end: the analysis, the statistics, the best's lineage, the index check."""

    founder: Path
    problems: list[str]
    analysis: Any
    stats: Any
    lineage: Any | None
    titles: dict[str, str]
    metric: str | None
    index_differences: list[str]
    holds: ScoredResultsHold


@dataclass(frozen=True)
class ScoredResultsHold:
    """Whether every scored result holds up: confirmed by an account with standing, or reproduced now
    by the founder (another account's result with a published verdict, which establishes its author)."""

    scored: int
    confirmed: int
    reproduced_now: int
    not_reproduced: tuple[str, ...]

    @property
    def all_hold(self) -> bool:
        return not self.not_reproduced


def check_scored_results(project, analysis) -> ScoredResultsHold:
    """The founder reruns every scored result that no account with standing has confirmed yet, with the
    project's evaluator: another account's result gets the founder's published verdict (its author is
    then established, and that worker's own verdicts count); the founder's own is only re-evaluated."""
    frame = analysis.frame
    shas, accounts = frame.table["sha"].to_pylist(), frame.table["account"].to_pylist()
    scored = [i for i in range(frame.n) if frame.scored[i]]
    confirmed = [i for i in scored if frame.status[i] == "confirmed"]
    others = [i for i in scored if frame.status[i] != "confirmed"]
    failed = []
    for i in others:
        rerun = agora.reproduce if accounts[i] == project.account else agora.verify
        if rerun(project, shas[i]).judgement.verdict != "confirmed":
            failed.append(shas[i])
    return ScoredResultsHold(len(scored), len(confirmed), len(others) - len(failed), tuple(failed))


def run_demo(plan: DemoPlan, on_event: Callable[[dict], None]) -> DemoSummary:
    """Found the project, run the workers to the end (each event goes to `on_event`), summarize."""
    founder = found_project(plan)
    events = follow(start_workers(plan), on_event)
    problems = [f"{e['account']}: {e['detail']}" for e in events if e["event"] == "error"]
    return summarize(founder, problems)


def summarize(founder: Path, problems: list[str]) -> DemoSummary:
    from ..ops.history import titles

    project = agora.open_project(founder)
    agora.fetch(project)
    holds = check_scored_results(project, agora.analyze(project))
    analysis = agora.analyze(project)  # with the founder's verdicts
    best = analysis.summary.best
    lineage = agora.lineage(project, best.sha) if best else None
    return DemoSummary(
        founder,
        problems,
        analysis,
        agora.stats(project),
        lineage,
        titles(project),
        project.config.metric,
        agora.check_index(project),
        holds,
    )
