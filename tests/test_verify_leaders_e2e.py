"""`[ucb] verify = "leaders"` end to end: a project that asks for it (format 3) has `git agora analyze`
suggest for verification only the best and the results within the tolerance of it, says so, and lets
anyone verify any other result by hash all the same."""

from __future__ import annotations

from agora_testing import agora, make_clone

SCORE = "import json\nprint(json.dumps({'loss': float(open('knob.txt').read())}))\n"
TOML = '[metric]\nname = "loss"\ntolerance = 0.01\n\n[ucb]\nformat = 3\nverify = "leaders"\n'


def publish(clone, value: str) -> str:
    (clone / "knob.txt").write_text(value + "\n")
    return agora(clone, "push", "--check", "-m", f"knob {value}", "--tag", "result", "--json").json()["sha"]


def unverified(clone) -> dict:
    agora(clone, "fetch")
    return agora(clone, "analyze", "--json").json()["views"]["unverified"]


def test_only_the_best_and_its_ties_are_suggested_for_verification(tmp_path, remote):
    alice = make_clone(tmp_path, "a", str(remote), "alice")
    (alice / "knob.txt").write_text("3.0\n")
    (alice / "score.py").write_text(SCORE)
    (alice / "agora.toml").write_text(TOML)
    agora(alice, "init", "--eval", "python3 score.py", "--eval-files", "score.py")
    bob = make_clone(tmp_path, "b", str(remote), "bob")
    agora(bob, "fetch")
    agora(bob, "checkout", agora(alice, "whoami", "--json").json()["setup"])
    first, far = publish(bob, "2.0"), publish(bob, "1.8")
    best, tie = publish(bob, "1.5"), publish(bob, "1.505")
    view = unverified(alice)
    assert [row["sha"] for row in view["rows"]] == [best, tie] and view["total"] == 2
    assert "verify = leaders" in view["note"]
    text = agora(alice, "analyze").stdout
    assert "verify = leaders" in text and tie[:10] in text
    agora(alice, "verify", best)  # the setup's account: its verdict counts, the best leaves the list
    assert [row["sha"] for row in unverified(alice)["rows"]] == [tie]
    agora(alice, "verify", far)  # not suggested, still verifiable
    statuses = {r["sha"]: r["status"] for r in agora(alice, "analyze", "--json").json()["views"]["recent"]["rows"]}
    assert statuses[far] == "confirmed" and statuses[first] == "unverified"
