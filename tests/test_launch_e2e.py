"""`git agora launch`: agents in their own clones, accounts and keys, under a supervisor that enforces
budgets, reports crashes and stops them cleanly; `launch status` and `launch stop`."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from agora_testing import agora, demo_task_clone, git
from git_agora.supervise.state import AgentRecord, LaunchState, read_state, write_state
from git_agora.supervise.supervisor import due_action, final_state, supervise

SLEEPER = "sleep 600 #{prompt}"  # a long-running agent: the prompt is a shell comment


def group_members(pgid: int) -> list[psutil.Process]:
    """Living (not zombie) processes of a process group."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def wait_for(predicate, timeout: float = 300, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def status(tmp_path: Path, directory: Path) -> dict:
    return agora(tmp_path, "launch", "status", "--dir", str(directory), "--json").json()


def launch(tmp_path: Path, remote: Path, *args: str, check: bool = True):
    return agora(tmp_path, "launch", *args, str(remote), check=check, timeout=300)


# --- the decisions, with a clock in hand ---------------------------------------------------------


def record(state: str = "running", started_at: float = 100.0, **fields) -> AgentRecord:
    return AgentRecord("agent-01", "d", "c", "k", "o", "e", ["true"], state=state, started_at=started_at, **fields)


def test_the_budget_and_the_grace_period_decide_on_the_clock_given():
    running = record()
    assert due_action(running, 159.9, 60, 5, False) is None
    assert due_action(running, 160.0, 60, 5, False) == ("term", "budget")
    assert due_action(running, 101.0, None, 5, False) is None  # no budget: runs until it ends
    assert due_action(running, 101.0, 60, 5, True) == ("term", "stop")
    stopping = record("stopping", stop_reason="budget", stop_sent_at=160.0)
    assert due_action(stopping, 164.9, 60, 5, False) is None
    assert due_action(stopping, 165.0, 60, 5, False) == ("kill", "budget")
    assert due_action(record("stopping", stop_reason="stop", stop_sent_at=1.0, killed=True), 99, 60, 5, False) is None
    assert due_action(record("crashed"), 1e9, 60, 5, True) is None  # an ended agent is never touched again
    assert final_state(None, 0) == "finished" and final_state(None, 3) == "crashed"
    assert final_state("budget", -15) == "over-budget" and final_state("stop", 0) == "stopped"


def test_the_supervisor_enforces_the_budget_on_an_injected_clock(tmp_path):
    """A fake clock that runs ten seconds a tick: a 30 s budget ends a `sleep 600` within a few ticks."""
    ticks = iter(range(0, 10_000, 10))
    agent = AgentRecord(
        "agent-01", str(tmp_path), str(tmp_path), "k", str(tmp_path / "o"), str(tmp_path / "e"), ["sleep", "600"]
    )
    write_state(tmp_path, LaunchState("r", "sleep", "p", None, 30.0, 20.0, 0.0, [agent]))
    ended = supervise(tmp_path, mode="foreground", clock=lambda: float(next(ticks)), poll=0.01)
    (agent,) = ended.agents
    assert agent.state == "over-budget" and agent.stop_reason == "budget"
    assert agent.exit_code == -signal.SIGTERM and not agent.killed
    assert agent.stop_sent_at is not None and agent.stop_sent_at - agent.started_at >= 30
    assert read_state(tmp_path).supervisor_ended_at is not None
    assert agent.pid is not None and not group_members(agent.pid)


# --- the scripted worker on a real remote ------------------------------------------------------


