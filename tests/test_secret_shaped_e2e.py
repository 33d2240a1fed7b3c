"""A target whose text is shaped like a secret can't block verification (issue 45).

`post` refuses text shaped like an API key, but readers accept what others crafted with plain git. A
verdict carries none of its target's text (fixed words, the short SHA, numbers), so it is published
and counts; a scorer's declared output field shaped like a secret is a scorer error, published as a
failed verdict with a fixed reason; readers show such text redacted and marked, never republished.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from unittest import mock

import pytest

from agora_testing import agora, demo_task_clone, git, make_clone, worktree_tree

SECRET = "sk-" + "A1b2C3d4" * 5  # an API key's shape: `post` would refuse it
TITLE = f"much better smoothing {SECRET}"


def ci_policy(public_key: str) -> str:
    """The `[ci]` table of a policy naming the CI account `ci` with its key pinned."""
    return f'\n[ci]\nformat = 2\naccounts = ["ci"]\nkeys = {{ ci = "{public_key}" }}\n'


def forged_fake_best(tmp: Path, founder: Path) -> tuple[str, str]:
    """The founder's checked baseline, and mallory's result on a changed tree claiming far better, its
    title shaped like an API key: signed and published by a client without the leak scan (`post` refuses
    such text; readers take what others publish)."""
    from git_agora.contribution import Contribution
    from git_agora.ops.publish import publish
    from git_agora.project import Project

    baseline = agora(founder, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json")
    sha = baseline.json()["sha"]
    m = make_clone(tmp, "m", git(founder, "remote", "get-url", "origin").strip(), "mallory")
    agora(m, "fetch")
    agora(m, "checkout", sha)
    path = m / "choices.py"
    path.write_text(path.read_text().replace("ORDER = ", "ORDER = 1 + "))  # a change: a result to rank
    claim = Contribution("mallory", ("result",), TITLE, (sha,), {"bpc": 0.5})
    with mock.patch("git_agora.ops.publish._refuse_secrets"):
        fake = publish(Project.open(m, account="mallory"), claim, worktree_tree(m))
    assert fake.shared and SECRET in git(m, "cat-file", "commit", fake.sha)
    return sha, fake.sha


def best(clone: Path) -> str:
    agora(clone, "fetch")
    return agora(clone, "analyze", "--json").json()["summary"]["best"]["sha"]


def assert_fixed(clone: Path, verdict: str, target: str) -> None:
    message = git(clone, "cat-file", "commit", verdict)
    assert SECRET not in message and "smoothing" not in message and "mallory" not in message, message
    assert message.split("\n\n", 1)[1].startswith(f"Verification of {target[:12]}: failed"), message


def test_a_secret_shaped_title_is_verified_redacted_and_loses_the_best(tmp_path, remote):
    alice = demo_task_clone(tmp_path, remote)
    _, fake = forged_fake_best(tmp_path, alice)
    assert best(alice) == fake  # the fake is the best until a counting verdict says otherwise

    bob = make_clone(tmp_path, "b", str(remote), "bob")
    agora(bob, "fetch")
    by_bob = agora(bob, "verify", fake, "--json").json()
    assert by_bob["verdict"] == "failed" and by_bob["push"] == "pushed", by_bob
    assert_fixed(bob, by_bob["sha"], fake)

    pending = agora(alice, "verify", "--pending", "--json", timeout=600).json()
    reran = {c["target"]: c for c in pending["checked"]}
    assert reran[fake]["verdict"] == "failed" and reran[fake]["verification"], pending
    assert SECRET not in str(pending) and "[redacted: an API key]" in reran[fake]["title"]
    assert_fixed(alice, reran[fake]["verification"], fake)
    assert best(alice) != fake  # the founder's failed verdict counts

    carol = make_clone(tmp_path, "c", str(remote), "carol")
    agora(carol, "fetch")
    shown = agora(carol, "show", fake)
    assert SECRET not in shown.stdout and "[redacted: an API key]" in shown.stdout, shown
    assert "note         secret-shaped text: what looks like an API key is shown redacted" in shown.stdout
    assert shown.stdout.splitlines().count("    much better smoothing [redacted: an API key]") == 1
    as_json = agora(carol, "show", fake, "--json")
    assert SECRET not in as_json.stdout and as_json.json()["title"] == "much better smoothing [redacted: an API key]"
    for command in (("log",), ("log", "--json"), ("analyze",), ("analyze", "--json"), ("lineage", fake)):
        assert SECRET not in agora(carol, *command).stdout, command
    site = tmp_path / "site"
    agora(carol, "site", str(site))
    pages = [p for p in site.rglob("*") if p.is_file()]
    assert len(pages) > 3 and not [p for p in pages if SECRET.encode() in p.read_bytes()]
    assert any(b"[redacted: an API key]" in p.read_bytes() for p in pages)


@pytest.mark.slow
def test_the_ci_publishes_its_verdict_on_a_secret_shaped_target(tmp_path, remote):
    from git_agora.demo.run import AGORA_TOML

    keys = tmp_path / "keys"
    keys.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci@agora", "-f", keys / "ci"], check=True)
    alice = demo_task_clone(tmp_path, remote)
    public_key = (keys / "ci.pub").read_text().strip()
    (alice / "agora.toml").write_text(AGORA_TOML + ci_policy(public_key))
    agora(alice, "push", "--tag", "policy", "-m", "the CI account: ci")
    baseline, fake = forged_fake_best(tmp_path, alice)
    ci = make_clone(tmp_path, "ci", str(remote), "ci")
    env = {"AGORA_CI_KEY": (keys / "ci").read_text(), "AGORA_ACCOUNT": "ci"}
    run = agora(ci, "ci", "--json", env=env, timeout=600)
    report = run.json()
    verdicts = {c["target"]: c for c in report["checked"]}
    assert verdicts[fake]["verdict"] == "failed" and verdicts[fake]["verification"], report
    assert verdicts[baseline]["verdict"] == "confirmed" and report["witness_records"], report
    assert SECRET not in run.stdout + run.stderr
    assert_fixed(ci, verdicts[fake]["verification"], fake)


SCORE = "import json\nprint(json.dumps({'loss': 1.0, 'note': open('note.txt').read().strip()}))\n"
TOML = """[metric]
name = "loss"
tolerance = 0.01

[eval]
format = 2
command = "python3 score.py"
files = ["score.py"]
output = ["note"]
"""


def test_a_declared_output_field_shaped_like_a_secret_fails_with_a_fixed_reason(tmp_path, remote):
    alice = make_clone(tmp_path, "a", str(remote), "alice")
    (alice / "note.txt").write_text("plain\n")
    (alice / "score.py").write_text(SCORE)
    (alice / "agora.toml").write_text(TOML)
    agora(alice, "init")
    bob = make_clone(tmp_path, "b", str(remote), "bob")
    agora(bob, "fetch")
    agora(bob, "checkout", agora(alice, "whoami", "--json").json()["setup"])
    (bob / "note.txt").write_text(SECRET + "\n")  # the build's text, echoed by the scorer
    claim = agora(bob, "push", "-m", "a note", "--tag", "result", "--metric", "loss=1.0", "--json").json()["sha"]
    agora(alice, "fetch")
    done = agora(alice, "verify", claim, "--json")
    verdict = done.json()
    assert verdict["verdict"] == "failed" and verdict["reason"] == "an output field looks like a secret", verdict
    assert verdict["push"] == "pushed" and verdict["output"] == {} and SECRET not in done.stdout
    message = git(alice, "cat-file", "commit", verdict["sha"])
    assert SECRET not in message and "an output field looks like a secret" in message, message
