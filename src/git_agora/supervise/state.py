"""`launch.json`: what a launch started and what became of it, one file in the launch directory.

While its supervisor runs, the supervisor alone writes it; `launch stop` writes it only when the
supervisor is gone. Every write replaces the whole file atomically (a temporary file, then
`os.replace`), so a reader sees the previous state or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

STATE_FILE = "launch.json"
FORMAT = 1

PENDING, RUNNING, STOPPING = "pending", "running", "stopping"
FINISHED, CRASHED, OVER_BUDGET, STOPPED, LOST = "finished", "crashed", "over-budget", "stopped", "lost"
ACTIVE = (PENDING, RUNNING, STOPPING)  # the supervisor still owes this agent an end


@dataclass
class AgentRecord:
    name: str  # the account, and the agent's folder in the launch directory
    directory: str  # the agent's folder: its clone, key and logs
    clone: str  # its own work tree
    key: str  # its own private signing key (git config agora.signingkey in the clone)
    stdout: str
    stderr: str
    argv: list[str]
    state: str = PENDING
    pid: int | None = None  # also the process group id: each agent leads its own session
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None  # negative: ended by that signal; None: never known
    stop_reason: str | None = None  # "budget" or "stop", once the supervisor sent SIGTERM
    stop_sent_at: float | None = None
    killed: bool = False  # SIGKILL was needed after the grace period
    note: str | None = None
    job_id: str | None = None  # its job under a scheduler (`--scheduler slurm`); None: a local process
    scheduler_state: str | None = None  # the scheduler's own word for it, as last read (`TIMEOUT`)


@dataclass
class LaunchState:
    remote: str
    command: str  # the agent command as given ("scripted" for the built-in worker)
    prompt: str
    rounds: int | None  # the scripted worker's rounds; an external agent decides its own
    budget_seconds: float | None
    grace_seconds: float
    created_at: float
    agents: list[AgentRecord] = field(default_factory=list)
    supervisor_pid: int | None = None
    supervisor_mode: str | None = None  # "detached" or "foreground"
    supervisor_started_at: float | None = None
    supervisor_ended_at: float | None = None
    stop_requested_at: float | None = None
    scheduler: str = "local"  # who runs the agents: this package's supervisor, or "slurm" (`supervise.scheduler`)
    scheduler_options: list[str] = field(default_factory=list)  # passed through to the scheduler (`--gres=gpu:1`)
    restart: bool = False  # each agent's job script starts a new session when one ends, until its --time
    format: int = FORMAT

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> LaunchState:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        agent_fields = {f.name for f in fields(AgentRecord)}
        values["agents"] = [AgentRecord(**{k: v for k, v in a.items() if k in agent_fields}) for a in data["agents"]]
        return cls(**values)


def state_path(directory: Path) -> Path:
    return directory / STATE_FILE


def read_state(directory: Path) -> LaunchState:
    """The launch in `directory`; ValueError when there is none or the file is not one."""
    path = state_path(directory)
    try:
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            raise ValueError(f"{path} is in launch format {data.get('format')!r}, this git-agora reads {FORMAT}")
        return LaunchState.from_dict(data)
    except FileNotFoundError:
        raise ValueError(f"no launch in {directory} ({STATE_FILE} is missing)") from None
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path} is not a launch state file: {exc}") from None


def write_state(directory: Path, state: LaunchState) -> None:
    """Replace `launch.json` in one step."""
    path = state_path(directory)
    temporary = path.with_name(f".{STATE_FILE}.{os.getpid()}.tmp")
    with open(temporary, "w") as out:
        json.dump(state.to_dict(), out, indent=2)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def claim(directory: Path, state: LaunchState) -> None:
    """Write the first state of a launch; FileExistsError when another launch got there first."""
    with open(state_path(directory), "x"):
        pass
    write_state(directory, state)
