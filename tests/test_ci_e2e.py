"""The CI drill (issue 28): a bare remote, a founder whose policy names the CI account, three agents
publishing honest and dishonest results, and `git agora ci` run as the CI account, with its key in the
environment as a CI secret holds it: a first run, a run after a backdated copy of the best appears, and
a run with nothing new.

What is checked is the record, as a fresh clone reads it: every dishonest claim failed, every honest one
confirmed, the witnessed original keeps its priority and the best against the backdated copy, and the
CI's key is in no object of the remote and was out of reach of the code it ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from agora_testing import agora, git, make_clone

CI_TOML = '\n[ci]\naccounts = ["ci"]\n'

# Prepended to carol's train.py: an honest result whose build looks for the CI's private key wherever the
# sandbox might show it (the environment, /proc, /tmp, HOME, the export) and breaks the build if it finds
# it. It knows the key by its public half (CI_PUBLIC, public anyway), read from any OpenSSH private key text.
KEY_PROBE = """
import base64 as _b64
import os as _os
import struct as _struct
import sys as _sys

_BEGIN = "-----BEGIN OPENSSH" + " PRIVATE KEY-----"  # split: git-agora's own sources hold these words
_PYTHON = (_sys.prefix, _sys.base_prefix)  # the interpreter the sandbox shows: no keys of anyone's


def _holds_the_key(text):
    for block in text.split(_BEGIN)[1:]:
        try:
            data = _b64.b64decode("".join(block.split("-----END")[0].split()))
            at = len(b"openssh-key-v1\\0")
            for _ in range(3):  # cipher, kdf, kdf options
                at += 4 + _struct.unpack(">I", data[at : at + 4])[0]
            size = _struct.unpack(">I", data[at + 4 : at + 8])[0]
            if _b64.b64encode(data[at + 8 : at + 8 + size]).decode() == "CI_PUBLIC":
                return True
        except Exception:
            continue
    return False


def _key_in_reach():
    if any(_holds_the_key(value) for value in _os.environ.values()):
        return "the environment"
    for top in ("/tmp", "/root", "/home", "/run", "/var", "/etc", "/proc/1", _os.path.expanduser("~"), _os.getcwd()):
        for folder, subfolders, names in _os.walk(top):
            if folder.startswith(_PYTHON):
                subfolders.clear()
                continue
            for name in names:
                try:
                    with open(_os.path.join(folder, name), "rb") as handle:
                        text = handle.read(1 << 16).decode("ascii", "replace")
                except OSError:
                    continue
                if _BEGIN in text and _holds_the_key(text):
                    return _os.path.join(folder, name)
    return None


_found = _key_in_reach()
if _found:
    raise SystemExit(f"found the CI's private key: {_found}")
