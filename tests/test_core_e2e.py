"""The core story, driven through the real `git agora` command against real remotes."""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agora_testing import agora, forge_root, git, make_clone, publish_forged_log
from git_agora import open_project
from git_agora.refs.objects import commit_body, write_loose
from servers import git_daemon, smart_http


def head_of(clone):
    return git(clone, "rev-parse", "HEAD").strip()


def test_two_accounts_share_results_and_verifications(tmp_path, remote, project):
    a = project
    (a / "model.py").write_text("order = 4\n")
    result_a = agora(a, "push", "-m", "order 4 beats 3", "--tag", "result", "--metric", "bpc=2.50", "--json").json()
    assert result_a["push"] == "pushed"

    b = make_clone(tmp_path, "b", str(remote), "bob")
    assert "fetched 2 new contributions" in agora(b, "fetch").stdout
    agora(b, "checkout", result_a["sha"][:10])
    assert (b / "model.py").read_text() == "order = 4\n"
    (b / "model.py").write_text("order = 5\n")
    (b / "notes.txt").write_text("untracked files are published too\n")
    result_b = agora(b, "push", "-m", "order 5", "--tag", "result", "--metric", "bpc=2.40", "--json").json()
    verification = agora(
        b, "post", "--target", result_a["sha"], "--verdict", "confirmed", "-m", "reproduced 2.50", "--json"
    ).json()
    assert git(b, "status", "--porcelain") == "", "HEAD follows the published contribution"

    assert "fetched 2 new contributions" in agora(a, "fetch").stdout
    shown_b = agora(a, "show", result_b["sha"], "--json").json()
    assert shown_b["account"] == "bob"
    assert shown_b["parents"] == [result_a["sha"]]
    assert shown_b["metrics"] == {"bpc": 2.4}
    assert shown_b["tags"] == ["result"]
    shown_v = agora(a, "show", verification["sha"], "--json").json()
    assert shown_v["target"] == result_a["sha"] and shown_v["verdict"] == "confirmed"
    assert shown_v["parents"] == [result_a["sha"]]
    assert shown_v["tags"] == ["verification"]
    tree_files = git(a, "ls-tree", "-r", "--name-only", result_b["sha"]).split()
    assert {"model.py", "notes.txt", "agora.toml", "program.md"} <= set(tree_files)
    assert git(a, "rev-parse", verification["sha"] + "^{tree}") == git(a, "rev-parse", result_a["sha"] + "^{tree}")

    log = agora(a, "log", "--json").json()
    when = {row["sha"]: row["timestamp"] for row in log}  # newest first; commits of one second tie
    assert [row["timestamp"] for row in log] == sorted(when.values(), reverse=True)
    assert when[verification["sha"]] >= when[result_a["sha"]] and when[result_b["sha"]] >= when[result_a["sha"]]
    assert {row["account"] for row in agora(a, "log", "--account", "bob", "--json").json()} == {"bob"}


def test_plain_git_reads_every_trailer(remote, project):
    (project / "model.py").write_text("order = 4\n")
    agora(project, "push", "-m", "order 4\n\nAgora-Tag: setup", "--tag", "result", "--metric", "bpc=2.5")
    out = git(remote, "log", "--all", "--format=%H%x09%(trailers:key=Agora-Tag,valueonly,separator=%x2C)")
    tags = sorted(line.split("\t")[1] for line in out.splitlines() if line.split("\t")[1])
    assert tags == ["result", "setup"]


