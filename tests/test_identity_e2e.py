"""Identity: a contribution counts only when the log of the account it names lists it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from agora_testing import agora, forge, git, make_clone, publish_forged_log
from git_agora.contribution import Contribution
from git_agora.identity.chain import identity_message
from git_agora.identity.keys import SigningKey
from git_agora.refs.store import Repository


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


def other_machine(tmp_path, name):
    """The environment of another person's machine: their own home, so their own keys."""
    home = tmp_path / f"home-{name}"
    home.mkdir()
    (home / ".gitconfig").write_text(Path(os.environ["GIT_CONFIG_GLOBAL"]).read_text())
    return {**os.environ, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig")}


def test_every_commit_is_signed_and_git_verify_commit_agrees(tmp_path, remote, project):
    (project / "model.py").write_text("order = 4\n")
    agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5")
    key = Path(os.environ["HOME"]) / ".config" / "git-agora" / "keys" / "alice_ed25519.pub"
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'alice@agora namespaces="git" {key.read_text()}')
    shas = git(project, "rev-list", "refs/agora/log/alice", "refs/agora/identity/alice").split()
    assert len(shas) >= 5
    for sha in shas:
        subprocess.run(
            ["git", "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", sha],
            cwd=project,
            check=True,
            capture_output=True,
        )


def test_another_machine_cannot_publish_as_alice(tmp_path, remote, project):
    b = make_clone(tmp_path, "b", str(remote), "bob")
    bob_machine = other_machine(tmp_path, "bob")
    agora(b, "fetch", env=bob_machine)
    r = agora(b, "--account", "alice", "post", "-m", "as alice", "--tag", "insight", check=False, env=bob_machine)
    assert r.returncode == 1 and "the identity of alice here announces another key" in r.stderr

    # with plain git: a commit signed by bob's own "alice" key, appended to alice's log as a fast-forward
    setup = agora(b, "whoami", "--json", env=bob_machine).json()["setup"]
    key = Path(bob_machine["HOME"]) / "fake_alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    repo = Repository.discover(b)
    repo.signer = SigningKey(key, (key.with_suffix(".pub")).read_text().strip()).sign
    posing = Contribution(
        account="alice", tags=("result",), description="alice, best ever", parents=(setup,), metrics={"bpc": 0.001}
    )
    forged = repo.write_contribution(posing, git(b, "rev-parse", f"{setup}^{{tree}}").strip())
    git(b, "update-ref", "refs/agora/log/alice", git(b, "rev-parse", "refs/agora/remotes/origin/log/alice").strip())
    repo.append_to_log("alice", [forged])
    git(b, "push", "-q", "origin", "refs/agora/log/alice")
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch", env=other_machine(tmp_path, "carol"))
    reasons = {row["sha"]: row["reasons"] for row in agora(c, "log", "--rejected", "--json").json()}
    assert "the signature does not verify with the key of its account" in reasons[forged]
    assert agora(c, "analyze", "--json", "--model", "hashing").json()["summary"]["best"] is None


def test_a_rewritten_identity_does_not_move_the_pinned_key(tmp_path, remote, project):
    (project / "model.py").write_text("order = 4\n")
    honest = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
    c = make_clone(tmp_path, "c", str(remote), "carol")
    carol = other_machine(tmp_path, "carol")
    agora(c, "fetch", env=carol)  # carol pins alice's key now
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    mallory = other_machine(tmp_path, "mallory")
    agora(m, "fetch", env=mallory)
    key = Path(mallory["HOME"]) / "fake_alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    repo = Repository.discover(m)
    signer = SigningKey(key, key.with_suffix(".pub").read_text().strip())
    repo.signer = signer.sign
    identity = repo.write_commit(repo.empty_tree, [], identity_message("alice", signer.public), "alice")
    git(m, "push", "-q", "--force", "origin", f"{identity}:refs/agora/identity/alice")
    posing = Contribution(account="alice", tags=("insight",), description="alice says so", parents=(honest["sha"],))
    forged = repo.write_contribution(posing, git(m, "rev-parse", f"{honest['sha']}^{{tree}}").strip())
    git(m, "update-ref", "refs/agora/log/alice", git(m, "rev-parse", "refs/agora/remotes/origin/log/alice").strip())
    repo.append_to_log("alice", [forged])
    git(m, "push", "-q", "origin", "refs/agora/log/alice")
    agora(c, "fetch", env=carol)
    reasons = {row["sha"]: row["reasons"] for row in agora(c, "log", "--rejected", "--json", env=carol).json()}
    assert "the signature does not verify with the key of its account" in reasons[forged]
    assert honest["sha"] not in reasons  # alice's own work still counts
    agora(c, "index", "--check", env=carol)


