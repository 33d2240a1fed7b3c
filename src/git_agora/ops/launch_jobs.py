"""A launch on a scheduler (`launch --scheduler slurm`): each agent one job, the scheduler its supervisor.

Everything is prepared before anything is submitted (`ops.launch`: clones, keys, logs); then each agent's
job script (`AGENT/job.sh`) is written and submitted, its budget the job's time limit. No process of ours
stays behind on the login node: Slurm starts, limits and ends the jobs, and `--restart` is the job
script looping (a new session on the same account and key when one ends, until Slurm's `--time` ends
the job). `refresh` reads the scheduler and records each change in `launch.json`, so an ended job's
state is kept after the scheduler forgets it; `launch status` and `launch stop` call it.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
import time
from pathlib import Path

from ..errors import AgoraError
from ..supervise.scheduler import Job, Scheduler, SchedulerError, scheduler
from ..supervise.state import ACTIVE, PENDING, STOPPED, AgentRecord, LaunchState, write_state

NODE_LOCAL = ("/tmp", "/var/tmp", "/dev/shm", "/run")  # plainly one node's own
LOCAL_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs"}
RESTART_PAUSE_SECONDS = 5
JOB_SCRIPT = "job.sh"
SESSIONS = "sessions.log"  # a --restart job's sessions: "start N EPOCH", "end N EPOCH EXIT"
CRASH_LOOP = 3  # sessions in a row that failed quickly, after which a --restart job gives up
CRASH_LOOP_SECONDS = 30


def check_shared(where: Path, node_local_ok: bool) -> None:
    """Refuse a launch folder that plainly lives on one node only: the jobs run on other nodes, which
    must see the clones, keys and logs (and this Python and git-agora)."""
    if node_local_ok:
        return
    local = next((p for p in NODE_LOCAL if where == Path(p) or where.is_relative_to(p)), None)
    kind = _filesystem(where)
    if local is None and kind not in LOCAL_FILESYSTEMS:
        return
    why = f"it is under {local}" if local else f"it is on {kind}"
    raise AgoraError(
        f"{where} is node-local ({why}): the jobs run on other nodes; put --dir on a folder every node "
        "shares (home, project or scratch storage), or pass --node-local-ok on a single-node cluster"
    )


def _filesystem(where: Path) -> str | None:
    """The type of the filesystem holding `where`, from /proc/mounts (None where unknown)."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return None
    probe = where
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    probe = probe.resolve()
    best: tuple[int, str] | None = None
    for fields in mounts:
        if len(fields) >= 3 and (probe == Path(fields[1]) or probe.is_relative_to(fields[1])):
            if best is None or len(fields[1]) > best[0]:
                best = (len(fields[1]), fields[2])
    return best[1] if best else None


def job_script(agent: AgentRecord, restart: bool) -> str:
    """The agent's session as a job: its account and this installation's `git agora` first on PATH,
    in its clone; with `restart` a loop that starts a new session when one ends (`AGORA_SESSION` its
    number), each session's start and end a line of `AGENT/sessions.log`, until the job's time limit
    ends it, or until `CRASH_LOOP` sessions in a row each failed within `CRASH_LOOP_SECONDS` (then the
    job fails, exit 3, rather than hold its node for nothing)."""
    bin_dir = str(Path(sys.executable).parent)
    command = shlex.join(agent.argv)
    head = [
        "#!/bin/sh",
        f"# git agora launch: {agent.name}'s session as a batch job; the job's time limit is its budget.",
        f"cd {shlex.quote(agent.clone)} || exit 1",
        f"AGORA_ACCOUNT={shlex.quote(agent.name)}; export AGORA_ACCOUNT",
        f'PATH={shlex.quote(bin_dir)}:"$PATH"; export PATH',
    ]
    if not restart:
        return "\n".join([*head, f"exec {command}", ""])
    log = shlex.quote(str(Path(agent.directory) / SESSIONS))
    loop = [
        "# --restart: this script (never a process on the login node) starts a new session on the same",
        "# account and key each time one ends, until the scheduler's time limit ends the job.",
        "session=0",
        "failed=0",
        "while :; do",
        "  session=$((session + 1))",
        "  began=$(date +%s)",
        f'  echo "start $session $began" >> {log}',
        '  echo "git agora launch: session $session starts" >&2',
        "  AGORA_SESSION=$session; export AGORA_SESSION",
        f"  {command}",
        "  code=$?",
        "  ended=$(date +%s)",
        f'  echo "end $session $ended $code" >> {log}',
        '  echo "git agora launch: session $session ended with exit $code" >&2',
        f'  if [ "$code" -ne 0 ] && [ $((ended - began)) -lt {CRASH_LOOP_SECONDS} ]; then',
        "    failed=$((failed + 1))",
        "  else",
        "    failed=0",
        "  fi",
        f'  if [ "$failed" -ge {CRASH_LOOP} ]; then',
        f'    echo "git agora launch: {CRASH_LOOP} sessions in a row failed within {CRASH_LOOP_SECONDS} s each:'
        ' not restarting" >&2',
        "    exit 3",
        "  fi",
        f"  sleep {RESTART_PAUSE_SECONDS}",
        "done",
        "",
    ]
    return "\n".join([*head, *loop])


