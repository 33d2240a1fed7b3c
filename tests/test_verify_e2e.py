"""Verification by rerunning, `git agora run` and `push --check`, on the demo's real n-gram task."""

import shutil
from importlib.resources import files
from pathlib import Path

import pytest

from agora_testing import agora, demo_task_clone, git, make_clone

TASK = files("git_agora") / "demo" / "task"


@pytest.fixture
def task_project(tmp_path, remote):
    """The demo's task (build: train.py writes the model; score: the fixed score.py reads it)."""
    a = demo_task_clone(tmp_path, remote)
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    return a, b


def set_choice(clone, line_start, new_line):
    path = clone / "choices.py"
    lines = [new_line if ln.startswith(line_start) else ln for ln in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def test_honest_result_is_confirmed_and_edited_claim_failed(task_project):
    a, b = task_project
    set_choice(a, "ORDER", "ORDER = 3")
    honest = agora(a, "push", "--check", "-m", "order 3", "--tag", "result", "--json").json()
    claimed = agora(a, "show", honest["sha"], "--json").json()["metrics"]["bpc"]
    assert 1.0 < claimed < 4.0

    set_choice(a, "METHOD", 'METHOD = "witten_bell"')
    edited = agora(a, "push", "-m", "witten-bell", "--tag", "result", "--metric", "bpc=1.2345", "--json").json()

    agora(b, "fetch")
    ok = agora(b, "verify", honest["sha"], "--json").json()
    assert ok["verdict"] == "confirmed" and ok["push"] == "pushed", ok
    assert ok["reproduced"]["bpc"] == claimed
    assert ok["evaluator"]["commands"]["score"] == "python3 score.py {artifact}"
    assert set(ok["evaluator"]["files"]) == {"score.py", "corpus.py"} and len(ok["evaluator"]["sha256"]) == 64
    assert ok["same_evaluator"] is True
    assert ok["hardware"]["cpus"] >= 1 and ok["duration_s"] > 0
    bad = agora(b, "verify", edited["sha"], "--json").json()
    assert bad["verdict"] == "failed", bad
    assert bad["claimed"]["bpc"] == 1.2345 and abs(bad["difference"]["bpc"]) > 0.1

    agora(a, "fetch")
    shown = agora(a, "show", ok["sha"], "--json").json()
    assert shown["target"] == honest["sha"] and shown["parents"] == [honest["sha"]]
    assert shown["metadata"]["reproduced"]["bpc"] == claimed


def test_verdict_replacement_shows_in_evidence(task_project):
    a, b = task_project
    set_choice(a, "ORDER", "ORDER = 3")
    result = agora(a, "push", "--check", "-m", "order 3", "--tag", "result", "--json").json()
    agora(b, "fetch")
    verdict = agora(b, "verify", result["sha"], "--json").json()
    agora(a, "fetch")
    shown = agora(a, "show", result["sha"], "--json").json()
    assert shown["evidence"]["status"] == "unverified" and shown["evidence"]["score"] == 0  # bob: no standing yet
    assert "weighs nothing: from an account with no confirmed work" in agora(a, "show", verdict["sha"]).stdout
    agora(b, "checkout", result["sha"])
    set_choice(b, "ORDER", "ORDER = 4")  # bob's own result, which the setup's account confirms: bob is established
    own = agora(b, "push", "--check", "-m", "order 4", "--tag", "result", "--json").json()
    agora(a, "fetch")
    agora(a, "verify", own["sha"])
    evidence = agora(a, "show", result["sha"], "--json").json()["evidence"]
    assert evidence["score"] == 25 and evidence["status"] == "confirmed"  # 20 for the verdict, 5 for bob's result
    agora(b, "fetch")
    agora(b, "verify", result["sha"], "--tolerance", "0")  # a second rerun replaces the first
    agora(b, "post", "--target", result["sha"], "--verdict", "failed", "-m", "on second thought, no")
    agora(a, "fetch")
    evidence = agora(a, "show", result["sha"], "--json").json()["evidence"]
    assert evidence["score"] == 5 and evidence["status"] == "unverified"  # bob's newest is an opinion: no weight
    newest = agora(a, "log", "--json", "--limit", "1").json()[0]
    assert "weighs nothing: an opinion: no rerun behind it" in agora(a, "show", newest["sha"]).stdout


def test_a_crashing_result_fails_with_the_reason(task_project):
    a, b = task_project
    set_choice(a, "METHOD", 'METHOD = "bogus"')
    crash = agora(a, "push", "-m", "bogus method", "--tag", "result", "--metric", "bpc=2.0", "--json").json()
    agora(b, "fetch")
    out = agora(b, "verify", crash["sha"], "--json").json()
    assert out["verdict"] == "failed" and out["reason"] == "score failed" and out["exit_status"] == 1, out
    # the scorer's own words stay on the verifier's machine: kept in the run folder, never published
    assert "unknown METHOD" in (Path(out["run_folder"]) / "score.err").read_text()
    assert "unknown METHOD" not in git(b, "cat-file", "commit", out["sha"])


def test_push_check_refuses_a_wrong_claim(task_project):
    a, _ = task_project
    before = git(a, "for-each-ref", "refs/agora/")
    set_choice(a, "ORDER", "ORDER = 3")
    r = agora(a, "push", "--check", "-m", "order 3", "--tag", "result", "--metric", "bpc=0.5", check=False)
    assert r.returncode == 1
    assert "you claim bpc=0.5 but a clean run measured" in r.stderr
    assert git(a, "for-each-ref", "refs/agora/") == before


def test_run_evaluates_exactly_what_push_publishes(task_project):
    a, _ = task_project
    set_choice(a, "ORDER", "ORDER = 4")
    (a / "scratch.txt").write_text("untracked, published too\n")
    run = agora(a, "run", "--json").json()
    assert run["ok"] and run["metrics"]["bpc"] > 0
    pushed = agora(
        a, "push", "-m", "order 4", "--tag", "result", "--metric", f"bpc={run['metrics']['bpc']}", "--json"
    ).json()
    assert git(a, "rev-parse", f"{pushed['sha']}^{{tree}}").strip() == run["tree"]


@pytest.mark.parametrize(
    "script, reason",
    [
        ("print('no model written')", "the build wrote no artifact"),
        ("import sys; open(sys.argv[2] + '/model.json', 'w').write('{garbage')", "score failed"),
        ("raise SystemExit(3)", "build failed"),
        ("import time; time.sleep(30)", "timed out"),
    ],
)
def test_broken_builds_give_failed_verdicts(task_project, script, reason):
    a, b = task_project
    (a / "train.py").write_text(script + "\n")
    bad = agora(a, "push", "-m", "broken build", "--tag", "result", "--metric", "bpc=2.0", "--json").json()
    agora(b, "fetch")
    before = git(b, "for-each-ref", "refs/agora/")
    timeout = ["--timeout", "2"] if reason == "timed out" else []  # under load, 2 s may not start two sandboxes
    out = agora(b, "verify", bad["sha"], "--no-publish", *timeout, "--json").json()
    assert out["verdict"] == "failed" and out["reason"] == reason, out
    expected = {"the build wrote no artifact": 0, "score failed": 1, "build failed": 3, "timed out": None}
    assert out["exit_status"] == expected[reason]
    assert git(b, "for-each-ref", "refs/agora/") == before


def test_verify_refuses_bad_requests(tmp_path, task_project, remote):
    a, b = task_project
    insight = agora(a, "post", "-m", "an insight", "--tag", "insight", "--json").json()
    set_choice(a, "ORDER", "ORDER = 3")
    own = agora(a, "push", "--check", "-m", "order 3", "--tag", "result", "--json").json()
    agora(b, "fetch")
    cases = [
        (b, ["verify", "0" * 40], "unknown commit"),
        (b, ["verify", insight["sha"]], "claims no metric"),
        (a, ["verify", own["sha"]], "own work"),
    ]
    for clone, args, message in cases:
        before = git(clone, "for-each-ref", "refs/agora/")
        r = agora(clone, *args, check=False)
        assert r.returncode == 1 and message in r.stderr, r
        assert git(clone, "for-each-ref", "refs/agora/") == before

    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    c = make_clone(tmp_path, "c", str(other), "carol")
    (c / "x.txt").write_text("x\n")
    agora(c, "init", "--metric", "bpc")
    result = agora(c, "push", "--rerun", "-m", "x", "--tag", "result", "--metric", "bpc=1", "--json").json()
    d = make_clone(tmp_path, "d", str(other), "dave")
    agora(d, "fetch")
    r = agora(d, "verify", result["sha"], check=False)
    assert r.returncode == 1 and "no evaluation" in r.stderr


def test_the_weight_transfer_kit_initialises_a_working_project(tmp_path, remote):
    from pathlib import Path

    kit = Path(__file__).resolve().parents[1] / "eval" / "weight_transfer"
    work = make_clone(tmp_path, "wt", str(remote), "alice")
    for path in filter(Path.is_file, kit.iterdir()):  # the kit's files, not recipes/ or __pycache__/
        shutil.copyfile(path, work / path.name)
    agora(work, "init")
    setup = agora(work, "whoami", "--json").json()["setup"]
    files = set(git(work, "ls-tree", "--name-only", setup).split())
    assert {"agora.toml", "program.md", "transfer.py"} <= files
    summary = agora(work, "analyze", "--json", "--model", "hashing").json()["summary"]
    assert (summary["metric"], summary["direction"], summary["tolerance"]) == ("bpb", "min", 0.0013)
    assert "hybridlm score {artifact}" in git(work, "show", f"{setup}:agora.toml")


def test_a_verdict_replaced_within_one_second_is_the_newer(project, monkeypatch):
    """One verifier's verdicts posted within one second: each is dated a second after the one before
    (`Repository.next_timestamp`), so every reader takes the last as current, whatever the shas say."""
    import time

    from git_agora.ops.publish import post
    from git_agora.project import Project

    setup = agora(project, "whoami", "--json").json()["setup"]
    bob = Project.open(project, account="bob")
    frozen = int(time.time())
    verdicts = ["confirmed", "failed", "partial", "confirmed", "partial", "failed"]
    with monkeypatch.context() as clock:
        clock.setattr(time, "time", lambda: frozen + 0.5)
        shas = [post(bob, f"verdict {i}", (), targets=[setup], verdict=v).sha for i, v in enumerate(verdicts)]
    assert [int(git(project, "log", "-1", "--format=%ct", sha)) for sha in shas] == list(range(frozen, frozen + 6))
    agora(project, "fetch")
    notes = [agora(project, "show", sha, "--json").json()["run_notes"] for sha in shas]
    assert all(any("superseded by a newer verdict of the same account" in n for n in earlier) for earlier in notes[:-1])
    assert not any("replaced" in n for n in notes[-1])  # the last is current (an opinion: it weighs nothing)


def test_a_burst_stops_at_the_limit_and_a_log_dated_far_ahead_is_not_followed(project):
    """A burst of posts that reached `AHEAD_AT_MOST` stays there (never dated before the last one); a
    last entry dated further (a forged log, a clock set back) does not drag the account's next
    contributions into the future, where readers would hold them as pending."""
    import time

    from git_agora.ops.publish import post
    from git_agora.project import Project
    from git_agora.refs.store import AHEAD_AT_MOST

    alice = Project.open(project)
    limit = int(time.time()) + AHEAD_AT_MOST  # a burst that reached the limit stays there, never goes back
    at_limit = post(alice, "dated at the limit", ("insight",), timestamp=limit).sha
    after_burst = post(alice, "right after the burst", ("insight",)).sha
    assert int(git(project, "log", "-1", "--format=%ct", at_limit)) == limit
    assert limit <= int(git(project, "log", "-1", "--format=%ct", after_burst)) <= time.time() + AHEAD_AT_MOST
    ahead = post(alice, "dated a day ahead", ("insight",), timestamp=int(time.time()) + 86_400).sha
    assert int(git(project, "log", "-1", "--format=%ct", ahead)) > time.time() + AHEAD_AT_MOST
    before = int(time.time())
    after = post(alice, "dated now", ("insight",)).sha
    assert before <= int(git(project, "log", "-1", "--format=%ct", after)) <= time.time()


def test_a_commit_dated_more_than_ten_minutes_ahead_is_pending(project):
    """Observed: a copy dated 23 hours ahead was valid and topped "recent" (the window was a day). More
    than 10 minutes ahead of the reader's clock is pending, shown with why; 5 minutes ahead is not."""
    import time

    from git_agora.ops.publish import post
    from git_agora.project import Project

    alice = Project.open(project)
    now = int(time.time())
    shas = {
        ahead: post(alice, f"dated {ahead} s ahead", ("insight",), timestamp=now + ahead).sha
        for ahead in (300, 1200, 82_800)
    }
    rejected = {row["sha"]: row["reasons"] for row in agora(project, "log", "--rejected", "--json").json()}
    valid = {row["sha"] for row in agora(project, "log", "--json").json()}
    assert shas[300] in valid and shas[300] not in rejected
    for ahead in (1200, 82_800):
        assert any(reason.startswith("dated in the future") for reason in rejected[shas[ahead]]), rejected
        assert shas[ahead] not in valid


def test_verify_reads_the_targets_policy_once(task_project, monkeypatch):
    """The policy in force for the target judges the rerun and names the verdict's metric: asked once."""
    from git_agora.ops.verify import verify
    from git_agora.project import Project

    a, b = task_project
    set_choice(a, "ORDER", "ORDER = 3")
    honest = agora(a, "push", "--check", "-m", "order 3", "--tag", "result", "--json").json()
    agora(b, "fetch")
    asked: list[str] = []
    policy = Project.policy
    monkeypatch.setattr(Project, "policy", lambda self, sha: asked.append(sha) or policy(self, sha))
    done = verify(Project.open(b), honest["sha"])
    assert done.verdict == "confirmed" and done.published is not None
    assert asked == [honest["sha"]]
    assert agora(b, "show", done.published.sha, "--json").json()["metrics"] == {"bpc": done.judgement.reproduced["bpc"]}