@pytest.mark.slow
def test_four_scripted_agents_publish_under_their_own_accounts_and_keys(tmp_path, remote):
    demo_task_clone(tmp_path, remote, "founder", "founder")
    agents = tmp_path / "agents"
    started = launch(tmp_path, remote, "--agents", "4", "--scripted", "--rounds", "2", "--dir", str(agents), "--json")
    first = started.json()
    names = ["agent-01", "agent-02", "agent-03", "agent-04"]
    assert [a["name"] for a in first["agents"]] == names
    assert all(a["state"] == "running" and a["running"] for a in first["agents"])
    assert first["supervisor_running"] and first["supervisor_mode"] == "detached"

    def ended_launch():
        current = status(tmp_path, agents)
        return None if current["supervisor_running"] else current

    ended = wait_for(ended_launch, what="the agents to end")
    by_name = {a["name"]: a for a in ended["agents"]}
    for name, agent in by_name.items():
        assert agent["state"] == "finished" and agent["exit_code"] == 0 and not agent["running"], agent
        assert agent["contributions"] >= 1 and agent["queued"] == 0
        assert agent["last_contribution"]["title"]
        events = [json.loads(line) for line in Path(agent["stdout"]).read_text().splitlines()]
        assert {e["account"] for e in events} == {name} and {e["round"] for e in events} >= {0, 1}
        clone, key = Path(agent["clone"]), Path(agent["key"])
        assert git(clone, "config", "agora.signingkey").strip() == str(key)
        assert git(clone, "config", "agora.account").strip() == name
        assert not key.is_relative_to(clone) and not Path(agent["stdout"]).is_relative_to(clone)
    keys = {name: Path(a["key"] + ".pub").read_text() for name, a in by_name.items()}
    assert len({key.split()[1] for key in keys.values()}) == 4, "four agents, four keys"

    refs = git(remote, "for-each-ref", "--format=%(refname)", "refs/agora/log/")
    assert {f"refs/agora/log/{name}" for name in names} <= set(refs.split())
    for name, agent in by_name.items():
        signers = tmp_path / f"signers-{name}"
        signers.write_text(f"{name} {keys[name]}")
        sha = agent["last_contribution"]["sha"]
        verified = git(remote, "-c", f"gpg.ssh.allowedSignersFile={signers}", "verify-commit", "--raw", sha)
        assert verified is not None  # raises when the signature is not by this agent's own key
    founder = tmp_path / "founder"
    agora(founder, "fetch")
    rows = agora(founder, "log", "--limit", "1000", "--json").json()
    assert set(names) <= {r["account"] for r in rows if not r["reasons"]}

    # the founder confirms the fleet's work in one command; each confirmed result establishes its agent
    pending = agora(founder, "verify", "--pending", "--json", timeout=600).json()
    assert pending["checked"] and not pending["left"], pending
    assert {c["verdict"] for c in pending["checked"]} == {"confirmed"}, pending  # honest scripted agents
    assert {c["account"] for c in pending["checked"]} <= set(names)
    for checked in pending["checked"]:
        shown = agora(founder, "show", checked["target"], "--json").json()
        assert shown["evidence"]["status"] == "confirmed", shown["evidence"]
    assert "nothing to verify" in agora(founder, "verify", "--pending").stdout  # each claim once
    neither = agora(founder, "verify", check=False)
    assert neither.returncode == 2 and "give SHA, or --pending" in neither.stderr

    text = agora(tmp_path, "launch", "status", "--dir", str(agents)).stdout
    assert "agent-01  finished" in text and "last contribution" in text


# --- external agents: stop, crash, budget --------------------------------------------------------


def test_stop_ends_every_agents_process_group_and_records_it(tmp_path, project, remote):
    agents = tmp_path / "agents"
    first = launch(tmp_path, remote, "--agents", "2", "--command", SLEEPER, "--dir", str(agents), "--grace", "2")
    assert "agent-01  running" in first.stdout
    pids = [a["pid"] for a in status(tmp_path, agents)["agents"]]
    assert all(group_members(pid) for pid in pids)  # sh and its sleep, in the agent's own group

    again = launch(tmp_path, remote, "--agents", "1", "--command", SLEEPER, "--dir", str(agents), check=False)
    assert again.returncode == 1 and "already has running agents" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1

    stopped = agora(tmp_path, "launch", "stop", "--dir", str(agents), "--json", timeout=60).json()
    assert [a["state"] for a in stopped["agents"]] == ["stopped", "stopped"]
    assert all(a["signal"] == "SIGTERM" and not a["running"] for a in stopped["agents"])
    assert not stopped["supervisor_running"] and stopped["stop_requested_at"] is not None
    for pid in pids:
        assert not group_members(pid)
    assert read_state(agents).agents[0].stop_reason == "stop"


def test_a_crashed_agent_is_reported_and_never_restarted(tmp_path, project, remote):
    starts = tmp_path / "starts"
    crash = f"sh -c 'echo started >> {starts}; exit 3' {{prompt}}"
    agents = tmp_path / "agents"
    result = launch(tmp_path, remote, "--agents", "1", "--command", crash, "--dir", str(agents), "--wait", check=False)
    assert result.returncode == 1
    assert "agent-01  crashed" in result.stdout
    (agent,) = status(tmp_path, agents)["agents"]
    assert agent["state"] == "crashed" and agent["exit_code"] == 3 and not agent["running"]
    assert starts.read_text() == "started\n"