"""


def ci_secret(tmp: Path) -> tuple[str, str]:
    """The CI's key (made once, in `tmp/secrets`, outside every work tree): its private text, and the
    line of its public key."""
    secrets = tmp / "secrets"
    if not (secrets / "ci").exists():
        secrets.mkdir(exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci@agora", "-f", secrets / "ci"], check=True
        )
    return (secrets / "ci").read_text(), (secrets / "ci.pub").read_text().strip()


def founded_with_ci(tmp: Path, remote: Path, toml: str | None = None) -> Path:
    """alice founds a project on the demo task whose policy names `ci` as its CI account, with its key
    pinned (`toml`: another `[ci]` table)."""
    from git_agora.demo.run import AGORA_TOML, TASK_FILES

    toml = toml if toml is not None else CI_TOML + f'keys = {{ ci = "{ci_secret(tmp)[1]}" }}\n'

    alice = make_clone(tmp, "alice", str(remote), "alice")
    for task_file in TASK_FILES:
        shutil.copyfile(files("git_agora") / "demo" / "task" / task_file, alice / task_file)
    (alice / ".gitignore").write_text("__pycache__/\n")
    (alice / "agora.toml").write_text(AGORA_TOML + toml)
    agora(alice, "init")
    return alice


def set_choice(clone: Path, knob: str, value: str) -> None:
    path = clone / "choices.py"
    lines = [f"{knob} = {value}" if ln.startswith(knob) else ln for ln in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def joined(tmp: Path, remote: Path, account: str, at: str) -> Path:
    clone = make_clone(tmp, account, str(remote), account)
    agora(clone, "fetch")
    agora(clone, "checkout", at)
    return clone


def run_ci(clone: Path, secret: str, *args: str, check: bool = True):
    env = {"AGORA_CI_KEY": secret, "AGORA_ACCOUNT": "ci"}
    return agora(clone, "ci", "--site", str(clone.parent / "site"), *args, env=env, check=check, timeout=600)


def all_objects(bare: Path) -> bytes:
    listed = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=bare, capture_output=True, check=True
    )
    return listed.stdout


@pytest.mark.slow
def test_the_ci_drill(tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    alice = founded_with_ci(tmp_path, remote)
    baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()["sha"]

    bob = joined(tmp_path, remote, "bob", baseline)  # honest: the best
    set_choice(bob, "METHOD", '"witten_bell"')
    best = agora(bob, "push", "--check", "-m", "witten-bell smoothing", "--tag", "result", "--json").json()["sha"]
    secret, public = ci_secret(tmp_path)  # the CI secret: outside every work tree, pinned by the policy
    public = public.split()[1]
    carol = joined(tmp_path, remote, "carol", baseline)  # honest, and looks for the CI's key as it builds
    (carol / "train.py").write_text(KEY_PROBE.replace("CI_PUBLIC", public) + (carol / "train.py").read_text())
    set_choice(carol, "ORDER", "3")
    probing = agora(carol, "push", "--check", "-m", "order 3", "--tag", "result", "--json").json()["sha"]
    mallory = joined(tmp_path, remote, "mallory", baseline)  # dishonest: claims what it never measured
    set_choice(mallory, "ORDER", "4")
    inflated = agora(mallory, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=1.5", "--json").json()["sha"]

    ci = make_clone(tmp_path, "ci", str(remote), "ci")

    first = run_ci(ci, secret, "--json").json()
    verdicts = {c["target"]: c["verdict"] for c in first["checked"]}
    assert verdicts == {baseline: "confirmed", best: "confirmed", probing: "confirmed", inflated: "failed"}, first
    assert [c["target"] for c in first["checked"][:2]] == [inflated, best]  # the leaders first, as claimed
    assert len(first["witness_records"]) == 1 and first["witnessed_logs"] == 4 and first["site"]
    assert (tmp_path / "site" / "index.html").exists()
    assert 'id="no-map"' not in (tmp_path / "site" / "clusters.html").read_text()  # ci embedded: a cluster map
    assert any(note.startswith("site: embedded ") for note in first["notes"]), first["notes"]

    # mallory copies bob's best beside it (same parent, same tree), dated years before, signed, with the library
    from git_agora.contribution import Contribution
    from git_agora.ops.publish import publish
    from git_agora.project import Project

    agora(mallory, "fetch")
    dated = int(git(mallory, "log", "-1", "--format=%ct", baseline)) + 1
    tree = git(mallory, "rev-parse", f"{best}^{{tree}}").strip()
    copy = Contribution("mallory", ("result",), "witten-bell smoothing, first", (baseline,), {"bpc": 0.0})
    bpc = agora(mallory, "show", best, "--json").json()["metrics"]["bpc"]
    copied = publish(Project.open(mallory, account="mallory"), copy._replace(metrics={"bpc": bpc}), tree, dated)
    assert copied.shared
    mallorys_log = git(mallory, "rev-parse", "refs/agora/log/mallory").strip()
    forged = f'witness={{"tips": {{"mallory": "{mallorys_log}"}}}}'  # a witness record, but not the CI's
    agora(mallory, "post", "--parent", baseline, "--tag", "witness", "--meta", forged, "-m", "I saw it first")

    second = run_ci(ci, secret).stdout
    assert f"confirmed: {copied.sha[:12]}" in second and "witnessed 1 account log:" in second, second

    third = run_ci(ci, secret, "--json")
    refs_before = git(remote, "for-each-ref")
    assert (
        third.json()["published"] is False
        and third.json()["checked"] == []
        and third.json()["notes"] == ["nothing new since the last run: published nothing"]
    )
    assert git(remote, "for-each-ref") == refs_before
    overview = (tmp_path / "site" / "index.html").read_text()  # the CI's site says when it first saw the best
    assert "first witnessed by the project's CI at" in overview

    reader = tmp_path / "reader"
    agora(tmp_path, "clone", str(remote), str(reader), "--account", "dora")
    out = agora(reader, "analyze", "--json").json()
    top = out["summary"]["best"]
    assert top["sha"] == best and top["priority"] == "witnessed", top
    leaders = {row["sha"]: row for row in out["views"]["leaders"]["rows"]}
    assert leaders[best]["new_best"] is True and leaders[copied.sha]["new_best"] is False
    status = {row["sha"]: row["status"] for row in out["views"]["recent"]["rows"]}
    assert status[inflated] == "failed"
    assert {status[s] for s in (baseline, best, probing, copied.sha)} == {"confirmed"}
    assert not any("witness" in row["tags"] for row in out["views"]["recent"]["rows"])
    original, late = (agora(reader, "show", sha, "--json").json() for sha in (best, copied.sha))
    assert original["witness_time"] == top["witness_time"] < late["witness_time"]
    assert "witnessed by the project's CI at" in agora(reader, "show", best).stdout
    cache = reader / ".git" / "agora" / "witnessed.parquet"  # a cache: a broken one is resolved again
    cache.write_bytes(b"PAR1 not parquet")
    assert agora(reader, "show", copied.sha, "--json").json()["witness_time"] == late["witness_time"]
    assert cache.read_bytes()[:4] == b"PAR1" and len(cache.read_bytes()) > 100

    key_body = "".join(secret.strip().splitlines()[1:-1]).encode()
    objects = all_objects(remote)
    assert b"BEGIN OPENSSH PRIVATE KEY" not in objects and key_body[:40] not in objects
    for line in secret.strip().splitlines()[1:-1]:
        assert line.encode() not in objects
    assert not list(ci.rglob("*ci*ed25519*")) and secret.encode() not in b"".join(
        p.read_bytes() for p in ci.rglob("*") if p.is_file()
    )


def test_the_ci_refuses_without_a_key_or_as_an_account_the_policy_does_not_name(tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    founded_with_ci(tmp_path, remote)
    clone = make_clone(tmp_path, "eve", str(remote), "eve")
    no_key = agora(clone, "ci", "--no-site", check=False, env={"AGORA_CI_KEY": ""})
    assert no_key.returncode != 0 and "no key for the CI account" in no_key.stderr
    assert len(no_key.stderr.strip().splitlines()) == 1
    key = tmp_path / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    stranger = agora(clone, "ci", "--no-site", "--key-file", str(key), check=False)
    assert stranger.returncode != 0 and "eve is not a CI account of this project ([ci] accounts: ci)" in stranger.stderr
    assert "refs/agora/log/eve" not in git(remote, "for-each-ref")
    inside = clone / "ci_ed25519"
    shutil.copyfile(key, inside)
    in_tree = agora(clone, "ci", "--no-site", "--key-file", str(inside), "--account", "ci", check=False)
    assert in_tree.returncode != 0 and "inside the work tree" in in_tree.stderr
    bad = agora(clone, "ci", "--no-site", "--account", "ci", check=False, env={"AGORA_CI_KEY": "not a key"})
    assert bad.returncode != 0 and "AGORA_CI_KEY is not an unencrypted OpenSSH ed25519 private key" in bad.stderr

    tools = tmp_path / "no-bwrap"  # a runner without bubblewrap: git, ssh-keygen and this Python, no bwrap
    tools.mkdir()
    for tool in ("git", "ssh-keygen"):
        (tools / tool).symlink_to(shutil.which(tool))
    path = f"{Path(sys.executable).parent}{os.pathsep}{tools}"
    pinned = tmp_path / "secrets" / "ci"
    unsandboxed = agora(
        clone, "ci", "--no-site", "--account", "ci", "--key-file", str(pinned), check=False, env={"PATH": path}
    )
    # no sandbox is this runner's fault, not the claims': exit 4 (docs/ci.md, "Exit status and summary")
    assert unsandboxed.returncode == 4 and len(unsandboxed.stderr.strip().splitlines()) == 1, unsandboxed
    assert "git agora ci verifies only in the sandbox: the sandbox needs bubblewrap" in unsandboxed.stderr
    assert "--no-sandbox" not in unsandboxed.stderr and "agora.sandbox" not in unsandboxed.stderr
    assert "refs/agora/log/ci" not in git(remote, "for-each-ref")


def test_a_record_whose_tips_are_not_here_yet_is_resolved_again_once_they_are(tmp_path):
    """A witness record names a log commit this clone has not fetched: it reaches nothing yet and is not
    cached, so once the commit arrives the next read finds everything it reaches."""
    import json

    import pyarrow as pa

    from git_agora.ops.witness import CACHE, witnessed
    from git_agora.project import Project

    reader, writer = tmp_path / "reader", tmp_path / "writer"
    reader.mkdir()
    git(reader, "init", "-q")
    git(reader, "commit", "-q", "--allow-empty", "-m", "first")
    first = git(reader, "rev-parse", "HEAD").strip()
    git(tmp_path, "clone", "-q", str(reader), str(writer))
    git(writer, "commit", "-q", "--allow-empty", "-m", "second")
    second = git(writer, "rev-parse", "HEAD").strip()
    records = pa.table(
        {
            "sha": ["r" * 40],
            "account": ["ci"],
            "valid": [True],
            "tags": [["witness"]],
            "timestamp": [1_700_000_000],
            "log_seq": [0],
            "metadata": [json.dumps({"witness": {"tips": {"bob": second}}})],
        }
    )
    project = Project.open(reader, account="dora")
    cache = Path(project.repo.agora_path) / CACHE

    early = witnessed(project, records, frozenset({"ci"}))
    assert early is not None and early.shas.to_pylist() == [] and not cache.exists()

    git(reader, "fetch", "-q", str(writer), "HEAD")
    late = witnessed(project, records, frozenset({"ci"}))
    assert sorted(late.shas.to_pylist()) == sorted([first, second]) and cache.exists()
    assert sorted(witnessed(project, records, frozenset({"ci"})).shas.to_pylist()) == sorted([first, second])


SQUAT = ["--meta", 'reproduced={"bpc": 1.5}', "--meta", 'evaluator={"sha256": "' + "ab" * 32 + '"}']
SQUAT += ["--meta", "sandbox=true", "--meta", "duration_s=0.6"]  # a forged rerun record


def squatted(tmp: Path, toml: str | None = None) -> tuple[Path, Path, str, str, str, Path]:
    """alice founds (`toml`: her `[ci]` table, else `ci` with its key pinned) and reruns a baseline;
    mallory claims a fake result (bpc 1.5, never measured) and, before the real CI ever ran, confirms
    it as `ci` with her own key and a forged rerun record. Returns the remote, alice's clone, the
    baseline, the fake, mallory's verdict and mallory's clone."""
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    alice = founded_with_ci(tmp, remote, toml)
    baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()["sha"]
    mallory = joined(tmp, remote, "mallory", baseline)
    set_choice(mallory, "ORDER", "4")
    fake = agora(mallory, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=1.5", "--json").json()["sha"]
    squatter_key = tmp / "mallory_ci_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", squatter_key], check=True)
    git(mallory, "config", "agora.signingkey", str(squatter_key))
    confirm = ["post", "--account", "ci", "--target", fake, "--verdict", "confirmed", "-m", "reran it: 1.5"]
    verdict = agora(mallory, *confirm, *SQUAT, "--json").json()["sha"]
    return remote, alice, baseline, fake, verdict, mallory


def statuses(clone: Path) -> dict:
    out = agora(clone, "analyze", "--json").json()
    return {row["sha"]: row["status"] for row in out["views"]["recent"]["rows"]}, out["summary"]["best"]


def test_a_squatter_of_the_pinned_ci_account_weighs_nothing_and_the_real_ci_counts(tmp_path):
    """`[ci] keys` pins the CI's key. mallory publishes as `ci` first (its identity on the remote then
    announces her key) and "confirms" her fake with a forged rerun record. Her verdict weighs nothing
    for every reader, whatever identity for `ci` they saw; the real CI, holding the pinned key, reruns
    the fake too (it is not "already verified" by the squatter's post), publishes, and exits 0; its
    verdicts count: the fake fails, the baseline is confirmed and leads."""
    remote, alice, baseline, fake, verdict, mallory = squatted(tmp_path)
    bob = joined(tmp_path, remote, "bob", baseline)
    status, best = statuses(bob)
    assert status[fake] == "unverified" and best["status"] == "unverified", (status, best)  # not "confirmed"

    secret, _ = ci_secret(tmp_path)
    ci = make_clone(tmp_path, "ci", str(remote), "ci")
    run = run_ci(ci, secret, "--no-site", "--json", check=False)
    assert run.returncode == 0, run
    verdicts = {c["target"]: c["verdict"] for c in run.json()["checked"]}
    assert verdicts == {baseline: "confirmed", fake: "failed"}, run
    for reader in (bob, mallory, alice):  # mallory's clone pinned her own identity for ci first
        agora(reader, "fetch")
        status, best = statuses(reader)
        assert status[fake] == "failed" and status[baseline] == "confirmed", (reader, status)
        assert best["sha"] == baseline and best["status"] == "confirmed", best
    rejected = agora(bob, "log", "--rejected", "--json").json()
    assert any(row["sha"] == verdict for row in rejected), rejected


def test_on_a_hooked_server_a_squatter_cannot_take_the_pinned_ci_account(tmp_path):
    """With the pre-receive hook installed, mallory's identity for `ci` (another key than the pinned one)
    and her verdict as `ci` are refused by the server itself; the real CI, whose identity and entries
    carry the pinned key, publishes there and exits 0. On a server that already holds a squatter's
    identity for `ci` (pushed before the hook was installed), the real CI's entries still pass: the
    server verifies a pinned account with the policy's key, not with the identity it holds."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    assert "installed" in agora(tmp_path, "hook", "install", str(remote)).stdout
    alice = founded_with_ci(tmp_path, remote)
    baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()["sha"]
    mallory = joined(tmp_path, remote, "mallory", baseline)
    squatter_key = tmp_path / "mallory_ci_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", squatter_key], check=True)
    git(mallory, "config", "agora.signingkey", str(squatter_key))
    confirm = ["post", "--account", "ci", "--target", baseline, "--verdict", "confirmed", "-m", "reran it"]
    refused = agora(mallory, *confirm, *SQUAT, "--json", check=False)
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/agora/identity/ci").strip() == "", refused
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/agora/log/ci").strip() == "", refused

    secret, _ = ci_secret(tmp_path)
    ci = make_clone(tmp_path, "ci", str(remote), "ci")
    run = run_ci(ci, secret, "--no-site", "--json", check=False)
    assert run.returncode == 0, run
    assert {c["target"]: c["verdict"] for c in run.json()["checked"]} == {baseline: "confirmed"}, run
    assert git(remote, "rev-parse", "refs/agora/log/ci").strip() == git(ci, "rev-parse", "refs/agora/log/ci").strip()

    # a server that took a squatter's identity for ci before its hook was installed
    second = tmp_path / "second.git"
    git(tmp_path, "clone", "-q", "--mirror", str(remote), str(second))
    git(second, "update-ref", "-d", "refs/agora/identity/ci")
    git(second, "update-ref", "-d", "refs/agora/log/ci")
    git(mallory, "remote", "add", "second", str(second))
    pushed = subprocess.run(
        ["git", "push", "second", "refs/agora/identity/ci:refs/agora/identity/ci"],
        cwd=mallory,
        capture_output=True,
        text=True,
    )
    assert pushed.returncode == 0, pushed.stderr  # mallory's own identity for ci, kept in her clone
    assert "installed" in agora(tmp_path, "hook", "install", str(second)).stdout
    git(ci, "remote", "add", "second", str(second))
    landed = subprocess.run(
        ["git", "push", "second", "refs/agora/log/ci:refs/agora/log/ci"], cwd=ci, capture_output=True, text=True
    )
    assert landed.returncode == 0, landed.stderr