def keypair(where: Path, name: str) -> tuple[Path, str]:
    key = where / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key, key.with_suffix(".pub").read_text().strip()


def test_members_close_a_project_and_amendments_open_it(tmp_path, remote):
    alice_key, alice_pub = keypair(tmp_path, "alice")
    bob_key, bob_pub = keypair(tmp_path, "bob")
    a = make_clone(tmp_path, "a", str(remote), "alice")
    git(a, "config", "agora.signingkey", str(alice_key))
    (a / "agora.toml").write_text(f'[identity]\nsignatures = "required"\nmembers = {{ alice = "{alice_pub}" }}\n')
    agora(a, "init")
    b = make_clone(tmp_path, "b", str(remote), "bob")
    git(b, "config", "agora.signingkey", str(bob_key))
    agora(b, "fetch")
    for _ in range(2):  # the second time from what the first remembered (`Project.policy_members`)
        r = agora(b, "post", "-m", "let me in", "--tag", "insight", check=False)
        assert r.returncode == 1 and "bob is not a member of this project" in r.stderr
    assert "alice" in (b / ".git" / "agora" / "policy-members").read_text()

    setup = agora(b, "whoami", "--json").json()["setup"]
    repo = Repository.discover(b)
    repo.signer = SigningKey(bob_key, bob_pub).sign
    outsider = repo.write_contribution(
        Contribution(account="bob", tags=("insight",), description="anyway", parents=(setup,)),
        git(b, "rev-parse", f"{setup}^{{tree}}").strip(),
    )
    repo.append_to_log("bob", [outsider])
    git(b, "push", "-q", "origin", "refs/agora/log/bob")
    agora(a, "fetch")
    reasons = {row["sha"]: row["reasons"] for row in agora(a, "log", "--rejected", "--json").json()}
    assert any("not a member" in r for r in reasons[outsider])

    members = f'members = {{ alice = "{alice_pub}", bob = "{bob_pub}" }}'
    toml = re.sub(r"^members = .*$", members, (a / "agora.toml").read_text(), flags=re.M)
    (a / "agora.toml").write_text(toml)
    amendment = agora(a, "push", "-m", "welcome bob", "--tag", "policy", "--json").json()
    agora(b, "fetch")
    agora(b, "checkout", amendment["sha"])
    member = agora(b, "post", "-m", "glad to be here", "--tag", "insight", "--json").json()
    agora(a, "fetch")
    assert member["sha"] not in {row["sha"] for row in agora(a, "log", "--rejected", "--json").json()}


def test_account_names_git_cannot_store_are_refused(project):
    for name in ("a.", "HEAD", ""):
        r = agora(project, "--account", name, "post", "-m", "x", "--tag", "insight", check=False)
        assert r.returncode == 1 and "git agora: error:" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_an_empty_command_account_is_refused_not_replaced(project):
    r = agora(project, "post", "--account", "", "-m", "x", "--tag", "insight", check=False)
    assert r.returncode == 1 and "account '' is not valid" in r.stderr