def test_an_agent_killed_from_outside_is_reported_with_its_signal(tmp_path, project, remote):
    agents = tmp_path / "agents"
    launch(tmp_path, remote, "--agents", "2", "--command", SLEEPER, "--dir", str(agents), "--grace", "1")
    victim, survivor = status(tmp_path, agents)["agents"]
    os.killpg(victim["pid"], signal.SIGKILL)

    def reported():
        agents_now = status(tmp_path, agents)["agents"]
        return agents_now if agents_now[0]["state"] != "running" else None

    killed, other = wait_for(reported, 60, "the killed agent to be reported")
    assert killed["state"] == "crashed" and killed["signal"] == "SIGKILL" and not killed["running"]
    assert other["state"] == "running" and other["pid"] == survivor["pid"]  # the others go on
    assert killed["pid"] == victim["pid"]  # the same process, ended: nothing started in its place
    agora(tmp_path, "launch", "stop", "--dir", str(agents), timeout=60)


def test_the_budget_stops_an_agent_that_overruns_it(tmp_path, project, remote):
    """0.01 minutes: the agents are stopped, whenever the busy machine gets to it, long before their 600 s."""
    stubborn = "sh -c 'trap \"\" TERM; sleep 600' {prompt}"  # ignores SIGTERM: needs SIGKILL after the grace
    for name, command in (("polite", SLEEPER), ("stubborn", stubborn)):
        agents = tmp_path / name
        args = ("--agents", "2", "--command", command, "--budget-minutes", "0.01", "--grace", "1")
        result = launch(tmp_path, remote, *args, "--dir", str(agents), "--wait", "--json")
        ended = result.json()["agents"]
        assert [a["state"] for a in ended] == ["over-budget", "over-budget"], name
        assert all(a["left_seconds"] == 0 and not a["running"] for a in ended)
        assert not any(group_members(a["pid"]) for a in ended)
        if name == "polite":  # ended by the SIGTERM
            assert all(a["signal"] == "SIGTERM" for a in ended)
        else:  # still there after the grace period: SIGKILL
            assert all(agent.killed for agent in read_state(agents).agents)


def test_stop_works_when_the_supervisor_is_gone(tmp_path, project, remote):
    agents = tmp_path / "agents"
    launch(tmp_path, remote, "--agents", "1", "--command", SLEEPER, "--dir", str(agents), "--grace", "1")
    state = read_state(agents)
    os.kill(state.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: not status(tmp_path, agents)["supervisor_running"], 60, "the supervisor to die")
    (agent,) = status(tmp_path, agents)["agents"]
    assert agent["running"] and "supervisor is gone" in agent["note"]
    stopped = agora(tmp_path, "launch", "stop", "--dir", str(agents), "--json", timeout=60).json()
    assert stopped["agents"][0]["state"] == "stopped" and "exit code unknown" in stopped["agents"][0]["note"]
    assert not group_members(agent["pid"])


# --- bad input: one line, exit 1, nothing started ------------------------------------------------


def test_bad_launches_are_one_line_and_start_nothing(tmp_path, project, remote):
    agents = tmp_path / "agents"
    cases = [
        (("--agents", "0", "--command", SLEEPER), str(remote), "--agents must be at least 1"),
        (("--agents", "1", "--command", "sleep 600"), str(remote), "has no {prompt}"),
        (("--agents", "1", "--command", "no-such-agent-here {prompt}"), str(remote), "is not installed here"),
        (("--agents", "1", "--command", SLEEPER, "--budget-minutes", "0"), str(remote), "must be more than 0"),
        (("--agents", "1", "--command", SLEEPER, "--rounds", "2"), str(remote), "decides its own rounds"),
        (("--agents", "1", "--command", SLEEPER), str(tmp_path / "nowhere.git"), "cannot launch"),
        (("--agents", "1", "--scripted"), str(remote), "demo's task"),
    ]
    for args, url, message in cases:
        result = agora(tmp_path, "launch", *args, "--dir", str(agents), url, check=False)
        assert result.returncode == 1, (args, result.stderr)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert not agents.exists(), args
    assert "refs/agora/log/agent-01" not in git(remote, "for-each-ref")
    missing = agora(tmp_path, "launch", "status", "--dir", str(agents), check=False)
    assert missing.returncode == 1 and "no launch in" in missing.stderr
