"""`git agora launch --scheduler slurm` against a real single-node Slurm (`tests/slurm.py`): each agent a
batch job, its budget the job's --time, its end state read from Slurm and kept in launch.json; reruns as
jobs (`verify --pending`, `ci`), on Slurm and, with no Slurm, as local jobs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agora_testing import agora, demo_task_clone, git
from git_agora.supervise.scheduler import slurm_state, time_limit
from git_agora.supervise.state import ACTIVE

SLEEPER = "sleep 600 #{prompt}"


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def status(tmp_path: Path, directory: Path) -> dict:
    return agora(tmp_path, "launch", "status", "--dir", str(directory), "--json").json()


def slurm_launch(tmp_path: Path, remote: Path, directory: Path, *args: str, check: bool = True):
    argv = ("launch", "--scheduler", "slurm", "--node-local-ok", "--dir", str(directory), *args, str(remote))
    return agora(tmp_path, *argv, check=check, timeout=300)


# --- pure ----------------------------------------------------------------------------------------


def test_slurm_states_read_in_the_launch_words():
    assert slurm_state("TIMEOUT", "0:15", "TimeLimit").state == "over-budget"
    assert slurm_state("COMPLETED", "0:0").state == "finished" and slurm_state("COMPLETED", "0:0").exit_code == 0
    failed = slurm_state("FAILED", "3:0", "NonZeroExitCode")
    assert failed.state == "crashed" and failed.exit_code == 3 and failed.reason == "exit 3, NonZeroExitCode"
    assert slurm_state("OUT_OF_MEMORY", "0:125").state == "crashed"
    assert "out of memory" in (slurm_state("OUT_OF_MEMORY", "0:125").reason or "")
    assert slurm_state("NODE_FAIL", "0:0").reason == "its node failed"
    assert slurm_state("CANCELLED by 0", "0:15").state == "stopped"
    assert slurm_state("CANCELLED by 0", "0:15").exit_code == -15
    assert slurm_state("PENDING", "0:0", "Resources").state == "pending"
    assert slurm_state("RUNNING").state == "running" and slurm_state("COMPLETING").state == "stopping"
    assert slurm_state("WEIRD").state == "lost"
    assert time_limit(30) == "1" and time_limit(60) == "1" and time_limit(61) == "2" and time_limit(3600) == "60"


# --- refusals before anything is submitted -------------------------------------------------------


def test_a_node_local_launch_folder_and_slurm_options_without_slurm_are_refused(tmp_path, remote):
    demo_task_clone(tmp_path, remote, "founder", "founder")
    agents = tmp_path / "agents"
    argv = ("launch", "--scheduler", "slurm", "--scripted", "--agents", "1", "--dir", str(agents), str(remote))
    refused = agora(tmp_path, *argv, check=False)
    assert refused.returncode != 0 and not agents.exists()
    assert "is node-local (it is under /tmp)" in refused.stderr and "--node-local-ok" in refused.stderr
    local = agora(
        tmp_path, "launch", "--scripted", "--agents", "1", "--slurm-arg=--gres=gpu:1", str(remote), check=False
    )
    assert local.returncode != 0 and "--slurm-arg applies to --scheduler slurm" in local.stderr
    again = agora(tmp_path, "launch", "--scripted", "--agents", "1", "--restart", str(remote), check=False)
    assert again.returncode != 0 and "--restart applies to --scheduler slurm" in again.stderr


# --- on the cluster ------------------------------------------------------------------------------


@pytest.mark.slow
def test_four_scripted_agents_run_as_slurm_jobs_and_publish_to_the_remote(tmp_path, remote, slurm):
    demo_task_clone(tmp_path, remote, "founder", "founder")
    agents = tmp_path / "agents"
    started = slurm_launch(
        tmp_path, remote, agents, "--agents", "4", "--scripted", "--rounds", "2", "--slurm-arg=--gres=gpu:1", "--json"
    ).json()
    assert started["scheduler"] == "slurm" and started["scheduler_options"] == ["--gres=gpu:1"]
    ids = [a["job_id"] for a in started["agents"]]
    assert all(ids) and len(set(ids)) == 4
    shown = slurm.run("scontrol", "show", "job", "-o", ids[0]).stdout
    assert "TresPerNode=gres:gpu:1" in shown and "TimeLimit=01:00:00" in shown  # --budget-minutes 60
    ended = wait_for(lambda: (s := status(tmp_path, agents))["supervisor_running"] is False and s, 300, "the jobs")
    for agent in ended["agents"]:
        assert agent["state"] == "finished" and agent["exit_code"] == 0, agent
        assert agent["scheduler_state"] == "COMPLETED" and not agent["running"]
        assert agent["contributions"] >= 1 and agent["queued"] == 0 and agent["last_contribution"]["title"]
        events = [json.loads(line) for line in Path(agent["stdout"]).read_text().splitlines()]
        assert {e["account"] for e in events} == {agent["name"]}
        assert git(remote, "rev-parse", "--verify", f"refs/agora/log/{agent['name']}").strip()
    recorded = json.loads((agents / "launch.json").read_text())
    assert [a["scheduler_state"] for a in recorded["agents"]] == ["COMPLETED"] * 4


def ended(tmp_path: Path, directory: Path, timeout: float, what: str) -> dict:
    return wait_for(
        lambda: (s := status(tmp_path, directory)["agents"][0])["state"] not in ACTIVE and s,  # stopping: not yet
        timeout,
        what,
    )


@pytest.mark.slow
def test_slurm_ends_agents_at_their_time_restarts_sessions_till_then_and_launch_stop_cancels_the_rest(
    tmp_path, remote, slurm
):
    demo_task_clone(tmp_path, remote, "founder", "founder")
    short, others = tmp_path / "short", tmp_path / "others"
    looping, crashing = tmp_path / "looping", tmp_path / "crashing"
    once = ("--agents", "1", "--scripted", "--rounds", "1", "--restart", "--budget-minutes", "0.5")
    slurm_launch(tmp_path, remote, looping, *once, "--prefix", "looper")
    slurm_launch(tmp_path, remote, crashing, "--agents", "1", "--command", "false #{prompt}", "--restart")
    slurm_launch(tmp_path, remote, short, "--agents", "1", "--command", SLEEPER, "--budget-minutes", "0.5")
    running = slurm_launch(tmp_path, remote, others, "--agents", "3", "--command", SLEEPER, "--prefix", "other")
    ids = [a["job_id"] for a in json.loads((others / "launch.json").read_text())["agents"]]
    assert "launch in" in running.stdout and "scheduler slurm" in running.stdout
    wait_for(lambda: all(a["state"] == "running" for a in status(tmp_path, others)["agents"]), 60, "3 running")

    stopped = agora(tmp_path, "launch", "stop", "--dir", str(others), "--json", timeout=120).json()
    assert [a["state"] for a in stopped["agents"]] == ["stopped"] * 3
    assert all(a["note"] == "cancelled by `launch stop` (scancel)" for a in stopped["agents"])
    queue = slurm.run("squeue", "-h", "-j", ",".join(ids), "-o", "%i %T", check=False).stdout
    assert not queue.strip(), queue

    over = ended(tmp_path, short, 150, "TIMEOUT")
    assert over["state"] == "over-budget" and over["scheduler_state"] == "TIMEOUT", over
    assert over["used_seconds"] >= 55 and "Slurm's --time ran out" in over["note"]
    shown = agora(tmp_path, "launch", "status", "--dir", str(short)).stdout
    assert "over-budget" in shown and "TIMEOUT" in shown
    assert over["sessions"] is None  # no --restart

    # a session that keeps failing at once: its job script gives up after three, and the job fails
    crashed = ended(tmp_path, crashing, 120, "the crash loop to end")
    assert crashed["state"] == "crashed" and crashed["scheduler_state"] == "FAILED", crashed
    assert crashed["exit_code"] == 3 and crashed["sessions"] == 3 and crashed["contributions"] == 0
    assert "3 sessions in a row failed" in Path(crashed["stderr"]).read_text()

    # --restart: the job script starts a new session on the same account and key when one ends (one
    # scripted round each, which publishes), until Slurm's --time ends the job
    looped = ended(tmp_path, looping, 150, "the restarted sessions' TIMEOUT")
    assert looped["state"] == "over-budget" and looped["scheduler_state"] == "TIMEOUT", looped
    assert looped["sessions"] >= 2 and looped["contributions"] - looped["queued"] >= 2, looped
    lines = [line.split() for line in (looping / "looper-01" / "sessions.log").read_text().splitlines()]
    ends = [words for words in lines if words[0] == "end"]
    assert len(ends) >= looped["sessions"] - 1 and all(words[3] == "0" for words in ends), lines
    events = [json.loads(line) for line in Path(looped["stdout"]).read_text().splitlines() if line.startswith("{")]
    assert {e["account"] for e in events} == {"looper-01"}
    shown = agora(tmp_path, "launch", "status", "--dir", str(looping)).stdout
    assert f"looper-01: {looped['sessions']} sessions (--restart); TIMEOUT" in shown, shown


# --- reruns as jobs ------------------------------------------------------------------------------


def set_choice(clone: Path, knob: str, value: str) -> None:
    path = clone / "choices.py"
    lines = [f"{knob} = {value}" if ln.startswith(knob) else ln for ln in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def verdicts_by(remote: Path, account: str) -> dict[str, int]:
    """How many verifications `account` published on each target (by the short SHA in the title)."""
    titles = git(remote, "log", "--format=%s", f"refs/agora/log/{account}").splitlines()
    counted: dict[str, int] = {}
    for title in titles:
        if title.startswith("Verification of "):
            short = title.removeprefix("Verification of ").split(":")[0]
            counted[short] = counted.get(short, 0) + 1
    return counted


def pending_on_slurm(clone: Path, check: bool = True):
    argv = ("verify", "--pending", "--scheduler", "slurm", "--jobs", "3", "--node-local-ok", "--json")
    return agora(clone, *argv, check=check, timeout=600)


@pytest.mark.slow
def test_reruns_as_slurm_jobs_publish_one_verdict_per_claim_also_when_cancelled_or_run_twice(tmp_path, remote, slurm):
    import subprocess

    alice = demo_task_clone(tmp_path, remote)
    baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()["sha"]
    bob = tmp_path / "b"
    bob.mkdir()
    git(bob, "init", "-q")
    git(bob, "remote", "add", "origin", str(remote))
    git(bob, "config", "agora.account", "bob")
    agora(bob, "fetch")
    agora(bob, "checkout", baseline)
    claims = []
    for order in ("1", "3", "4", "5"):
        set_choice(bob, "ORDER", order)
        if order == "5":  # a slow claim (its build sleeps): its rerun job is surely cancelled mid-rerun
            (bob / "choices.py").write_text((bob / "choices.py").read_text() + "__import__('time').sleep(15)\n")
        claims.append(agora(bob, "push", "--check", "-m", f"order {order}", "--tag", "result", "--json").json()["sha"])

    # one run, one of its jobs cancelled while it reruns: that claim gets no verdict and stays pending
    argv = ["git", "agora", "verify", "--pending", "--scheduler", "slurm", "--jobs", "3", "--node-local-ok", "--json"]
    first = subprocess.Popen(argv, cwd=alice, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def a_running_rerun():
        listed = slurm.run("squeue", "-h", "-t", "RUNNING", "-o", "%i %j", check=False).stdout.split("\n")
        return next((line.split()[0] for line in listed if f"agora-rerun-{claims[-1][:12]}" in line), None)

    cancelled = wait_for(a_running_rerun, 120, "the slow claim's rerun job")
    slurm.run("scancel", cancelled)
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    report = json.loads(out)
    lost = [c for c in report["checked"] if c["verdict"] is None]
    assert [c["target"] for c in lost] == [
        claims[-1]
    ] and f"its job {cancelled} ended (CANCELLED) without a verdict" in lost[0]["reason"], report
    assert len([c for c in report["checked"] if c["verification"]]) == 3
    assert sorted(verdicts_by(remote, "alice").values()) == [1, 1, 1]

    # the run itself ended by SIGTERM (as a cancelled CI job is) cancels its job first; nothing published
    ended_run = subprocess.Popen(argv, cwd=alice, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    orphan = wait_for(a_running_rerun, 120, "the left claim's rerun job")
    ended_run.terminate()
    ended_run.communicate(timeout=120)
    assert ended_run.returncode in (143, -15)  # git passes the signal on to git-agora, waits, and dies of it
    shown = lambda: slurm.run("scontrol", "show", "job", "-o", orphan).stdout  # noqa: E731
    wait_for(lambda: "JobState=CANCELLED" in shown(), 60, "its job cancelled")
    assert sorted(verdicts_by(remote, "alice").values()) == [1, 1, 1]

    # two runs at once: the claim left is rerun and published once, by one of them, and only one of
    # them submits a job for it (the other finds it locked, or already verified)
    runs = [subprocess.Popen(argv, cwd=alice, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in "ab"]
    outcomes = [run.communicate(timeout=600) for run in runs]
    assert all(run.returncode == 0 for run in runs), outcomes
    published = [c for out, _ in outcomes for c in json.loads(out)["checked"] if c["verification"]]
    assert [c["target"] for c in published] == [lost[0]["target"]], outcomes
    counted = verdicts_by(remote, "alice")
    assert counted == {sha[:12]: 1 for sha in claims}, counted
    folders = list((alice / ".git" / "agora" / "reruns").glob(f"{claims[-1][:12]}-*"))
    assert len(folders) == 3, folders  # the cancelled job's, the ended run's, the pair's one
    assert "nothing to verify" in agora(alice, "verify", "--pending", "--scheduler", "slurm", "--node-local-ok").stdout


@pytest.mark.slow
def test_ci_on_slurm_reruns_as_jobs_and_signs_here_also_split_in_two_halves(tmp_path, remote, slurm):
    from test_ci_e2e import ci_secret, founded_with_ci, joined

    from agora_testing import make_clone

    alice = founded_with_ci(tmp_path, remote)
    baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()["sha"]
    mallory = joined(tmp_path, remote, "mallory", baseline)
    set_choice(mallory, "ORDER", "4")
    inflated = agora(mallory, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=1.5", "--json").json()["sha"]
    secret, _ = ci_secret(tmp_path)
    runner = make_clone(tmp_path, "ci-runner", str(remote), "ci")
    on_slurm = ("--scheduler", "slurm", "--jobs", "2", "--node-local-ok", "--no-site", "--json")

    # one process: the jobs rerun and hand back bundles (a job holding AGORA_CI_KEY refuses to run);
    # this process, holding the key, checks, signs and publishes each verdict and the witness record
    done = agora(runner, "ci", *on_slurm, env={"AGORA_CI_KEY": secret}, timeout=600).json()
    assert done["outcome"] == "done", done
    assert {c["target"]: c["verdict"] for c in done["checked"]} == {baseline: "confirmed", inflated: "failed"}
    assert all(c["verification"] for c in done["checked"]) and len(done["witness_records"]) == 1
    assert verdicts_by(remote, "ci") == {baseline[:12]: 1, inflated[:12]: 1}
    bundles = sorted((runner / ".git" / "agora" / "reruns").glob("*/bundle/bundle.json"))
    assert len(bundles) == 2 and all(json.loads(b.read_text())["format"] == 1 for b in bundles)
    assert not any(secret.split()[1] in p.read_text() for p in runner.joinpath(".git/agora/reruns").rglob("*.*"))

    # the verify half on Slurm writes one bundle of its jobs' verdicts, with no key; the publish half signs
    set_choice(mallory, "ORDER", "3")
    third = agora(mallory, "push", "--check", "-m", "order 3", "--tag", "result", "--json").json()["sha"]
    refs = git(remote, "for-each-ref")
    out = tmp_path / "bundle"
    half = agora(runner, "ci", "--verify-only", "--out", str(out), *on_slurm, env={"AGORA_CI_KEY": ""}, timeout=600)
    assert [(c["target"], c["verdict"]) for c in half.json()["checked"]] == [(third, "confirmed")]
    assert git(remote, "for-each-ref") == refs  # it pushed nothing
    assert sorted(p.name for p in (out / "verdicts").iterdir()) == [f"{third}.json"]
    published = agora(runner, "ci", "--publish", str(out), "--no-site", "--json", env={"AGORA_CI_KEY": secret}).json()
    assert [c["target"] for c in published["checked"] if c["verification"]] == [third]
    assert verdicts_by(remote, "ci") == {baseline[:12]: 1, inflated[:12]: 1, third[:12]: 1}
    refused = agora(runner, "ci", "--publish", str(out), "--scheduler", "slurm", check=False)
    assert refused.returncode == 2 and "--scheduler goes with reruns" in refused.stderr


@pytest.mark.slow
def test_reruns_as_local_jobs_leave_a_claim_another_run_of_the_clone_holds_and_publish_the_rest(tmp_path, remote):
    """`--scheduler local`: the same jobs as processes here (no Slurm). A claim whose lock another run
    of this clone holds is left to it (not rerun, nothing published), and picked up once it is free."""
    import fcntl
    import os

    from test_ci_e2e import joined

    alice = demo_task_clone(tmp_path, remote)
    baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()["sha"]
    bob = joined(tmp_path, remote, "bob", baseline)
    claims = []
    for order in ("1", "3"):
        set_choice(bob, "ORDER", order)
        claims.append(agora(bob, "push", "--check", "-m", f"order {order}", "--tag", "result", "--json").json()["sha"])
    locks = alice / ".git" / "agora" / "reruns" / "locks"
    locks.mkdir(parents=True)
    held = os.open(locks / f"{claims[0]}.alice.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(held, fcntl.LOCK_EX)  # as a run of this clone that reruns claims[0] now holds it
    try:
        argv = ("verify", "--pending", "--scheduler", "local", "--jobs", "2", "--json")
        first = agora(alice, *argv, timeout=600)
    finally:
        os.close(held)
    report = first.json()
    assert [(c["target"], bool(c["verification"])) for c in report["checked"]] == [(claims[1], True)], report
    assert f"{claims[0][:12]} is being rerun by another run here: left to it" in first.stderr
    assert verdicts_by(remote, "alice") == {claims[1][:12]: 1}
    second = agora(alice, *argv, timeout=600).json()
    assert [(c["target"], bool(c["verification"])) for c in second["checked"]] == [(claims[0], True)], second
    assert verdicts_by(remote, "alice") == {sha[:12]: 1 for sha in claims}
