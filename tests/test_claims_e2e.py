"""`git agora claim`: published, listed by others, released, ended by follow-up work, never evidence."""

from __future__ import annotations

import time

from agora_testing import agora, git, make_clone


def _score(clone, sha):
    rows = agora(clone, "analyze", "--json", "--model", "hashing", "--view", "built_on").json()["views"]["built_on"]
    return next((row["score"] for row in rows["rows"] if row["sha"] == sha), 0)


def test_a_claim_is_seen_by_others_until_released_or_followed_up(tmp_path, remote, project):
    (project / "model.py").write_text("order = 4\n")
    r1 = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()["sha"]
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    before = _score(project, r1)

    log = git(b, "rev-parse", "refs/agora/log/bob").strip() if git(b, "for-each-ref", "refs/agora/log/bob") else None
    bad = agora(b, "claim", r1, "-m", "order 6", "--for", "8d", check=False)
    assert bad.returncode == 1 and bad.stderr.strip() == "git agora: error: a claim lasts at most a week, not 8d"
    assert (git(b, "rev-parse", "refs/agora/log/bob").strip() if log else None) == log, "nothing published"

    claimed = agora(b, "claim", r1, "-m", "trying order 6 with smoothing", "--for", "2h", "--json").json()
    assert claimed["push"] == "pushed"
    agora(project, "fetch")
    listed = agora(project, "claim", "--list", "--json").json()
    assert [(c["account"], c["target"], c["title"]) for c in listed] == [("bob", r1, "trying order 6 with smoothing")]
    assert 7100 <= listed[0]["until"] - listed[0]["since"] <= 7300
    assert "bob" in agora(project, "claim", "--list").stdout
    assert _score(project, r1) == before, "a claim is not evidence"
    analysis = agora(project, "analyze", "--json", "--model", "hashing").json()
    assert [c["account"] for c in analysis["claims"]] == ["bob"]
    suggested = [s for slot in analysis["slots"]["slots"] for s in slot["suggestions"] if s["sha"] == r1]
    assert suggested and all(s["claimed_by"][0]["account"] == "bob" for s in suggested)
    text = agora(project, "analyze", "--model", "hashing", env={"COLUMNS": "120"}).stdout
    assert "claimed by bob until" in text and "Claimed: work in progress" in text
    hits = agora(project, "search", "order 4", "--model", "hashing", "--json").json()["hits"]
    assert [c["account"] for hit in hits if hit["sha"] == r1 for c in hit["claimed_by"]] == ["bob"]
    assert "claimed by bob until" in agora(project, "search", "order 4", "--model", "hashing").stdout

    agora(b, "claim", r1, "--release")
    agora(project, "fetch")
    assert agora(project, "claim", "--list", "--json").json() == []

    agora(b, "claim", r1, "-m", "order 7 now", "--for", "30m")
    agora(b, "checkout", r1)
    (b / "model.py").write_text("order = 7\n")
    agora(b, "push", "-m", "order 7", "--tag", "result", "--metric", "bpc=2.4")
    agora(project, "fetch")
    assert agora(project, "claim", "--list", "--json").json() == [], "bob's result on r1 ends his claim"
    missing = agora(b, "claim", r1, "--release", check=False)
    assert missing.returncode == 1 and "you have no active claim on" in missing.stderr


def test_a_claim_disappears_when_it_expires(tmp_path, remote, project):
    (project / "model.py").write_text("order = 4\n")
    r1 = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()["sha"]
    agora(project, "claim", r1, "-m", "a quick look", "--for", "2s")
    claimed = agora(project, "analyze", "--json", "--model", "hashing").json()["claims"]
    if claimed:  # (a loaded machine may take the 2 s before analyze answers)
        assert claimed[0]["until"] - claimed[0]["since"] == 2
    deadline = time.monotonic() + 30
    while agora(project, "claim", "--list", "--json").json() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert agora(project, "claim", "--list", "--json").json() == []
    assert agora(project, "analyze", "--json", "--model", "hashing").json()["claims"] == []
    hits = agora(project, "search", "order 4", "--model", "hashing", "--json").json()["hits"]
    assert all(hit["claimed_by"] == [] for hit in hits)
