"""The supervisor of one launch: it starts every agent, waits for them, enforces the budget (SIGTERM
to the agent's process group, SIGKILL after the grace period), ends them all when asked (SIGTERM,
SIGINT or SIGHUP to the supervisor: what `launch stop` sends) and records each change in
`launch.json`. It never restarts an agent: one that ends non-zero before its budget is `crashed`.

The decisions are pure functions of the record and the time (`due_action`, `final_state`), so they
are tested with a clock in hand; `supervise` only applies them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from . import groups
from .state import (
    ACTIVE,
    CRASHED,
    FINISHED,
    OVER_BUDGET,
    PENDING,
    RUNNING,
    STOPPED,
    STOPPING,
    AgentRecord,
    LaunchState,
    read_state,
    write_state,
)

POLL_SECONDS = 0.2
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def due_action(
    agent: AgentRecord, now: float, budget_seconds: float | None, grace_seconds: float, stop_requested: bool
) -> tuple[str, str] | None:
    """What the supervisor owes a living agent now: ("term", reason), ("kill", reason) or None.

    A running agent gets SIGTERM when a stop was asked for ("stop") or its budget is spent ("budget");
    a stopping one gets SIGKILL once the grace period since its SIGTERM is over."""
    if agent.state == RUNNING:
        if stop_requested:
            return ("term", "stop")
        if budget_seconds is not None and agent.started_at is not None and now - agent.started_at >= budget_seconds:
            return ("term", "budget")
        return None
    if agent.state == STOPPING and not agent.killed and agent.stop_sent_at is not None:
        if now - agent.stop_sent_at >= grace_seconds:
            return ("kill", agent.stop_reason or "stop")
    return None


def final_state(stop_reason: str | None, exit_code: int) -> str:
    """How an agent ended: stopped by `launch stop`, over its budget, finished (exit 0) or crashed."""
    if stop_reason == "stop":
        return STOPPED
    if stop_reason == "budget":
        return OVER_BUDGET
    return FINISHED if exit_code == 0 else CRASHED


def agent_environment(account: str) -> dict[str, str]:
    """The agent's environment: this installation's `git agora` and `python3` first on PATH, and its
    account (AGORA_ACCOUNT wins over any account of the person who launched it)."""
    bin_dir = str(Path(sys.executable).parent)
    path = bin_dir + os.pathsep + os.environ.get("PATH", "")
    return {**os.environ, "PATH": path, "AGORA_ACCOUNT": account}


class _StopRequest:
    def __init__(self) -> None:
        self.requested = False
        self.saved: dict[int, object] = {}

    def __enter__(self) -> _StopRequest:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self.requested = True

    def __exit__(self, *exc) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def supervise(
    directory: Path,
    mode: str = "detached",
    clock: Callable[[], float] = time.time,
    poll: float = POLL_SECONDS,
    on_started: Callable[[], None] | None = None,
) -> LaunchState:
    """Run the launch in `directory` to its end: every agent ended and its process group gone.
    `on_started` is called once every agent was started and the state says so."""
    state = read_state(directory)
    state.supervisor_pid, state.supervisor_mode, state.supervisor_started_at = os.getpid(), mode, clock()
    with _StopRequest() as stop:
        procs = {agent.name: _start(agent, clock) for agent in state.agents if agent.state == PENDING}
        write_state(directory, state)
        if on_started is not None:
            on_started()
        leftovers: dict[str, float] = {}  # agents whose leader ended while its group lives on: SIGKILL deadline
        while True:
            now = clock()
            if stop.requested and state.stop_requested_at is None:
                state.stop_requested_at = now
            changed = _step(state, procs, leftovers, now, stop.requested or state.stop_requested_at is not None)
            if changed:
                write_state(directory, state)
            if not any(a.state in ACTIVE for a in state.agents) and not leftovers:
                break
            time.sleep(poll)
    state.supervisor_ended_at = clock()
    write_state(directory, state)
    return state


def _start(agent: AgentRecord, clock: Callable[[], float]) -> subprocess.Popen | None:
    try:
        proc = groups.start(agent.argv, agent.clone, agent_environment(agent.name), agent.stdout, agent.stderr)
    except OSError as exc:
        agent.state, agent.exit_code, agent.ended_at = CRASHED, 127, clock()
        agent.note = f"could not start: {exc}"
        return None
    agent.state, agent.pid, agent.started_at = RUNNING, proc.pid, clock()
    return proc


def _step(
    state: LaunchState,
    procs: dict[str, subprocess.Popen | None],
    leftovers: dict[str, float],
    now: float,
    stop_requested: bool,
) -> bool:
    """Apply one round of decisions; True when the state changed."""
    changed = False
    for agent in state.agents:
        proc = procs.get(agent.name)
        if agent.state not in (RUNNING, STOPPING) or proc is None or agent.pid is None:
            continue
        code = proc.poll()
        if code is not None:
            agent.exit_code, agent.ended_at = code, now
            agent.state = final_state(agent.stop_reason, code)
            if groups.members(agent.pid):  # what the agent left running ends with it
                if agent.stop_sent_at is None:
                    groups.terminate(agent.pid)
                leftovers[agent.name] = (agent.stop_sent_at or now) + state.grace_seconds
            changed = True
            continue
        action = due_action(agent, now, state.budget_seconds, state.grace_seconds, stop_requested)
        if action is None:
            continue
        kind, reason = action
        if kind == "term":
            groups.terminate(agent.pid)
            agent.state, agent.stop_reason, agent.stop_sent_at = STOPPING, reason, now
        else:
            groups.kill(agent.pid)
            agent.killed = True
        changed = True
    for name, deadline in list(leftovers.items()):
        agent = next(a for a in state.agents if a.name == name)
        assert agent.pid is not None
        if not groups.members(agent.pid):
            del leftovers[name]
        elif now >= deadline:
            groups.kill(agent.pid)
            changed = changed or not agent.killed
            agent.killed = True
    return changed


def main(argv: list[str] | None = None) -> int:
    """`python -m git_agora.supervise [--detach] LAUNCH_DIR`. With --detach the supervisor forks into its
    own session and this process exits once the agents run: 0, or 1 when the supervisor died first."""
    args = sys.argv[1:] if argv is None else argv
    detach = args[:1] == ["--detach"]
    args = args[1:] if detach else args
    if len(args) != 1:
        print("usage: python -m git_agora.supervise [--detach] LAUNCH_DIR", file=sys.stderr)
        return 2
    directory = Path(args[0]).resolve()
    if not detach:
        supervise(directory, mode="foreground")
        return 0
    ready, told = os.pipe()
    if os.fork() > 0:
        os.close(told)
        return 0 if os.read(ready, 1) == b"1" else 1
    os.close(ready)
    os.setsid()

    def started() -> None:
        os.write(told, b"1")
        os.close(told)

    supervise(directory, mode="detached", on_started=started)
    return 0
