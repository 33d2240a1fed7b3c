"""The public API, in process: every function of `import git_agora` on a real project and remote."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import git_agora as agora
from agora_testing import git, make_clone

SCORER = (
    "import json, re\n"
    'order = int(re.search(r"\\d+", open("model.py").read()).group())\n'
    'print(json.dumps({"bpc": 10.0 / order}))\n'
)


@pytest.fixture
def founded(tmp_path, remote):
    """alice's clone of a project whose evaluation scores model.py, with one baseline result."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 2\n")
    (a / "score.py").write_text(SCORER)
    project = agora.open_project(a)
    setup = agora.init_project(
        project, metric="bpc", direction="min", eval_command=f"{sys.executable} score.py", tolerance=1e-9
    )
    baseline = agora.publish_worktree(project, agora.Push("Baseline: order 2", check_claim=True, rerun=True))
    return a, setup, baseline


def test_publish_read_and_verify_in_process(tmp_path, remote, founded):
    a, setup, baseline = founded
    assert setup.shared and baseline.shared and baseline.parents == (setup.sha,)
    alice = agora.open_project(a)
    assert git(a, "config", "agora.account").strip() == "alice"  # init remembers the account

    b = make_clone(tmp_path, "b", str(remote), "bob")
    bob = agora.open_project(b)
    fetched = agora.fetch(bob)
    assert isinstance(fetched, agora.Fetched) and fetched.new_contributions == 2
    assert agora.whoami(bob).setup == setup.sha

    done = agora.checkout(bob, baseline.sha)
    assert done.sha == baseline.sha and (b / "model.py").read_text() == "order = 2\n"
    (b / "model.py").write_text("order = 5\n")
    trial = agora.run(bob)
    assert trial.run.ok and trial.run.metrics["bpc"] == pytest.approx(2.0)
    better = agora.publish_worktree(bob, agora.Push("order 5", check_claim=True))
    assert agora.show(bob, better.sha).contribution.metrics["bpc"] == pytest.approx(2.0)

    insight = agora.post(bob, "higher order helps", ["insight"], parents=[better.sha])
    assert insight.parents == (better.sha,)
    record = agora.record_fields(
        bob,
        {
            "agent_id": "bob",
            "tags": ["hypothesis"],
            "description": "order 9?",
            "parent_hashes": [better.sha],
            "value": {"prediction": [1, 2]},
        },
    )
    hypothesis = agora.post(bob, record["description"], record["tags"], record["parents"], meta=record["meta"])
    assert agora.show(bob, hypothesis.sha).contribution.metadata == {"prediction": [1, 2]}

    agora.fetch(alice)
    verification = agora.verify(alice, better.sha)
    assert verification.verdict == "confirmed" and verification.published.shared

    synced = agora.sync(bob)
    assert synced.fetch is not None and synced.fetch.new_contributions == 1
    analysis = agora.analyze(bob, model="hashing")
    assert analysis.summary.best.sha == better.sha and analysis.summary.results == 2
    assert agora.search(bob, "higher order", model="hashing").hits
    assert [e.title for e in agora.log(bob, tags=["insight"])] == ["higher order helps"]
    assert agora.lineage(bob, better.sha).size == 3
    assert agora.stats(bob).scored_results == 2
    assert agora.update_index(bob).contributions == 6
    assert agora.check_index(bob) == []
    with pytest.raises(agora.AgoraError, match="own work"):
        agora.verify(bob, better.sha)


def test_cross_project_references_end_to_end(tmp_path, remote, founded):
    a, _, baseline = founded
    other_remote = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other_remote))
    o = make_clone(tmp_path, "o", str(other_remote), "olga")
    (o / "notes.txt").write_text("another project\n")
    other = agora.open_project(o)
    agora.init_project(other)
    cited = agora.post(other, "Layer norms matter", ["insight"])

    alice = agora.open_project(a)
    with pytest.raises(agora.AgoraError, match="not URL#SHA"):
        agora.post(alice, "bad citation", ["insight"], cross_refs=["nowhere"])
    citing = agora.post(alice, "as the other project found", ["insight"], cross_refs=[f"{other_remote}#{cited.sha}"])

    b = make_clone(tmp_path, "b", str(remote), "bob")
    bob = agora.open_project(b)
    agora.fetch(bob)
    assert agora.show(bob, citing.sha).cross_refs[0].title is None  # not fetched yet
    fetched = agora.fetch(bob, cross_refs=True)
    assert [f.ok for f in fetched.cross_refs] == [True]
    shown = agora.show(bob, citing.sha)
    assert shown.cross_refs[0].title == "Layer norms matter" and shown.cross_refs[0].account == "olga"
    assert git(b, "for-each-ref", "--format=%(refname)", "refs/agora-xref/").split() == [f"refs/agora-xref/{cited.sha}"]
    # the cited commit never enters this project's graph
    assert cited.sha not in [e.sha for e in agora.log(bob, limit=100)]
    assert [r["sha"] for r in agora.analyze(bob, model="hashing").references] == [citing.sha]
    assert baseline.sha in [e.sha for e in agora.log(bob)]


