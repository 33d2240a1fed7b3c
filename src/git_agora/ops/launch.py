"""`launch`: several agents on one project, each with its own clone, account, signing key and logs.

A launch directory (default `./agora-agents/`) holds one folder per agent (`agent-01/`: `clone/` its
work tree, `key/` its ed25519 signing key, `stdout.log`, `stderr.log`), the state file `launch.json`
and `supervisor.log`. The key and the logs sit beside the clone, never in it, so nothing of them is
published. A supervisor process (`git_agora.supervise`) starts the agents, enforces the budget and
records how each one ended; `launch` returns once they run (or, with `wait`, once they ended),
`launch_status` reads the state and each clone's account log, `stop_launch` ends them.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import AgoraError
from ..feedback import Feedback
from ..identity.keys import KEY_CONFIG, create_key
from ..refs.git import Git, GitError
from ..refs.names import LogRef, valid_account
from ..refs.store import NotARepository, Repository
from ..refs.sync import queued_entries
from ..supervise import groups
from ..supervise.scheduler import LOCAL, SCHEDULERS
from ..supervise.state import (
    ACTIVE,
    LOST,
    PENDING,
    RUNNING,
    STOPPED,
    STOPPING,
    AgentRecord,
    LaunchState,
    claim,
    read_state,
    state_path,
    write_state,
)

DEFAULT_DIRECTORY = "agora-agents"
SCRIPTED = "scripted"
PLACEHOLDER = "{prompt}"
DEFAULT_BUDGET_MINUTES = 60.0
DEFAULT_GRACE_SECONDS = 10.0
DEFAULT_ROUNDS = 3
START_TIMEOUT = 120.0
PREPARING = ".preparing"  # made first, exclusively: two launches never prepare in one directory
PROMPT = (
    "You are one agent of several on this Agora project, in your own clone (your account and signing key "
    "are set up): read program.md, run `git agora analyze`, and follow the loop of program.md (pick a slot, "
    "change one thing, evaluate it, publish it with `git agora push --check`, share insights, verify others' "
    "results) until you are stopped."
)
SHELL_WORDS = {"exec", "command", "eval", "cd", ".", "source", "set", "export", "time", "!", "{", "(", "if", "for"}


@dataclass(frozen=True)
class LastContribution:
    sha: str
    title: str
    timestamp: int


@dataclass(frozen=True)
class AgentStatus:
    name: str  # also its account
    state: str  # pending, running, stopping, finished, crashed, over-budget, stopped, lost
    running: bool  # its process is alive now
    pid: int | None
    started_at: float | None
    ended_at: float | None
    exit_code: int | None  # negative: ended by that signal; None: still running or never known
    budget_seconds: float | None
    used_seconds: float | None
    left_seconds: float | None
    contributions: int  # in its clone's account log
    queued: int  # of those, not on the remote yet
    last_contribution: LastContribution | None
    clone: Path
    key: Path
    stdout: Path
    stderr: Path
    note: str | None
    job_id: str | None = None  # under a scheduler: its job
    scheduler_state: str | None = None  # the scheduler's word for the job (TIMEOUT, CANCELLED, ...)
    sessions: int | None = None  # with --restart: how many sessions its job started so far

    @property
    def signal(self) -> str | None:
        if self.exit_code is None or self.exit_code >= 0:
            return None
        try:
            return signal.Signals(-self.exit_code).name
        except ValueError:
            return f"signal {-self.exit_code}"

    def to_dict(self) -> dict:
        data = asdict(self)
        for key in ("clone", "key", "stdout", "stderr"):
            data[key] = str(data[key])
        return {**data, "signal": self.signal}


@dataclass(frozen=True)
class LaunchStatus:
    directory: Path
    remote: str
    command: str
    prompt: str
    rounds: int | None
    budget_seconds: float | None
    grace_seconds: float
    supervisor_pid: int | None
    supervisor_mode: str | None
    supervisor_running: bool
    stop_requested_at: float | None
    agents: tuple[AgentStatus, ...]
    scheduler: str = "local"
    scheduler_options: tuple[str, ...] = ()
    restart: bool = False

    @property
    def running(self) -> list[AgentStatus]:
        return [a for a in self.agents if a.running]

    @property
    def crashed(self) -> list[AgentStatus]:
        return [a for a in self.agents if a.state == "crashed"]

    def to_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k != "agents"}
        return {**data, "directory": str(self.directory), "agents": [a.to_dict() for a in self.agents]}


def launch(
    remote: str,
    agents: int,
    command: str | None = None,
    scripted: bool = False,
    rounds: int | None = None,
    budget_minutes: float | None = DEFAULT_BUDGET_MINUTES,
    directory: Path | str | None = None,
    prefix: str = "agent",
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    seed: int = 0,
    wait: bool = False,
    feedback: Feedback | None = None,
    scheduler: str = "local",
    scheduler_options: tuple[str, ...] = (),
    restart: bool = False,
    node_local_ok: bool = False,
) -> LaunchStatus:
    """Start `agents` agents on the Agora project at `remote`, each in its own clone with its own account
    (`prefix-01`...) and key, running `command` (`{prompt}` replaced by the shell-quoted prompt) or, with
    `scripted`, the demo's worker for `rounds` rounds. Each stops at `budget_minutes` of wall-clock time
    (None: no limit). Returns once all run (`wait`: once all ended, supervised by this process).
    `scheduler` "slurm": each agent is a Slurm job (`ops.launch_jobs`), its budget the job's --time,
    `scheduler_options` passed to sbatch; `restart`: its job script starts a new session when one ends."""
    from . import launch_jobs
    from .clone import _absolute, _remove

    feedback = feedback or Feedback()
    remote = _absolute(remote)
    where = Path(directory or DEFAULT_DIRECTORY).resolve()
    names = _check_request(agents, command, scripted, rounds, budget_minutes, prefix, grace_seconds)
    _check_scheduler(scheduler, scheduler_options, restart)
    if scheduler != LOCAL:
        launch_jobs.check_shared(where, node_local_ok)
    _check_directory(where)
    created = not where.exists()
    where.mkdir(parents=True, exist_ok=True)
    marker = where / PREPARING
    try:
        marker.open("x").close()
    except FileExistsError:
        raise AgoraError(f"another launch is being prepared in {where}: choose another --dir") from None
    try:
        records = _prepare(remote, where, names, command, scripted, rounds or DEFAULT_ROUNDS, seed, feedback)
        state = LaunchState(
            remote=remote,
            command=SCRIPTED if scripted else str(command),
            prompt=PROMPT,
            rounds=(rounds or DEFAULT_ROUNDS) if scripted else None,
            budget_seconds=budget_minutes * 60 if budget_minutes is not None else None,
            grace_seconds=grace_seconds,
            created_at=time.time(),
            agents=records,
            scheduler=scheduler,
            scheduler_options=list(scheduler_options),
            restart=restart,
        )
        claim(where, state)
    except BaseException:
        _remove(where, created)
        raise
    marker.unlink()
    if scheduler != LOCAL:
        launch_jobs.submit_all(where, state)  # raises once it cancelled what it submitted
        if wait:
            launch_jobs.wait_all(where, state)
        return launch_status(where)
    if wait:
        from ..supervise.supervisor import supervise

        supervise(where, mode="foreground")
    else:
        _start_detached(where)
    return launch_status(where)


def launch_status(directory: Path | str | None = None) -> LaunchStatus:
    """Who runs, how each ended, its budget used and left, and its last contribution."""
    where = Path(directory or DEFAULT_DIRECTORY).resolve()
    return _status(where, _refreshed(where, _read(where)))


def stop_launch(directory: Path | str | None = None) -> LaunchStatus:
    """End every agent of the launch: SIGTERM to each agent's process group, SIGKILL after the grace
    period. Its supervisor does it and records it; a supervisor that is gone is done without."""
    where = Path(directory or DEFAULT_DIRECTORY).resolve()
    state = _read(where)
    if state.scheduler != LOCAL:
        from .launch_jobs import stop_all

        return _status(where, stop_all(where, state, state.grace_seconds + 60))
    if _supervisor_alive(state) and any(a.state in ACTIVE for a in state.agents):
        assert state.supervisor_pid is not None
        os.kill(state.supervisor_pid, signal.SIGTERM)
        deadline = time.monotonic() + state.grace_seconds + 30
        while time.monotonic() < deadline and _supervisor_alive(state):
            time.sleep(0.1)
            state = _read(where)
    if any(a.state in ACTIVE for a in state.agents) and not _supervisor_alive(state):
        _stop_unsupervised(where, state)
    return launch_status(where)


# --- checks --------------------------------------------------------------------------------------


def _check_request(
    agents: int,
    command: str | None,
    scripted: bool,
    rounds: int | None,
    budget_minutes: float | None,
    prefix: str,
    grace_seconds: float,
) -> list[str]:

    if agents < 1:
        raise AgoraError(f"--agents must be at least 1 (got {agents})")
    if budget_minutes is not None and not budget_minutes > 0:
        raise AgoraError(f"--budget-minutes must be more than 0 (got {budget_minutes:g})")
    if grace_seconds < 0:
        raise AgoraError(f"the grace period must not be negative (got {grace_seconds:g})")
    if scripted == (command is not None):
        raise AgoraError("give either --command 'AGENT ... {prompt}' or --scripted (the built-in worker)")
    if scripted and rounds is not None and rounds < 1:
        raise AgoraError(f"--rounds must be at least 1 (got {rounds})")
    if not scripted and rounds is not None:
        raise AgoraError("--rounds applies to the scripted worker; an external agent decides its own rounds")
    if command is not None:
        _check_command(command)
    width = max(2, len(str(agents)))
    names = [f"{prefix}-{n:0{width}d}" for n in range(1, agents + 1)]
    if not valid_account(names[-1]):
        raise AgoraError(f"--prefix {prefix!r} makes no valid account name ({names[-1]!r})")
    return names


def _check_scheduler(scheduler: str, options: tuple[str, ...], restart: bool) -> None:
    if scheduler not in SCHEDULERS:
        raise AgoraError(f"--scheduler must be one of {', '.join(SCHEDULERS)} (got {scheduler!r})")
    if scheduler == LOCAL and options:
        raise AgoraError("--slurm-arg applies to --scheduler slurm; the local supervisor takes no options")
    if scheduler == LOCAL and restart:
        raise AgoraError("--restart applies to --scheduler slurm (each agent's job script loops)")


def _check_command(command: str) -> None:
    if PLACEHOLDER not in command:
        raise AgoraError(
            "--command has no {prompt}: put it where the agent takes its prompt, e.g. 'codex exec {prompt}'"
        )
    try:
        words = shlex.split(_unquoted(command))
    except ValueError as exc:
        raise AgoraError(f"cannot read --command: {exc}") from None
    words = [w for w in words if not ("=" in w and w.split("=", 1)[0].isidentifier())]
    if not words or words[0] in SHELL_WORDS or words[0] == PLACEHOLDER:
        return
    program = words[0]
    path = os.environ.get("PATH", "")
    found = os.access(program, os.X_OK) if "/" in program else shutil.which(program, path=_agent_path(path))
    if not found:
        raise AgoraError(f"the agent program {program!r} is not installed here (not found on PATH)")


def _agent_path(path: str) -> str:
    return str(Path(sys.executable).parent) + os.pathsep + path


def _unquoted(command: str) -> str:
    """`"{prompt}"` and `'{prompt}'` mean `{prompt}`: the prompt is quoted for the shell anyway."""
    return command.replace(f'"{PLACEHOLDER}"', PLACEHOLDER).replace(f"'{PLACEHOLDER}'", PLACEHOLDER)


def agent_argv(command: str) -> list[str]:
    """The shell command line that runs an external agent, its prompt in place."""
    return ["/bin/sh", "-c", _unquoted(command).replace(PLACEHOLDER, shlex.quote(PROMPT))]


def _check_directory(where: Path) -> None:
    if where.exists() and not where.is_dir():
        raise AgoraError(f"{where} is not a directory: choose another --dir")
    if not where.exists() or not any(where.iterdir()):
        return
    if state_path(where).exists():
        try:
            status = _status(where, read_state(where))
        except ValueError:
            status = None
        if status is not None and (status.running or status.supervisor_running):
            names = ", ".join(a.name for a in status.running) or "its supervisor"
            raise AgoraError(
                f"{where} already has running agents ({names}): `git agora launch stop --dir {where}` first"
            )
        raise AgoraError(f"{where} holds an earlier launch: remove it or choose another --dir")
    if (where / PREPARING).exists():
        raise AgoraError(f"another launch is being prepared in {where}: choose another --dir")
    raise AgoraError(f"{where} is not empty: choose another --dir")


# --- preparing the agents ------------------------------------------------------------------------


def _prepare(
    remote: str,
    where: Path,
    names: list[str],
    command: str | None,
    scripted: bool,
    rounds: int,
    seed: int,
    feedback: Feedback,
) -> list[AgentRecord]:
    from .clone import clone

    records = []
    for name in names:
        folder = where / name
        try:
            cloned = clone(remote, folder / "clone", account=name)
        except AgoraError as exc:
            raise AgoraError(f"cannot launch: {exc}") from None
        if scripted and not (cloned.directory / "choices.py").is_file():
            raise AgoraError(f"the scripted worker works on the demo's task (choices.py); {remote} has none")
        key = folder / "key" / f"{name}_ed25519"
        create_key(key, name)
        Git(cloned.directory).config_set(KEY_CONFIG, str(key))
        argv = _scripted_argv(cloned.directory, name, rounds, seed) if scripted else agent_argv(str(command))
        records.append(
            AgentRecord(
                name=name,
                directory=str(folder),
                clone=str(cloned.directory),
                key=str(key),
                stdout=str(folder / "stdout.log"),
                stderr=str(folder / "stderr.log"),
                argv=argv,
            )
        )
        feedback.notice(f"{name}: cloned {remote} into {cloned.directory}")
    return records


def _scripted_argv(clone: Path, name: str, rounds: int, seed: int) -> list[str]:
    worker = [sys.executable, "-m", "git_agora.demo.worker", "--clone", str(clone), "--account", name]
    return [*worker, "--rounds", str(rounds), "--seed", str(seed)]


def _start_detached(where: Path) -> None:
    """Start the supervisor in its own session; it answers once every agent started."""
    log = where / "supervisor.log"
    with open(log, "ab") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "git_agora.supervise", "--detach", str(where)],
            cwd=where,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            timeout=START_TIMEOUT,
        )
    if proc.returncode != 0:
        lines = log.read_text(errors="replace").strip().splitlines() or ["no output"]
        raise AgoraError(f"the supervisor did not start the agents: {lines[-1]} (see {log})")


# --- reading and stopping ------------------------------------------------------------------------


def _read(where: Path) -> LaunchState:
    try:
        return read_state(where)
    except ValueError as exc:
        raise AgoraError(str(exc)) from None


def _supervisor_alive(state: LaunchState) -> bool:
    """The local supervisor runs; under a scheduler, the scheduler supervises while a job is unended."""
    if state.scheduler != LOCAL:
        return any(a.state in ACTIVE for a in state.agents)
    return state.supervisor_ended_at is None and groups.alive(state.supervisor_pid)


def _refreshed(where: Path, state: LaunchState) -> LaunchState:
    if state.scheduler == LOCAL:
        return state
    from .launch_jobs import refresh

    return refresh(where, state)


def _status(where: Path, state: LaunchState) -> LaunchStatus:
    supervised = _supervisor_alive(state)
    now = time.time()
    agents = tuple(_agent_status(agent, state, supervised, now) for agent in state.agents)
    return LaunchStatus(
        directory=where,
        remote=state.remote,
        command=state.command,
        prompt=state.prompt,
        rounds=state.rounds,
        budget_seconds=state.budget_seconds,
        grace_seconds=state.grace_seconds,
        supervisor_pid=state.supervisor_pid,
        supervisor_mode=state.supervisor_mode,
        supervisor_running=supervised,
        stop_requested_at=state.stop_requested_at,
        agents=agents,
        scheduler=state.scheduler,
        scheduler_options=tuple(state.scheduler_options),
        restart=state.restart,
    )


def _agent_status(agent: AgentRecord, state: LaunchState, supervised: bool, now: float) -> AgentStatus:
    scheduled = state.scheduler != LOCAL
    running = agent.state in (RUNNING, STOPPING) and (scheduled or groups.alive(agent.pid))
    shown, note = agent.state, agent.note
    if agent.state in ACTIVE and not supervised and agent.state != PENDING and not scheduled:
        shown = agent.state if running else LOST
        note = "its supervisor is gone: " + ("unsupervised" if running else "it ended, exit code unknown")
    used = None
    if agent.started_at is not None:
        used = (agent.ended_at if agent.ended_at is not None else now) - agent.started_at
    left = max(0.0, state.budget_seconds - used) if used is not None and state.budget_seconds is not None else None
    count, queued, last = _contributions(Path(agent.clone), agent.name)
    started = None
    if state.restart:
        from .launch_jobs import sessions

        started = sessions(agent)
    return AgentStatus(
        name=agent.name,
        state=shown,
        running=running,
        pid=agent.pid,
        started_at=agent.started_at,
        ended_at=agent.ended_at,
        exit_code=agent.exit_code,
        budget_seconds=state.budget_seconds,
        used_seconds=used,
        left_seconds=left,
        contributions=count,
        queued=queued,
        last_contribution=last,
        clone=Path(agent.clone),
        key=Path(agent.key),
        stdout=Path(agent.stdout),
        stderr=Path(agent.stderr),
        note=note,
        job_id=agent.job_id,
        scheduler_state=agent.scheduler_state,
        sessions=started,
    )


def _contributions(clone: Path, account: str) -> tuple[int, int, LastContribution | None]:
    """From the agent's own clone: its account log's length, how much of it is queued, and its tip."""
    from .clone import REMOTE

    try:
        repo = Repository.discover(clone)
        tip = repo.ref(LogRef(account).local)
        if tip is None:
            return 0, 0, None
        entries = repo.log_entries(tip)
        queued = len(queued_entries(repo, account, REMOTE))
        info = repo.commit_info(entries[-1]) if entries else None
    except (NotARepository, GitError, OSError):
        return 0, 0, None
    if info is None:
        return len(entries), queued, None
    title = (info.message.strip().splitlines() or [""])[0]
    return len(entries), queued, LastContribution(info.sha, title, info.timestamp)


def _stop_unsupervised(where: Path, state: LaunchState) -> None:
    """Its supervisor is gone: end the agents' groups here, and record it (exit codes stay unknown)."""
    for agent in state.agents:
        if agent.state == PENDING and agent.pid is None:
            agent.state, agent.note = STOPPED, "never started: its supervisor had gone"
    active = [a for a in state.agents if a.state in ACTIVE and a.pid is not None]
    for agent in active:
        assert agent.pid is not None
        groups.terminate(agent.pid)
    deadline = time.monotonic() + state.grace_seconds
    while time.monotonic() < deadline and any(groups.members(a.pid) for a in active if a.pid is not None):
        time.sleep(0.1)
    now = time.time()
    for agent in active:
        assert agent.pid is not None
        if groups.members(agent.pid):
            groups.kill(agent.pid)
            agent.killed = True
        agent.state, agent.stop_reason, agent.ended_at = STOPPED, "stop", now
        agent.note = "stopped by `launch stop` after its supervisor had gone: exit code unknown"
    state.stop_requested_at = state.stop_requested_at or now
    write_state(where, state)
