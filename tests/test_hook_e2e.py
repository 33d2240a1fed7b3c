"""The pre-receive hook on a real bare repository, pushed to over file:// and smart HTTP."""

from __future__ import annotations

import subprocess

import pytest

from agora_testing import agora, forge, git, make_clone
from git_agora.contribution import Contribution
from git_agora.identity.chain import identity_message
from git_agora.identity.keys import SigningKey
from git_agora.refs.store import Repository
from servers import smart_http


def push(clone, *refspecs, force=False):
    args = ["git", "push", "--porcelain", *(["--force"] if force else []), "origin", *refspecs]
    return subprocess.run(args, cwd=clone, capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["file", "smart-http"])
def test_the_hook_keeps_logs_append_only_and_contributions_valid(tmp_path, transport):
    served = tmp_path / "served"
    served.mkdir()
    bare = served / "project.git"
    git(served, "init", "-q", "--bare", str(bare))
    git(bare, "config", "http.receivepack", "true")
    assert "installed" in agora(tmp_path, "hook", "install", str(bare)).stdout

    def run(url):
        a = make_clone(tmp_path, "a", url, "alice")
        (a / "model.py").write_text("order = 3\n")
        agora(a, "init", "--metric", "bpc")
        (a / "model.py").write_text("order = 4\n")
        result = agora(a, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
        assert result["push"] == "pushed"  # the normal flow passes the hook
        b = make_clone(tmp_path, "b", url, "bob")
        agora(b, "fetch")
        agora(b, "post", "--target", result["sha"], "--verdict", "confirmed", "-m", "ok")

        deleted = push(b, ":refs/agora/log/alice")
        assert deleted.returncode != 0 and "deleting an account's log is refused" in deleted.stderr
        stray = git(b, "commit-tree", git(b, "rev-parse", f"{result['sha']}^{{tree}}").strip(), "-m", "x").strip()
        forced = push(b, f"{stray}:refs/agora/log/alice", force=True)
        assert forced.returncode != 0 and "forced update is refused" in forced.stderr

        setup = agora(b, "whoami", "--json").json()["setup"]
        for posing, author, reason in (
            (
                Contribution(
                    account="bob", tags=("hypothesis",), description="h", parents=(setup,), metrics={"bpc": 1.0}
                ),
                None,
                "a hypothesis carries no metric",
            ),
            (
                Contribution(account="alice", tags=("insight",), description="as alice", parents=(setup,)),
                None,
                "account alice pushed into the log of bob",
            ),
            (
                Contribution(account="bob", tags=("insight",), description="git log says alice", parents=(setup,)),
                ("alice", "alice@agora"),
                "its Git author is 'alice <alice@agora>', not 'bob <bob@agora>'",
            ),
            (
                Contribution(account="bob", tags=("insight",), description="old format", parents=(setup,), format="1"),
                None,
                "written in Agora format 1, older than its project's setup (format 2)",
            ),
        ):
            sha = forge(b, posing.to_message(), [setup], author=author)
            tip = git(b, "rev-parse", "refs/agora/log/bob").strip()
            message = f"agora log: bob\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {sha}\n"
            log = forge(b, message, [tip, sha], tree=git(b, "rev-parse", f"{tip}^{{tree}}").strip())
            refused = push(b, f"{log}:refs/agora/log/bob")
            assert refused.returncode != 0 and reason in refused.stderr, refused.stderr
        honest = Contribution(account="bob", tags=("insight",), description="a fine insight", parents=(setup,))
        unsigned = forge(b, honest.to_message(), [setup])
        refused = push(b, f"{_log_commit(b, unsigned)}:refs/agora/log/bob")
        assert refused.returncode != 0 and "unsigned, and the project requires signatures" in refused.stderr

        repo = Repository.discover(b)
        fake = tmp_path / f"fake-bob-{transport}"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(fake)], check=True)
        repo.signer = SigningKey(fake, fake.with_suffix(".pub").read_text().strip()).sign
        tree = git(b, "rev-parse", f"{setup}^{{tree}}").strip()
        wrongly = repo.write_contribution(honest, tree)
        refused = push(b, f"{_log_commit(b, wrongly, repo)}:refs/agora/log/bob")
        assert refused.returncode != 0 and "does not verify with the key of its account" in refused.stderr

        identity = git(b, "rev-parse", "refs/agora/identity/bob").strip()
        grab = repo.write_commit(
            repo.empty_tree, [identity], identity_message("bob", fake.with_suffix(".pub").read_text()), "bob"
        )
        refused = push(b, f"{grab}:refs/agora/identity/bob")
        assert refused.returncode != 0 and "identity commit that its previous key did not sign" in refused.stderr
        assert git(bare, "rev-parse", "refs/agora/identity/bob").strip() == identity

        agora(b, "post", "-m", "signed by bob's own key", "--tag", "insight")  # and the honest one passes
        assert (
            git(bare, "rev-parse", "refs/agora/log/alice").strip()
            == git(a, "rev-parse", "refs/agora/log/alice").strip()
        )
        assert git(bare, "rev-parse", "refs/agora/log/bob").strip() == git(b, "rev-parse", "refs/agora/log/bob").strip()

    if transport == "file":
        run(f"file://{bare}")
    else:
        with smart_http(served) as base:
            run(f"{base}/project.git")


def _log_commit(clone, entry, repo=None):
    """bob's log with `entry` appended (signed when `repo` has a signer), by hand."""
    tip = git(clone, "rev-parse", "refs/agora/log/bob").strip()
    message = f"agora log: bob\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {entry}\n"
    if repo is not None:
        return repo.write_commit(git(clone, "rev-parse", f"{tip}^{{tree}}").strip(), [tip, entry], message, "bob")
    return forge(clone, message, [tip, entry], tree=git(clone, "rev-parse", f"{tip}^{{tree}}").strip())


def test_install_refuses_what_it_should(tmp_path):
    r = agora(tmp_path, "hook", "install", str(tmp_path), check=False)
    assert r.returncode == 1 and "not a bare Git repository" in r.stderr
    bare = tmp_path / "r.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    (bare / "hooks" / "pre-receive").write_text("#!/bin/sh\nexit 0\n")
    r = agora(tmp_path, "hook", "install", str(bare), check=False)
    assert r.returncode == 1 and "is not git-agora's" in r.stderr
    agora(tmp_path, "hook", "install", str(bare), "--force")