def test_a_backdated_setup_never_becomes_the_root_and_competing_setups_are_said(tmp_path, remote, project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    (m / "agora.toml").write_text('[eval]\ncommand = "echo {}"\n')
    forged = Contribution(account="mallory", tags=("setup",), description="the real project, honest")
    tree = subprocess.run(["git", "mktree"], cwd=m, input="", capture_output=True, text=True).stdout.strip()
    sha = subprocess.run(
        ["git", "commit-tree", tree],
        cwd=m,
        input=forged.to_message(),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z"},
    ).stdout.strip()
    publish_forged_log(m, "mallory", [sha])
    agora(project, "fetch")
    assert agora(project, "whoami", "--json").json()["setup"] == setup  # pinned at init
    reasons = {row["sha"]: row["reasons"] for row in agora(project, "log", "--rejected", "--json").json()}
    assert any("second setup" in r for r in reasons[sha])
    c = make_clone(tmp_path, "c", str(remote), "carol")
    first = agora(c, "fetch", "--json")
    assert "competing setups here" in first.stderr and "by mallory" in first.stderr  # told, never chosen for
    r = agora(c, "analyze", "--json", check=False)
    assert r.returncode == 1 and "competing setups here" in r.stderr
    git(c, "config", "agora.setup", setup)
    assert agora(c, "analyze", "--json", "--model", "hashing").json()["summary"]["contributions"] >= 2


def test_a_rotated_key_keeps_alices_work_valid_and_a_forged_rotation_does_not_count(tmp_path, remote, project):
    (project / "model.py").write_text("order = 4\n")
    first = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()
    c = make_clone(tmp_path, "c", str(remote), "carol")
    carol = other_machine(tmp_path, "carol")
    agora(c, "fetch", env=carol)  # carol pins alice's first key

    keys = Path(os.environ["HOME"]) / ".config" / "git-agora" / "keys"
    old_public = (keys / "alice_ed25519.pub").read_text().strip()
    done = agora(project, "key", "rotate", "--json").json()
    assert done["old_public"] == old_public and done["new_public"] != old_public and done["push_problem"] is None
    assert (keys / "alice_ed25519.pub").read_text().strip() == done["new_public"]
    assert Path(done["retired"]).read_text() and Path(done["retired"] + ".pub").read_text().strip() == old_public
    assert git(remote, "rev-parse", "refs/agora/identity/alice").strip() == done["identity"]
    shown = agora(project, "key", "show", "--json").json()
    assert [k.split()[1] for k in shown["chain"]] == [old_public.split()[1], done["new_public"].split()[1]]

    (project / "model.py").write_text("order = 5\n")
    second = agora(project, "push", "-m", "order 5", "--tag", "result", "--metric", "bpc=2.4", "--json").json()
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'alice@agora namespaces="git" {done["new_public"]}\n')
    git(project, "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", second["sha"])

    # a clone that still signs with the old key is told, and publishes nothing
    old_clone = make_clone(tmp_path, "old", str(remote), "alice")
    git(old_clone, "config", "agora.signingkey", done["retired"])
    agora(old_clone, "fetch")
    r = agora(old_clone, "post", "-m", "with the old key", "--tag", "insight", check=False)
    assert r.returncode == 1 and "was rotated out of the identity of alice" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

    # mallory appends a "rotation" to her own key, signed by herself: the chain ends before it
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    mallory = other_machine(tmp_path, "mallory")
    agora(m, "fetch", env=mallory)
    fake, fake_public = keypair(tmp_path, "fake_alice")
    repo = Repository.discover(m)
    repo.signer = SigningKey(fake, fake_public).sign
    tip = git(m, "rev-parse", "refs/agora/remotes/origin/identity/alice").strip()
    grab = repo.write_commit(repo.empty_tree, [tip], identity_message("alice", fake_public), "alice")
    git(m, "push", "-q", "origin", f"{grab}:refs/agora/identity/alice")  # a fast-forward: git accepts it
    posing = Contribution(account="alice", tags=("insight",), description="alice says so", parents=(second["sha"],))
    forged = repo.write_contribution(posing, git(m, "rev-parse", f"{second['sha']}^{{tree}}").strip())
    git(m, "update-ref", "refs/agora/log/alice", git(m, "rev-parse", "refs/agora/remotes/origin/log/alice").strip())
    repo.append_to_log("alice", [forged])
    git(m, "push", "-q", "origin", "refs/agora/log/alice")

    agora(c, "fetch", env=carol)
    reasons = {row["sha"]: row["reasons"] for row in agora(c, "log", "--rejected", "--json", env=carol).json()}
    assert first["sha"] not in reasons and second["sha"] not in reasons, "work signed by either key counts"
    assert "the signature does not verify with the key of its account" in reasons[forged]
    newcomer = make_clone(tmp_path, "n", str(remote), "nina")
    agora(newcomer, "fetch", env=other_machine(tmp_path, "nina"))
    rejected = {row["sha"] for row in agora(newcomer, "log", "--rejected", "--json").json()}
    assert rejected == {forged}, "a newcomer pins alice's first key and follows only her signed rotation"


def test_a_rotation_to_a_missing_key_is_one_line_and_changes_nothing(project):
    before = git(project, "for-each-ref").strip()
    r = agora(project, "key", "rotate", "--key", "/nonexistent/key", check=False)
    assert (
        r.returncode == 1
        and r.stderr.strip() == "git agora: error: the new key /nonexistent/key does not exist or is not a file"
    )
    assert git(project, "for-each-ref").strip() == before