def test_post_takes_the_papers_minimal_record(tmp_path, project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    record = {
        "agent_id": "alice",
        "parent_hashes": [setup],
        "tags": ["result"],
        "description": "record path",
        "value": {"metric_value": 2.7, "gpu": "H100"},
    }
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    out = agora(project, "post", "--json", str(path)).json()
    shown = agora(project, "show", out["sha"], "--json").json()
    assert shown["metrics"] == {"bpc": 2.7}
    assert shown["metadata"] == {"gpu": "H100"}
    assert shown["parents"] == [setup]


@pytest.mark.parametrize(
    "args, message",
    [
        (["push", "-m", "x", "--tag", "result", "--metric", "bpc=abc"], "not a number"),
        (["push", "-m", "x", "--tag", "result", "--metric", "bpc=nan"], "not finite"),
        (["push", "-m", "x", "--tag", "result", "--metric", "bpc=inf"], "not finite"),
        (["push", "-m", "  ", "--tag", "result"], "empty description"),
        (["push", "-m", "x", "--tag", "result", "--parent", "deadbeef"], "unknown commit"),
        (["post", "-m", "x", "--tag", "hypothesis", "--metric", "bpc=1"], "hypothesis carries no metric"),
        (["post", "-m", "x", "--verdict", "confirmed"], "exactly one target, found 0"),
        (
            ["post", "-m", "x", "--target", "{setup}", "--target", "{setup}", "--verdict", "failed"],
            "exactly one target, found 2",
        ),
        (["post", "-m", "x", "--target", "{setup}", "--verdict", "confirmed"], "own work"),
        (["post", "-m", "x", "--tag", "insight", "--parent", "{setup}^{{tree}}"], "unknown commit"),
    ],
)
def test_bad_input_is_one_line_and_publishes_nothing(project, args, message):
    before = git(project, "for-each-ref", "refs/agora/")
    setup = agora(project, "whoami", "--json").json()["setup"]
    result = agora(project, *[a.format(setup=setup) for a in args], check=False)
    assert result.returncode == 1, result
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert git(project, "for-each-ref", "refs/agora/") == before


def test_a_parent_that_is_not_a_contribution(project):
    git(project, "commit", "-q", "--allow-empty", "-m", "plain commit")
    result = agora(project, "post", "-m", "x", "--tag", "insight", "--parent", "HEAD", check=False)
    assert result.returncode == 1 and "not an Agora contribution" in result.stderr


def test_errors_outside_a_project(tmp_path):
    outside = tmp_path / "plain"
    outside.mkdir()
    r = agora(outside, "log", check=False)
    assert r.returncode == 1 and "not a Git repository" in r.stderr
    git(outside, "init", "-q")
    r = agora(outside, "push", "-m", "x", "--tag", "result", check=False)
    assert r.returncode == 1 and "no account" in r.stderr
    r = agora(outside, "push", "-m", "x", "--tag", "result", account="alice", check=False)
    assert r.returncode == 1 and "no Agora project here" in r.stderr


def test_init_twice_is_refused(project):
    r = agora(project, "init", check=False)
    assert r.returncode == 1 and "already has an Agora project" in r.stderr


def test_files_over_the_size_limit_are_refused(tmp_path, remote):
    a = make_clone(tmp_path, "small", str(remote), "alice")
    (a / "agora.toml").write_text("[project]\nname = 'small'\n[policy]\nmax_file_bytes = 3000\n")
    agora(a, "init")
    (a / "big.bin").write_bytes(b"x" * 5000)
    r = agora(a, "push", "-m", "big", "--tag", "result", check=False)
    assert r.returncode == 1
    assert "big.bin is 5,000 bytes, over the project's limit of 3,000" in r.stderr
    subjects = git(remote, "log", "--all", "--format=%s").splitlines()
    assert sorted(subjects) == ["Setup: small", "agora identity: alice", "agora log: alice"]  # nothing else


def test_unreachable_remote_queues_and_sync_sends_later(tmp_path, remote, project):
    git(project, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    (project / "model.py").write_text("order = 6\n")
    r = agora(project, "push", "-m", "order 6", "--tag", "result", "--metric", "bpc=2.3", check=False)
    assert r.returncode == 3, r
    assert "queued locally" in r.stderr
    r2 = agora(project, "post", "-m", "an insight", "--tag", "insight", check=False)
    assert r2.returncode == 3
    assert agora(project, "whoami", "--json").json()["queued"] == 2
    git(project, "remote", "set-url", "origin", str(remote))
    assert agora(project, "sync").returncode == 0
    assert agora(project, "whoami", "--json").json()["queued"] == 0
    out = git(remote, "log", "--all", "--format=%s")
    assert "order 6" in out and "an insight" in out


def test_a_rejecting_remote_keeps_the_contribution_queued(remote, project):
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'policy: closed for maintenance' >&2\nexit 1\n")
    hook.chmod(0o755)
    r = agora(project, "post", "-m", "an insight", "--tag", "insight", check=False)
    assert r.returncode == 3 and "queued" in r.stderr
    hook.unlink()
    agora(project, "post", "-m", "a second insight", "--tag", "insight")
    out = git(remote, "log", "--all", "--format=%s")
    assert "an insight" in out and "a second insight" in out


def test_a_publisher_killed_before_its_push_loses_nothing(tmp_path, remote, project):
    marker = tmp_path / "push-started"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\nsleep 60\n")
    hook.chmod(0o755)
    env = {**os.environ, "AGORA_ACCOUNT": "alice"}
    proc = subprocess.Popen(
        ["git", "agora", "post", "-m", "survives a kill", "--tag", "insight"],
        cwd=project,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    hook.unlink()
    assert "survives a kill" in git(project, "log", "refs/agora/log/alice", "--format=%s")
    agora(project, "sync")
    assert "survives a kill" in git(remote, "log", "--all", "--format=%s")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["path", "file-url", "git-daemon", "smart-http"])
def test_every_kind_of_remote(tmp_path, kind):
    served = tmp_path / "served"
    served.mkdir()
    bare = served / "project.git"
    git(served, "init", "-q", "--bare", str(bare))
    git(bare, "config", "http.receivepack", "true")
    servers = {"git-daemon": git_daemon, "smart-http": smart_http}
    if kind in servers:
        with servers[kind](served) as base:
            _exchange(tmp_path, f"{base}/project.git")
    else:
        _exchange(tmp_path, str(bare) if kind == "path" else f"file://{bare}")


def _exchange(tmp_path, url):
    a = make_clone(tmp_path, "a", url, "alice")
    (a / "f.txt").write_text("1\n")
    agora(a, "init", "--metric", "score", "--direction", "max")
    (a / "f.txt").write_text("2\n")
    pushed = agora(a, "push", "-m", "two", "--tag", "result", "--metric", "score=2", "--json").json()
    assert pushed["push"] == "pushed"
    b = make_clone(tmp_path, "b", url, "bob")
    assert "fetched 2 new" in agora(b, "fetch").stdout
    agora(b, "post", "--target", pushed["sha"], "--verdict", "confirmed", "-m", "ok")
    assert "fetched 1 new" in agora(a, "fetch").stdout
    assert len(agora(a, "log", "--json").json()) == 3


def _publish_many(clones, per_process, extra_env=None):
    procs = []
    for i, (clone, account) in enumerate(clones):
        env = {**os.environ, "AGORA_ACCOUNT": account, **(extra_env or {})}
        script = " && ".join(f"git agora post -m 'insight {i}.{k}' --tag insight" for k in range(per_process))
        procs.append(
            subprocess.Popen(
                ["bash", "-c", script], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    outcomes = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["file", "git-daemon"])
def test_sixteen_processes_over_eight_accounts(tmp_path, kind):
    served = tmp_path / "served"
    served.mkdir()
    bare = served / "project.git"
    git(served, "init", "-q", "--bare", str(bare))

    def run(url):
        setup_clone = make_clone(tmp_path, "setup", url, "founder")
        agora(setup_clone, "init")
        clones = []
        for n in range(8):
            account = f"acct{n}"
            for copy in range(2):  # two processes per account, each in its own clone
                clone = make_clone(tmp_path, f"{account}-{copy}", url, account)
                agora(clone, "fetch")
                clones.append((clone, account))
        outcomes = _publish_many(clones, per_process=3)
        assert all(code == 0 for code, _ in outcomes), [outcome for outcome in outcomes if outcome[0] != 0]
        assert all(err == "" or "created the signing key" in err for _, err in outcomes), outcomes
        subjects = git(bare, "log", "--all", "--format=%s").splitlines()
        expected = {f"insight {i}.{k}" for i in range(16) for k in range(3)}
        assert expected <= set(subjects)
        reader = make_clone(tmp_path, "reader", url, "reader")
        agora(reader, "fetch")
        assert len(agora(reader, "log", "--limit", "1000", "--json").json()) == 1 + 48

    if kind == "git-daemon":
        with git_daemon(served) as base:
            run(f"{base}/project.git")
    else:
        run(f"file://{bare}")


def test_checkout_into_a_worktree_builds_on_that_contribution(tmp_path, project):
    (project / "model.py").write_text("order = 4\n")
    first = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
    (project / "model.py").write_text("order = 5\n")
    agora(project, "push", "-m", "order 5", "--tag", "result", "--metric", "bpc=2.6")
    side = tmp_path / "side"
    out = agora(project, "checkout", first["sha"], "--worktree", str(side), "--json").json()
    assert out["path"] == str(side.resolve())
    assert (side / "model.py").read_text() == "order = 4\n"
    (side / "model.py").write_text("order = 4  # with interpolation\n")
    branch = agora(
        side, "push", "-m", "order 4 interpolated", "--tag", "result", "--metric", "bpc=2.4", "--json"
    ).json()
    assert agora(project, "show", branch["sha"], "--json").json()["parents"] == [first["sha"]]
    r = agora(project, "checkout", first["sha"], "--worktree", str(side), check=False)
    assert r.returncode == 1 and "not empty" in r.stderr


def test_checkout_refuses_a_dirty_work_tree(project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    agora(project, "checkout", setup)
    (project / "model.py").write_text("order = 9\n")
    r = agora(project, "checkout", setup, check=False)
    assert r.returncode == 1 and "uncommitted changes" in r.stderr


def test_a_stale_ref_lock_is_a_clear_error_not_a_hang(project):
    lock = project / ".git" / "refs" / "agora" / "log" / "alice.lock"
    lock.write_text("")
    r = agora(project, "post", "-m", "blocked", "--tag", "insight", check=False)
    assert r.returncode == 1 and "stays locked" in r.stderr
    lock.unlink()
    agora(project, "post", "-m", "after the lock", "--tag", "insight")


def test_publishing_imports_nothing_heavy(tmp_path, project):
    """post and push of a light contribution start fast: no pyarrow, numpy, torch, sklearn or pandas."""
    heavy = re.compile(r"\| (pyarrow|numpy|torch|sklearn|pandas|sentence_transformers)$", re.M)
    timed = {"PYTHONPROFILEIMPORTTIME": "1"}
    post = agora(project, "post", "-m", "an insight", "--tag", "insight", env=timed)
    (project / "model.py").write_text("order = 5\n")
    push = agora(project, "push", "-m", "order 5", "--tag", "result", "--metric", "bpc=2.4", env=timed)
    for run in (post, push):
        assert "import time:" in run.stderr and not heavy.findall(run.stderr)


def test_a_plain_post_loads_only_what_it_uses(project):
    """What an agent's everyday post never loads, each for its start-up cost (issue 11: a post within 3x
    of `git commit && git push`): click (20 ms), dataclasses (5 ms, and 0.5 ms per class), hashlib
    (OpenSSL, 2 ms), pathlib (3 ms with urllib.parse and ipaddress), the project config and the policy
    (the members are remembered), the band parser."""
    agora(project, "post", "-m", "the first post remembers the policy's members", "--tag", "insight")
    post = agora(project, "post", "-m", "an insight", "--tag", "insight", env={"PYTHONPROFILEIMPORTTIME": "1"})
    loaded = set(re.findall(r"^import time:.*\| +(\S+)$", post.stderr, re.M))
    assert "git_agora.ops.publish" in loaded
    unwanted = {"click", "dataclasses", "hashlib", "pathlib", "tomllib", "git_agora.config", "git_agora.policy"}
    assert not loaded & (unwanted | {"git_agora.frontier.bands"})
    predicted = agora(project, "post", "-m", "a guess", "--tag", "hypothesis", "--predict", "1.0..2.0", "--json")
    assert agora(project, "show", predicted.json()["sha"], "--json").json()["metadata"]["prediction"] == [1.0, 2.0]


def test_a_fetch_that_brings_nothing_imports_nothing_heavy(project):
    """An agent polling `git agora fetch` pays no pyarrow or numpy when nothing is new (the index's
    manifest says it is current); a fetch that brings something does index it, without the grouping
    engine (`segments.accounts_of` counts by dictionary codes)."""
    heavy = re.compile(r"\| (pyarrow|numpy|torch|sklearn|pandas)$", re.M)
    timed = {"PYTHONPROFILEIMPORTTIME": "1"}
    agora(project, "fetch")
    idle = agora(project, "fetch", env=timed)
    assert "import time:" in idle.stderr and not heavy.findall(idle.stderr)
    agora(project, "post", "-m", "something new", "--tag", "insight")
    git(project, "update-ref", "-d", "refs/agora/remotes/origin/log/" + git(project, "config", "agora.account").strip())
    busy = agora(project, "fetch", env=timed)
    assert heavy.findall(busy.stderr)  # the new entry is indexed, which needs pyarrow
    grouping = re.compile(r"\| +(pyarrow\.(?:acero|dataset))$", re.M)  # 35 ms a +1 fetch would wait for
    assert not grouping.findall(busy.stderr)


def test_a_new_account_that_differs_from_one_only_by_case_is_refused(tmp_path, remote, project):
    """`Alice` beside `alice`: one ref file on a case-insensitive filesystem (issue 26, look-alikes)."""
    b = make_clone(tmp_path, "b", str(remote), "Alice")
    agora(b, "fetch")
    refused = agora(b, "post", "-m", "hello", "--tag", "insight", check=False)
    assert refused.returncode == 1 and "differs from the existing account alice only by case" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused
    assert git(b, "for-each-ref", "refs/agora/log/Alice").strip() == ""
    assert "refs/agora/log/Alice" not in git(remote, "for-each-ref", "refs/agora/")
    agora(b, "post", "-m", "hello", "--tag", "insight", "--account", "alicia")  # another name is fine
    agora(project, "post", "-m", "still me", "--tag", "insight")  # and the existing account goes on


def test_a_look_alike_account_is_warned_about_and_marked_by_readers(tmp_path, remote, project):
    """`a1ice` and `alice_` beside `alice`: the writer warns, then `log`, `show` and `analyze` mark them."""
    m = make_clone(tmp_path, "m", str(remote), "a1ice")
    agora(m, "fetch")
    posted = agora(m, "post", "-m", "looks familiar", "--tag", "insight", "--json")
    assert "account a1ice looks like the existing account alice: readers will mark it" in posted.stderr
    sha = posted.json()["sha"]
    agora(project, "fetch")
    rows = {row["sha"]: row for row in agora(project, "log", "--json").json()}
    assert rows[sha]["looks_like"] == "alice" and all(r["looks_like"] is None for s, r in rows.items() if s != sha)
    assert "a1ice (looks like alice)" in agora(project, "log").stdout
    assert "account a1ice looks like alice, an earlier account" in agora(project, "show", sha).stdout
    notes = agora(project, "analyze", "--json", "--model", "hashing").json()["summary"]["notes"]
    assert "account a1ice looks like alice" in notes


def test_a_case_twin_that_slipped_past_its_writer_is_invalid_for_readers(tmp_path, remote, project):
    """`Alice` published by a clone that had not seen `alice` (its copy of her log removed): readers mark
    every contribution of the later twin invalid, after a fetch as after a rebuild."""
    b = make_clone(tmp_path, "b", str(remote), "Alice")
    agora(b, "fetch")
    git(b, "update-ref", "-d", "refs/agora/remotes/origin/log/alice")
    twin = agora(b, "post", "-m", "hello from the twin", "--tag", "insight", "--json").json()["sha"]
    assert "refs/agora/log/Alice" in git(remote, "for-each-ref", "refs/agora/")
    agora(project, "fetch")
    rejected = {row["sha"]: row["reasons"] for row in agora(project, "log", "--rejected", "--json").json()}
    assert rejected[twin] == ["an account that differs only by case from the earlier account alice"]
    agora(project, "index", "--check")  # the update equals a rebuild
    agora(project, "post", "-m", "alice goes on", "--tag", "insight")
    assert agora(project, "log", "--account", "alice", "--json").json()[0]["title"] == "alice goes on"


WRONG_IDENTITY = (
    "its Git {} is 'alice <alice@agora>', not 'mallory <mallory@agora>': plain git log names someone else than "
    "its account"
)


def _posing_as_alice(m: Path, setup: str, versions: tuple[str, ...]) -> dict[str, str]:
    """mallory's contributions, one per Agora-Format, whose Git author and committer say alice, signed with
    mallory's own key and published in her log with plain git."""
    writer = open_project(m)
    writer.enable_signing()
    tree = writer.repo.commit_info(setup).tree
    posing = {}
    for version in versions:
        message = f"posing in format {version}\n\nAgora-Format: {version}\nAgora-Account: mallory\nAgora-Tag: insight\n"
        body = commit_body(tree, [setup], "alice <alice@agora>", int(time.time()), message)
        signed = commit_body(tree, [setup], "alice <alice@agora>", int(time.time()), message, writer.repo.signer(body))
        posing[version] = write_loose(writer.repo.objects_path, "commit", signed)
    writer.repo.append_to_log("mallory", list(posing.values()))
    git(m, "push", "-q", "origin", "refs/agora/log/mallory")
    return posing


def test_a_commit_whose_git_author_names_another_account_is_invalid_in_a_format_2_project(tmp_path, remote, project):
    """Plain `git log` shows a commit's Git author. In a project founded in format 2, mallory's signed
    contributions whose Git author and committer say `alice` are invalid: the format 2 one for its Git
    identity, the format 1 one (which would escape that rule) for its format."""
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    own = agora(m, "post", "-m", "written by git-agora", "--tag", "insight", "--json").json()["sha"]
    posing = _posing_as_alice(m, agora(m, "whoami", "--json").json()["setup"], ("1", "2"))
    assert "alice" in git(m, "log", "-1", "--format=%an", posing["2"])  # what plain git shows

    agora(project, "fetch")
    rejected = {r["sha"]: r["reasons"] for r in agora(project, "log", "--rejected", "--json").json()}
    assert rejected == {
        posing["2"]: [WRONG_IDENTITY.format("author"), WRONG_IDENTITY.format("committer")],
        posing["1"]: ["written in Agora format 1, older than its project's setup (format 2)"],
    }
    assert agora(project, "show", own, "--json").json()["run_notes"] == []
    agora(project, "index", "--check")  # a rebuild agrees


def test_in_a_project_founded_in_format_1_such_a_commit_is_flagged_not_rejected(tmp_path, remote):
    """A project founded before format 2 (its setup written by hand here, as git-agora wrote it then)
    keeps its format 1 contributions valid: one whose Git identity names another account is flagged."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "agora.toml").write_text('[metric]\nname = "bpc"\n')
    blob = git(a, "hash-object", "-w", "agora.toml").strip()
    tree = subprocess.run(
        ["git", "mktree"], cwd=a, input=f"100644 blob {blob}\tagora.toml\n", capture_output=True, text=True
    ).stdout.strip()
    setup = forge_root(a, "Setup: an old project\n\nAgora-Format: 1\nAgora-Account: alice\nAgora-Tag: setup\n", tree)
    publish_forged_log(a, "alice", [setup])
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    assert agora(m, "whoami", "--json").json()["setup"] == setup
    posing = _posing_as_alice(m, setup, ("1",))["1"]

    agora(a, "fetch")
    assert agora(a, "log", "--rejected", "--json").json() == []
    notes = agora(a, "show", posing, "--json").json()["run_notes"]
    assert notes == [WRONG_IDENTITY.format("author"), WRONG_IDENTITY.format("committer")]