def sessions(agent: AgentRecord) -> int:
    """How many sessions a `--restart` job started (the lines its script wrote; 0 before the first)."""
    try:
        lines = (Path(agent.directory) / SESSIONS).read_text(errors="replace").splitlines()
    except OSError:
        return 0
    return sum(1 for line in lines if line.startswith("start "))


def submit_all(where: Path, state: LaunchState) -> None:
    """Write each agent's job script and submit it; on a refusal, cancel those already submitted."""
    jobs = scheduler(state.scheduler)
    submitted: list[str] = []
    try:
        for agent in state.agents:
            script = Path(agent.directory) / JOB_SCRIPT
            script.write_text(job_script(agent, state.restart))
            script.chmod(0o755)
            job = Job(
                name=f"agora-{agent.name}",
                script=str(script),
                cwd=agent.clone,
                stdout=agent.stdout,
                stderr=agent.stderr,
                time_seconds=state.budget_seconds,
                options=tuple(state.scheduler_options),
            )
            agent.job_id = jobs.submit(job)
            submitted.append(agent.job_id)
            agent.state, agent.started_at = PENDING, None
            write_state(where, state)
    except SchedulerError as exc:
        _cancel_quietly(jobs, submitted)
        for agent in state.agents:
            agent.state, agent.note = STOPPED, f"not run: the launch's submission failed ({exc})"
        write_state(where, state)
        raise AgoraError(f"cannot launch on {state.scheduler}: {exc}") from None
    state.supervisor_mode, state.supervisor_started_at = state.scheduler, time.time()
    write_state(where, state)


def _cancel_quietly(jobs: Scheduler, ids: list[str]) -> None:
    with contextlib.suppress(SchedulerError):
        jobs.cancel(ids)


def refresh(where: Path, state: LaunchState) -> LaunchState:
    """Read each unended agent's job from the scheduler and record what changed (an ended job's
    state, exit code, reason and times stay in launch.json once read)."""
    waiting = [a for a in state.agents if a.state in ACTIVE and a.job_id]
    if not waiting:
        return state
    try:
        found = scheduler(state.scheduler).status([a.job_id for a in waiting if a.job_id])
    except SchedulerError as exc:
        raise AgoraError(f"cannot read the launch's jobs: {exc}") from None
    changed = False
    for agent in waiting:
        assert agent.job_id is not None
        job = found[agent.job_id]
        before = (agent.state, agent.scheduler_state, agent.started_at, agent.ended_at)
        agent.state, agent.scheduler_state = job.state, job.raw
        agent.started_at = job.started_at or agent.started_at
        if job.ended:
            agent.exit_code, agent.ended_at = job.exit_code, job.ended_at or time.time()
            agent.note = f"{job.raw}: {job.reason}" if job.reason else job.raw
            if job.raw == "CANCELLED" and agent.stop_reason == "stop":
                agent.note = "cancelled by `launch stop` (scancel)"
        changed = changed or before != (agent.state, agent.scheduler_state, agent.started_at, agent.ended_at)
    if changed and not any(a.state in ACTIVE for a in state.agents):
        state.supervisor_ended_at = time.time()
    if changed:
        write_state(where, state)
    return state


def stop_all(where: Path, state: LaunchState, timeout: float) -> LaunchState:
    """Cancel every unended job of the launch and wait (up to `timeout`) until the scheduler says so."""
    state = refresh(where, state)
    waiting = [a for a in state.agents if a.state in ACTIVE and a.job_id]
    state.stop_requested_at = state.stop_requested_at or time.time()
    for agent in waiting:
        agent.stop_reason, agent.stop_sent_at = "stop", time.time()
    write_state(where, state)
    try:
        scheduler(state.scheduler).cancel([a.job_id for a in waiting if a.job_id])
    except SchedulerError as exc:
        raise AgoraError(f"cannot cancel the launch's jobs: {exc}") from None
    deadline = time.monotonic() + timeout
    while any(a.state in ACTIVE for a in state.agents) and time.monotonic() < deadline:
        time.sleep(0.5)
        state = refresh(where, state)
    return state


def wait_all(where: Path, state: LaunchState, poll: float = 2.0) -> LaunchState:
    """`launch --wait`: read the jobs until each ended (this process only reads; Slurm runs them)."""
    while True:
        state = refresh(where, state)
        if not any(a.state in ACTIVE for a in state.agents):
            return state
        time.sleep(poll)