def test_a_newer_format_needs_a_newer_reader(founded):
    a, setup, _ = founded
    message = "From the future\n\nAgora-Format: 3\nAgora-Account: alice\nAgora-Tag: insight\n"
    sha = subprocess.run(
        ["git", "commit-tree", f"{setup.sha}^{{tree}}", "-p", setup.sha],
        cwd=a,
        input=message,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    project = agora.open_project(a)
    with pytest.raises(agora.AgoraError, match="needs a newer git-agora"):
        agora.show(project, sha)
    project.repo.append_to_log("alice", [sha])
    rejected = agora.log(project, rejected=True)
    assert rejected[0].reasons == ("written in Agora format 3: needs a newer git-agora (this one reads up to 2)",)


def test_the_agent_loop_in_docs_runs(tmp_path, remote, founded):
    code = re.search(
        r"## An agent loop in 20 lines.*?```python\n(.*?)```",
        Path(__file__).parents[1].joinpath("docs/api.md").read_text(),
        re.S,
    ).group(1)
    assert len(code.strip().splitlines()) <= 22
    b = make_clone(tmp_path, "b", str(remote), "bob")
    out = subprocess.run([sys.executable, "-c", code], cwd=b, capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("shared") == 2
    project = agora.open_project(b)
    assert sorted(e.title for e in agora.log(project, accounts=["bob"])) == ["order 4", "order 5"]
    assert agora.analyze(project, model="hashing").summary.best.metric == pytest.approx(2.0)


def test_errors_are_agora_errors(tmp_path):
    with pytest.raises(agora.AgoraError, match="not a Git repository"):
        agora.open_project(tmp_path)
    git(tmp_path, "init", "-q")
    project = agora.open_project(tmp_path, account="alice")
    with pytest.raises(agora.AgoraError, match="no Agora project here"):
        agora.analyze(project)
    with pytest.raises(agora.AgoraError, match="empty query"):
        agora.search(project, "   ")


def test_fetch_counts_what_others_appended_never_ones_own(tmp_path, remote, founded):
    a, setup, baseline = founded
    alice = agora.open_project(a)
    b = make_clone(tmp_path, "b", str(remote), "bob")
    bob = agora.open_project(b)
    assert agora.fetch(bob).new_contributions == 2
    agora.post(bob, "a first insight, on the setup", ["insight"], parents=[setup.sha])  # a new log on an old parent
    agora.post(bob, "a second one", ["insight"], parents=[baseline.sha])
    assert agora.fetch(bob).new_contributions == 0  # bob's own, already in his local log
    assert agora.fetch(alice).new_contributions == 2
    assert agora.fetch(alice).new_contributions == 0


def test_a_claim_lasts_exactly_its_time_from_its_own_commit(founded):
    """The claim's commit is dated the very second its end is counted from, however slow the publish."""
    a, _setup, baseline = founded
    project = agora.open_project(a)
    start = int(time.time()) - 3600
    claimed = agora.claim(project, baseline.sha, "trying order 3", "90m", now=start + 0.9)
    listed = agora.claims(project, now=start + 1)
    assert [(c.sha, c.since, c.until) for c in listed] == [(claimed.sha, start, start + 5400)]
    released = agora.release(project, baseline.sha, now=start + 60)
    assert git(a, "log", "-1", "--format=%ct", released.sha).strip() == str(start + 60)
    assert agora.claims(project, now=start + 61) == ()


def test_a_fetch_loads_the_index_modules_beside_git_and_waits_for_them(tmp_path, remote, founded, monkeypatch):
    """When a large clone's listing shows moved refs, the index's modules are imported on a thread while
    git transfers; the fetch returns only once that thread is done (no import left running at exit), an
    import that fails there does not fail the fetch, and a fetch that finds nothing new starts none."""
    import importlib
    import threading

    from git_agora.ops import sync
    from git_agora.refs import sync as refs_sync

    a, setup, baseline = founded
    bob = agora.open_project(make_clone(tmp_path, "b", str(remote), "bob"))
    assert agora.fetch(bob).new_contributions == 2
    monkeypatch.setattr(refs_sync, "PROBE_FROM_COMMITS", 0)  # this small clone takes the large clones' path
    indexing, real_import, real_indexed = threading.Event(), importlib.import_module, sync._indexed
    started: list[threading.Thread] = []

    asked: list[str] = []

    def slow_failing_import(name, package=None):
        asked.append(name)
        if name != "git_agora.no_such_module":
            return real_import(name, package)
        indexing.wait(30)  # still importing when the fetch reaches its index
        time.sleep(0.2)
        raise ImportError(name)

    def indexed(project):
        indexing.set()
        return real_indexed(project)

    real_meanwhile = sync._import_meanwhile
    monkeypatch.setattr(sync, "_import_meanwhile", lambda names: started.append(real_meanwhile(names)) or started[-1])
    monkeypatch.setattr(sync, "INDEX_MODULES", ("git_agora.no_such_module", *sync.INDEX_MODULES))
    monkeypatch.setattr(importlib, "import_module", slow_failing_import)
    monkeypatch.setattr(sync, "_indexed", indexed)
    assert agora.fetch(bob).new_contributions == 0 and started == []  # nothing moved: nothing loaded
    news = agora.post(agora.open_project(a), "an insight bob has not seen", ["insight"], parents=[baseline.sha])
    assert agora.fetch(bob).new_contributions == 1
    assert len(started) == 1 and not started[0].is_alive()
    assert set(sync.INDEX_MODULES) <= set(asked)  # one that fails (the first) stops none after it
    assert news.sha in {e.sha for e in agora.log(bob)}
