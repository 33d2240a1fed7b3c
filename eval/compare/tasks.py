"""The comparison's task suite: each task is a real Agora project (setup, evaluator, baseline result)
that the workers reach only through the protocol (`git agora run`, `push --check`, `verify`).

- ``demo``: the demo's character n-gram model (`git_agora/demo/task/`), the control: six knobs,
  deterministic, friendly to greedy descent from the best.
- ``noisy``, ``deceptive``, ``wide``: synthetic landscapes (`landscape.py`, copied into the project as
  an evaluator file). Workers change one integer level of one knob in `knobs.py`; the harness judges on
  the true loss (`landscape.true_loss`), which the workers never see.

A task knows its knobs, how a worker proposes a change, its true loss, its optimum (known) and the
distance from the optimum that counts as reaching it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import git_agora as agora
from git_agora.demo import choices as demo_choices
from git_agora.demo.run import DemoPlan, found_project, git, make_clone

from . import landscape

HERE = Path(__file__).resolve().parent
DEMO_BEST_KNOWN = 2.029245  # order 4, Witten-Bell, interpolated: the best any run of any arm reached


@dataclass(frozen=True)
class Task:
    name: str
    knob_file: str
    metric: str
    tolerance: float  # the project's [metric] tolerance
    knobs: tuple[str, ...]
    levels: int  # synthetic tasks: levels per knob (switches have 2); 0 for the demo
    baseline_values: dict
    optimum: float  # the true optimum (the demo: the best known value, a bound)
    reach: float  # a result "reaches the optimum" when its true loss is within this of `optimum`
    noisy: bool = False  # a SEED knob draws the evaluator's luck; replicates change only it

    def propose(self, values: dict, rng: random.Random, knob: str | None = None) -> demo_choices.Change:
        """One change to one knob (`knob`, when given and it can change): the demo's own proposals on the
        demo, otherwise one or two levels up or down (a switch flips)."""
        if self.name == "demo":
            return demo_choices.propose(values, rng, knob)
        for attempt in range(40):
            name = knob if knob is not None and attempt < 20 else rng.choice(self.knobs)
            if name.startswith("SWITCH"):
                return demo_choices.Change(name, values[name], 1 - int(values[name]))
            new = min(self.levels - 1, max(0, int(values[name]) + rng.choice((-2, -1, 1, 2))))
            if new != values[name]:
                return demo_choices.Change(name, values[name], new)
        raise RuntimeError("no knob can change")  # unreachable: every knob has at least two levels

    def true_loss(self, values: dict, measured: float | None = None) -> float | None:
        """The loss without luck (the demo is deterministic: what was measured)."""
        if self.name == "demo":
            return measured
        return landscape.true_loss(self.name, values)


def _synthetic(name: str, knobs: list[str], levels: int, baseline: int, tolerance: float, reach: float) -> Task:
    values = {k: (0 if k.startswith("SWITCH") else baseline) for k in knobs}
    noisy = name == "noisy"
    if noisy:
        values["SEED"] = 0
    return Task(
        name, "knobs.py", "loss", tolerance, tuple(knobs), levels, values, landscape.optimum(name), reach, noisy
    )


TASKS: dict[str, Task] = {
    "demo": Task(
        "demo",
        "choices.py",
        "bpc",
        1e-6,
        demo_choices.KNOBS,
        0,
        {},
        DEMO_BEST_KNOWN,
        0.001,
    ),
    "noisy": _synthetic("noisy", landscape.noisy_names(), landscape.NOISY_LEVELS, 4, landscape.NOISE_SD, 0.01),
    "deceptive": _synthetic("deceptive", landscape.deceptive_names(), landscape.DECEPTIVE_LEVELS, 4, 1e-6, 0.05),
    "wide": _synthetic("wide", landscape.wide_names(), landscape.WIDE_LEVELS, 3, 1e-6, 0.02),
}

BRIEF = """# {title}

Minimise `loss`, printed by the project's evaluator (`score.py`, fixed by this setup) from the knob
levels in `knobs.py`, the one file you change. Each knob holds an integer level from 0 to {top}
(switches: 0 or 1).{noise} Change one knob, `git agora run`, then `git agora push --check -m "..."
--tag result`; verify others with `git agora verify SHA`.
"""
NOISE = (
    " The evaluation is noisy: `SEED` draws luck of about the tolerance (0.01), reproducibly; a"
    " replicate (the same levels under another `SEED`, tagged `replicate`, built on the result it"
    " repeats) gives another draw."
)
SCORE = '''"""The evaluator (fixed by the setup): prints the loss of the levels in knobs.py."""

import json
import re
from pathlib import Path

import landscape

values = {{m[1]: int(m[2]) for m in re.finditer(r"^([A-Z_0-9]+) = (-?\\d+)", Path("knobs.py").read_text(), re.M)}}
print(json.dumps({{"loss": landscape.measured({task!r}, values)}}))
'''
TOML = """[project]
name = "{name}"

[metric]
name = "loss"
direction = "min"
tolerance = {tolerance!r}

[eval]
command = "python3 score.py"
files = ["score.py", "landscape.py"]  # the evaluator: fixed by this setup
timeout = 30

[embeddings]
model = "hashing"
"""


def knob_text(task: Task) -> str:
    lines = [f'"""The {task.name} task\'s knobs: integer levels 0..{task.levels - 1} (switches 0 or 1)."""', ""]
    lines += [f"{name} = {value}" for name, value in task.baseline_values.items()]
    return "\n".join(lines) + "\n"


def ucb_table(settings: dict) -> str:
    """`settings` as an agora.toml `[ucb]` table (empty: the project keeps git-agora's defaults)."""
    if not settings:
        return ""
    return "\n[ucb]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in settings.items())


def toml_value(value: object) -> str:
    """A setting as TOML writes it (a bool is `true`, a string a basic string; Python's repr is neither)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def found(task: Task, directory: Path, ucb: dict | None = None) -> Path:
    """The founder's clone of a new project for `task` in `directory` (a bare `remote.git` beside it):
    the setup and its evaluated baseline result. `ucb`: the setup's `[ucb]` settings (default: the
    defaults git-agora writes)."""
    plan = DemoPlan(directory, 1, 1, 0)
    if task.name == "demo":
        return found_project(plan, ucb_table(ucb or {}))
    git(directory, "init", "-q", "--bare", "remote.git")
    founder = make_clone(plan, "founder", "founder")
    (founder / "knobs.py").write_text(knob_text(task))
    (founder / "score.py").write_text(SCORE.format(task=task.name))
    (founder / "landscape.py").write_text((HERE / "landscape.py").read_text())
    (founder / ".gitignore").write_text("__pycache__/\n")
    toml = TOML.format(name=f"compare-{task.name}", tolerance=task.tolerance) + ucb_table(ucb or {})
    (founder / "agora.toml").write_text(toml)
    title = f"The {task.name} task"
    noise = NOISE if task.noisy else ""
    (founder / "program.md").write_text(BRIEF.format(title=title, top=task.levels - 1, noise=noise))
    project = agora.open_project(founder, account="founder")
    agora.init_project(project)
    agora.publish_worktree(
        project, agora.Push("Baseline: every knob at its starting level", check_claim=True, rerun=True)
    )
    return founder
