"""A trust root that squatters cannot bend and every reader computes the same (issue 46, part A).

The policy decides the keys of the accounts it speaks for (`[ci] keys`): a squatter publishing as the
CI account, on the project's remote or on a fork, weighs nothing for every reader, whatever each saw
first; `git agora init` pins the CI's key (`--ci-account`/`--ci-key`), writers refuse an unpinned CI
account, an older policy's unpinned CI account is warned about, `[ci] format = 2` counts it as no CI,
and `git agora ci` exits 5 where readers would not count its verdicts. The projects here are claims
and posted verdicts only (no evaluation): cheap enough to read in several clones.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from agora_testing import agora, git, make_clone, worktree_tree

BASE = '[metric]\nname = "m"\ndirection = "min"\n'
# a rerun record as `git agora verify` writes it, by hand (a forger's, or a cheap stand-in for a real rerun)
RECORD = ["--meta", 'evaluator={"sha256": "' + "ab" * 32 + '"}', "--meta", "sandbox=true", "--meta", "duration_s=0.6"]


def keypair(tmp: Path, name: str) -> tuple[Path, str]:
    path = tmp / "keys" / f"{name}_ed25519"
    path.parent.mkdir(exist_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True)
    return path, path.with_suffix(".pub").read_text().strip()


def bare(tmp: Path, name: str = "remote.git") -> Path:
    path = tmp / name
    git(tmp, "init", "-q", "--bare", str(path))
    return path


def founded(tmp: Path, remote: Path, ci_pub: Path) -> Path:
    """alice founds with `ci` and its key pinned (as docs/ci.md said before `init --ci-key`)."""
    alice = make_clone(tmp, "alice", str(remote), "alice")
    pinned = f'[ci]\naccounts = ["ci"]\nkeys = {{ ci = "{ci_pub.read_text().strip()}" }}\n'
    (alice / "agora.toml").write_text(BASE + pinned)
    agora(alice, "init")
    return alice


def hand_made_setup(tmp: Path, remote: Path, ci_table: str) -> tuple[Path, str]:
    """A setup as an older git-agora wrote it (the writers of this one refuse an unpinned CI account)."""
    from git_agora.contribution import Contribution
    from git_agora.ops.publish import publish
    from git_agora.project import Project

    alice = make_clone(tmp, "alice", str(remote), "alice")
    (alice / "agora.toml").write_text(BASE + '[identity]\nsignatures = "required"\n' + ci_table)
    (alice / "program.md").write_text("brief\n")
    setup = Contribution("alice", ("setup",), "Setup: old", (), metadata={"metric": "m", "direction": "min"})
    published = publish(Project.open(alice, account="alice"), setup, worktree_tree(alice))
    assert published.shared
    git(alice, "config", "agora.setup", published.sha)
    return alice, published.sha


def joined(tmp: Path, remote: Path, account: str, key: Path | None = None) -> Path:
    clone = make_clone(tmp, account, str(remote), account)
    if key is not None:
        git(clone, "config", "agora.signingkey", str(key))
    agora(clone, "fetch")
    return clone


def claim(clone: Path, parent: str, value: float, title: str) -> str:
    post = ["post", "--parent", parent, "--tag", "result", "--metric", f"m={value}", "-m", title, "--json"]
    return agora(clone, *post).json()["sha"]


def verdict(clone: Path, target: str, outcome: str, value: float, account: str = "ci") -> str:
    post = ["post", "--account", account, "--target", target, "--verdict", outcome, "-m", f"reran: {value}"]
    return agora(clone, *post, "--meta", f'reproduced={{"m": {value}}}', *RECORD, "--json").json()["sha"]


def standing(clone: Path, leaving: frozenset[str] = frozenset()) -> dict:
    """What readers must agree on, as `analyze --json` says it: the recent and leaders views (each row's
    status, metric, verdict...) and the best, without the contributions in `leaving` (a best among them,
    where no other result may lead, is only said to be one of them: which one depends on the order)."""
    out = agora(clone, "analyze", "--json", "--model", "hashing").json()
    views = {
        name: {row["sha"]: row for row in out["views"][name]["rows"] if row["sha"] not in leaving}
        for name in ("recent", "leaders")
    }
    best = out["summary"]["best"]
    return {
        "rows": {sha: (row["status"],) for sha, row in views["recent"].items()},
        **views,
        "best": "one of those left out" if best is not None and best["sha"] in leaving else best,
    }


def test_init_pins_the_ci_key_and_writers_refuse_a_ci_account_without_one(tmp_path):
    remote = bare(tmp_path)
    _, pub = keypair(tmp_path, "ci")
    alice = make_clone(tmp_path, "alice", str(remote), "alice")
    (alice / "agora.toml").write_text(BASE + '\n[ci]\naccounts = ["ci"]\n')
    refused = agora(alice, "init", check=False)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused
    assert "[ci] accounts names ci without a key: pin each CI account's public key in [ci] keys" in refused.stderr
    unpaired = agora(alice, "init", "--ci-account", "ci", "--ci-account", "ci2", "--ci-key", pub, check=False)
    assert unpaired.returncode == 1 and "--ci-account and --ci-key go in pairs" in unpaired.stderr, unpaired
    assert "refs/agora" not in git(remote, "for-each-ref")

    (alice / "agora.toml").write_text(BASE)
    agora(alice, "init", "--ci-account", "ci", "--ci-key", str(tmp_path / "keys" / "ci_ed25519.pub"))
    import tomllib

    table = tomllib.loads((alice / "agora.toml").read_text())["ci"]
    assert table == {"format": 2, "accounts": ["ci"], "keys": {"ci": pub}}, table

    text = (alice / "agora.toml").read_text().replace(f'keys = {{ "ci" = "{pub}" }}', "")
    (alice / "agora.toml").write_text(text)
    amendment = agora(alice, "push", "--tag", "policy", "-m", "no key", check=False)
    assert amendment.returncode == 1 and "the amended policy: [ci] accounts names ci without a key" in amendment.stderr


def test_ci_exits_5_where_readers_would_not_count_its_verdicts(tmp_path):
    remote = bare(tmp_path)
    ci_key, _ = keypair(tmp_path, "ci")
    other, _ = keypair(tmp_path, "other")
    founded(tmp_path, remote, ci_key.with_suffix(".pub"))
    runner = make_clone(tmp_path, "runner", str(remote), "ci")
    for account, key, why in (
        ("ci", other, "this key is not the one the project's policy pins for ci ([ci] keys)"),
        ("eve", ci_key, "eve is not a CI account of this project ([ci] accounts: ci)"),
    ):
        run = agora(runner, "ci", "--no-site", "--account", account, "--key-file", str(key), check=False)
        assert run.returncode == 5 and len(run.stderr.strip().splitlines()) == 1, run
        assert "readers would not count this CI's verdicts: " + why in run.stderr, run
    assert "refs/agora/log/ci" not in git(remote, "for-each-ref") and "log/eve" not in git(remote, "for-each-ref")


def test_two_fetch_orders_and_a_rebuild_give_every_reader_the_same_standing(tmp_path):
    """A fork holds a squatter's identity for `ci` (and her "confirmed" on the worst result); the
    project's remote holds the real CI's verdicts. A reader who fetched the fork first and one who
    fetched the project first, and both after a rebuild, read the same statuses, evidence and best."""
    remote, fork = bare(tmp_path), bare(tmp_path, "fork.git")
    ci_key, _ = keypair(tmp_path, "ci")
    squatter_key, _ = keypair(tmp_path, "squatter")
    alice = founded(tmp_path, remote, ci_key.with_suffix(".pub"))
    setup = agora(alice, "whoami", "--json").json()["setup"]
    bob = joined(tmp_path, remote, "bob")
    good, bad = claim(bob, setup, 2.0, "good"), claim(bob, setup, 1.0, "too good")
    git(remote, "push", "-q", "--mirror", str(fork))  # the fork, before the CI ever ran

    mallory = joined(tmp_path, fork, "mallory", squatter_key)
    squat = verdict(mallory, bad, "confirmed", 1.0)  # as ci, on the fork: its identity there is hers
    assert "refs/agora/identity/ci" in git(fork, "for-each-ref")
    ci = joined(tmp_path, remote, "ci", ci_key)
    verdict(ci, good, "confirmed", 2.0)
    verdict(ci, bad, "failed", 3.0)

    readers = {}
    for name, order in (("fork-first", ("fork", "origin")), ("project-first", ("origin", "fork"))):
        reader = make_clone(tmp_path, name, str(remote), "dora")
        git(reader, "remote", "add", "fork", str(fork))
        for source in order:
            agora(reader, "fetch", source)
        readers[name] = reader
    seen = {name: standing(reader) for name, reader in readers.items()}
    for reader in readers.values():
        agora(reader, "index", "--rebuild")
        agora(reader, "index", "--check")
    rebuilt = {name: standing(reader) for name, reader in readers.items()}
    assert seen["fork-first"] == seen["project-first"] == rebuilt["fork-first"] == rebuilt["project-first"], seen
    rows = seen["fork-first"]["rows"]
    assert rows[good][0] == "confirmed" and rows[bad][0] == "failed" and squat not in rows, rows
    best = seen["fork-first"]["best"]
    assert best["sha"] == good and best["status"] == "confirmed", best


def test_an_older_policys_unpinned_ci_is_warned_about_and_format_2_counts_it_as_ordinary(tmp_path):
    """An older setup names `ci` without a key: readers trust it on first use and every one warns, with
    the amendment that pins it; `git agora ci` warns too. Under `[ci] format = 2` the same table makes
    `ci` an ordinary account: a squatter's "confirmed" weighs nothing, `show` says why, and the CI
    exits 5."""
    ci_key, ci_line = keypair(tmp_path, "ci")
    squatter_key, _ = keypair(tmp_path, "squatter")
    remote = bare(tmp_path)
    alice, setup = hand_made_setup(tmp_path, remote, '[ci]\naccounts = ["ci"]\n')
    bob = joined(tmp_path, remote, "bob")
    result = claim(bob, setup, 1.0, "a result")
    warning = "the CI account ci has no pinned key"
    notes = agora(bob, "analyze", "--json", "--model", "hashing").json()["summary"]["notes"]
    assert any(warning in n and "git agora push --tag policy" in n for n in notes), notes
    assert warning in agora(bob, "status").stdout
    runner = make_clone(tmp_path, "runner", str(remote), "ci")
    run = agora(runner, "ci", "--no-site", "--max-evaluations", "0", "--key-file", str(ci_key), check=False)
    assert run.returncode == 0 and "warning: ci has no pinned key" in run.stderr, run
    assert f'keys = {{ ci = "{" ".join(ci_line.split()[:2])}" }} and format = 2' in run.stderr, run

    remote2 = bare(tmp_path, "remote2.git")
    (tmp_path / "alice").rename(tmp_path / "alice-old")
    _, setup2 = hand_made_setup(tmp_path, remote2, '[ci]\nformat = 2\naccounts = ["ci"]\n')
    carol = joined(tmp_path, remote2, "carol")
    result2 = claim(carol, setup2, 1.0, "a result")
    mallory = joined(tmp_path, remote2, "mallory", squatter_key)
    squat = verdict(mallory, result2, "confirmed", 1.0)
    dora = joined(tmp_path, remote2, "dora")
    assert standing(dora)["rows"][result2][0] == "unverified"
    shown = agora(dora, "show", squat, "--json").json()["run_notes"]
    assert any("weighs nothing: from an account with no confirmed work" in n for n in shown), shown
    assert any("under [ci] format 2 it counts as an ordinary account" in n for n in shown), shown
    runner2 = make_clone(tmp_path, "runner2", str(remote2), "ci")
    run = agora(runner2, "ci", "--no-site", "--key-file", str(ci_key), check=False)
    assert run.returncode == 5 and "under [ci] format 2 an unpinned CI account is no CI" in run.stderr, run
    assert result  # the first project's claim: what the warning is about
