"""Identity: a contribution counts only when the log of the account it names lists it."""

from __future__ import annotations

from agora_testing import agora, forge, git, make_clone, publish_forged_log
from git_agora.contribution import Contribution


def test_a_contribution_in_another_accounts_log_is_invalid(tmp_path, remote, project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    posing = Contribution(
        account="alice", tags=("result",), description="alice's best, honest", parents=(setup,), metrics={"bpc": 0.01}
    )
    forged = forge(m, posing.to_message(), [setup])
    publish_forged_log(m, "mallory", [forged])
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    reasons = {row["sha"]: row["reasons"] for row in agora(c, "log", "--rejected", "--json").json()}
    assert any("not listed in the log of its account (alice)" in r for r in reasons[forged])
    assert agora(c, "analyze", "--json", "--model", "hashing").json()["summary"]["best"] is None
    agora(c, "index", "--check")


def test_a_parent_seen_before_its_log_becomes_valid_when_the_log_arrives(tmp_path, remote, project):
    (project / "model.py").write_text("order = 4\n")
    alice_result = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    agora(b, "post", "-m", "built on alice", "--tag", "insight", "--parent", alice_result["sha"])
    c = make_clone(tmp_path, "c", str(remote), "carol")
    git(c, "fetch", "-q", "origin", "+refs/agora/log/bob:refs/agora/remotes/origin/log/bob")
    reasons = {row["sha"]: row["reasons"] for row in agora(c, "log", "--rejected", "--json").json()}
    assert any("not listed" in r for r in reasons[alice_result["sha"]])
    agora(c, "fetch")
    assert alice_result["sha"] not in {row["sha"] for row in agora(c, "log", "--rejected", "--json").json()}
    agora(c, "index", "--check")


def test_a_deleted_or_rewritten_log_is_reported_until_acknowledged_and_sync_restores_ones_own(
    tmp_path, remote, project
):
    (project / "model.py").write_text("order = 4\n")
    lost = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    git(remote, "update-ref", "-d", "refs/agora/log/alice")  # an attacker with push access deletes it
    fetched = agora(b, "fetch")
    assert "was deleted" in fetched.stderr
    status = agora(b, "status", "--json").json()
    [report] = status["tamper"]
    assert report["kind"] == "deleted" and report["account"] == "alice"
    assert lost["sha"] in {row["sha"] for row in agora(b, "log", "--json").json()}  # nothing once fetched is lost
    notes = agora(b, "analyze", "--json", "--model", "hashing").json()["summary"]["notes"]
    assert any("tampering" in note and "alice" in note for note in notes)
    assert "tampering" in agora(b, "log", "--rejected").stdout
    agora(b, "fetch")
    assert len(agora(b, "status", "--json").json()["tamper"]) == 1  # still listed
    agora(b, "status", "--ack", report["id"])
    assert agora(b, "status", "--json").json()["tamper"] == []
    assert not any(
        "tampering" in n for n in agora(b, "analyze", "--json", "--model", "hashing").json()["summary"]["notes"]
    )
    r = agora(b, "status", "--ack", "nope", check=False)
    assert r.returncode == 1 and "no tamper report nope" in r.stderr

    synced = agora(project, "sync")
    assert "publishing ours again" in synced.stderr
    assert (
        git(remote, "rev-parse", "refs/agora/log/alice").strip()
        == git(project, "rev-parse", "refs/agora/log/alice").strip()
    )
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    assert lost["sha"] in {row["sha"] for row in agora(c, "log", "--json").json()}