def test_a_verified_identity_chain_is_remembered_by_its_tip(tmp_path, project, monkeypatch):
    """Publishing checks the account's identity chain once per tip, not per contribution; a moved tip
    (a rotation) is checked again, so a rotated-out key is still refused."""
    from git_agora.identity import chain

    repo = Repository.discover(project)
    alice_key = Path(os.environ["HOME"]) / ".config" / "git-agora" / "keys" / "alice_ed25519"
    alice = SigningKey(alice_key, alice_key.with_suffix(".pub").read_text().strip())
    (Path(repo.agora_path) / chain.VERIFIED_FILE).unlink(missing_ok=True)
    walked: list[str] = []
    real = chain.chain_keys
    monkeypatch.setattr(chain, "chain_keys", lambda r, tip: walked.append(tip) or real(r, tip))
    local = chain.ensure_identity(repo, "alice", alice)
    assert chain.ensure_identity(repo, "alice", alice) == local
    assert chain.ensure_identity(Repository.discover(project), "alice", alice) == local
    assert walked == [git(project, "rev-parse", local).strip()], "checked once, then remembered"

    new_key, new_public = keypair(tmp_path, "alice_new")
    repo.signer = alice.sign
    tip = repo.ref(local)
    rotation = repo.write_commit(repo.empty_tree, [tip], identity_message("alice", new_public), "alice")
    assert repo.compare_and_swap(local, tip, rotation)
    try:
        chain.ensure_identity(Repository.discover(project), "alice", alice)
        raise AssertionError("the rotated-out key was accepted")
    except chain.AgoraError as exc:
        assert "was rotated out" in str(exc)
    assert chain.ensure_identity(Repository.discover(project), "alice", SigningKey(new_key, new_public)) == local


def test_an_rsa_key_signs_through_ssh_keygen_and_git_verify_commit_agrees(tmp_path, remote, project):
    """Keys that are not unencrypted ed25519 are signed by ssh-keygen, as before in-process signing."""
    rob = make_clone(tmp_path, "rob", str(remote), "rob")
    key = tmp_path / "rob_rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(key)], check=True)
    git(rob, "config", "agora.signingkey", str(key))
    agora(rob, "fetch")
    posted = agora(rob, "post", "-m", "an rsa-signed insight", "--tag", "insight", "--json").json()
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'rob@agora namespaces="git" {key.with_suffix(".pub").read_text()}')
    for sha in [posted["sha"], *git(rob, "rev-parse", "refs/agora/log/rob", "refs/agora/identity/rob").split()]:
        git(rob, "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", sha)
    assert posted["sha"] in git(remote, "log", "--format=%(trailers:valueonly)", "refs/agora/log/rob")


def test_a_reader_whose_git_shows_signatures_reads_signed_commits(tmp_path, remote, project):
    """`log.showSignature` (a user's setting) makes `git log` print each signature's check before the
    commit, whatever the format: the reader's walks turn it off, so signed commits read as they are."""
    (project / "model.py").write_text("order = 4\n")
    work = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=2.5", "--json").json()["sha"]
    b = make_clone(tmp_path, "b", str(remote), "bob")
    git(b, "config", "log.showSignature", "true")
    agora(b, "fetch")
    agora(project, "post", "-m", "a later insight", "--tag", "insight", "--parent", work)
    agora(project, "sync")
    agora(b, "fetch")  # an update: git walks the new commits
    shown = {row["sha"] for row in agora(b, "log", "--json").json()}
    assert work in shown and len(shown) >= 3, shown
    assert agora(b, "log", "--rejected", "--json").json() == []
    assert agora(b, "index", "--check").returncode == 0


def test_a_reader_whose_git_re_encodes_messages_reads_them_as_written(tmp_path, remote, project):
    """`i18n.logOutputEncoding` (a user's setting) would have `git log` print messages in another
    encoding: every participant reads the same text."""
    agora(project, "post", "-m", "café au lait", "--tag", "insight")
    b = make_clone(tmp_path, "b", str(remote), "bob")
    git(b, "config", "i18n.logOutputEncoding", "ISO-8859-1")
    agora(b, "fetch")
    agora(project, "post", "-m", "crème brûlée", "--tag", "insight")
    agora(b, "fetch")  # an update: git walks the new commits
    titles = {row["title"] for row in agora(b, "log", "--json").json()}
    assert {"café au lait", "crème brûlée"} <= titles, titles
