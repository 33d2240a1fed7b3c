"""The split CI drill (issue 48): on a smart-HTTP remote on 127.0.0.1, the verify half (`git agora ci
--verify-only --out DIR`) reruns with no key in its environment or files and pushes nothing; the publish
half (`git agora ci --publish DIR`) holds the key, has no bubblewrap on its PATH (it never evaluates), and
publishes what the bundle says only once the bundle checks out against the policy. Tampered bundles (a
target that is not pending, another evaluator, free text in a record, a verdict its numbers do not give)
are refused whole, with one line, and publish nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from test_ci_e2e import ci_secret, founded_with_ci, joined, set_choice

from agora_testing import agora, git, make_clone
from servers import smart_http


def no_bwrap_path(tmp: Path) -> str:
    tools = tmp / "no-bwrap"
    tools.mkdir(exist_ok=True)
    for tool in ("git", "ssh-keygen", "bash"):  # bash: a job's script runs in it
        if not (tools / tool).exists():
            (tools / tool).symlink_to(shutil.which(tool))
    return f"{Path(sys.executable).parent}{os.pathsep}{tools}"


def tampered(bundle: Path, into: Path, target: str, change) -> Path:
    shutil.copytree(bundle, into)
    path = into / "verdicts" / f"{target}.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return into


@pytest.mark.slow
def test_the_split_ci_drill(tmp_path):
    forge = tmp_path / "forge"
    forge.mkdir()
    remote = forge / "project.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(remote, "config", "http.receivepack", "true")
    with smart_http(forge) as base:
        url = f"{base}/project.git"
        alice = founded_with_ci(tmp_path, remote)
        git(alice, "remote", "set-url", "origin", url)
        agora(alice, "fetch")
        baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json")
        baseline = baseline.json()["sha"]
        mallory = joined(tmp_path, remote, "mallory", baseline)
        git(mallory, "remote", "set-url", "origin", url)
        set_choice(mallory, "ORDER", "4")
        inflated = agora(mallory, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=1.5", "--json")
        inflated = inflated.json()["sha"]
        secret, _ = ci_secret(tmp_path)

        verifier = make_clone(tmp_path, "verify-job", url, "ci")
        keyless = tmp_path / "verify-home"  # where a key would be made or read: it stays empty
        keyless.mkdir()
        home = {"XDG_CONFIG_HOME": str(keyless), "AGORA_CI_KEY": ""}
        held = agora(verifier, "ci", "--verify-only", "--out", "b", check=False, env={"AGORA_CI_KEY": secret})
        assert held.returncode == 1 and "--verify-only holds no key" in held.stderr, held
        refs = git(remote, "for-each-ref")
        bundle = tmp_path / "bundle"
        done = agora(verifier, "ci", "--verify-only", "--out", str(bundle), "--json", env=home, timeout=600).json()
        assert {c["target"]: c["verdict"] for c in done["checked"]} == {baseline: "confirmed", inflated: "failed"}
        assert git(remote, "for-each-ref") == refs  # it pushed nothing
        assert list(keyless.rglob("*")) == [] and not list(verifier.rglob("*_ed25519*"))
        header = json.loads((bundle / "bundle.json").read_text())
        assert header["format"] == 1 and header["account"] == "ci"
        record = json.loads((bundle / "verdicts" / f"{inflated}.json").read_text())
        assert record["verdict"] == "failed" and record["reason"] == "contradicts the claim"
        assert record["record"]["sandbox"] is True and len(record["record"]["evaluator"]["sha256"]) == 64

        publisher = make_clone(tmp_path, "publish-job", url, "ci")
        job = {"AGORA_CI_KEY": secret, "PATH": no_bwrap_path(tmp_path)}
        site = str(tmp_path / "site")

        def refused(folder: Path, expected: str) -> None:
            refs = git(remote, "for-each-ref")
            out = agora(publisher, "ci", "--publish", str(folder), "--site", site, check=False, env=job)
            assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out
            assert "refused the verdict bundle" in out.stderr and expected in out.stderr, out
            assert git(remote, "for-each-ref") == refs  # nothing of it published

        def other_evaluator(data):
            data["record"]["evaluator"]["files"] = {"evaluate.py": "0" * 40}

        def free_text(data):
            data["record"]["note"] = "reran it by hand: trust me"

        def confirmed(data):
            data["verdict"], data["reason"] = "confirmed", "reproduced within the tolerance"
            data["record"]["reason"] = "reproduced within the tolerance"
            data["record"]["reproduced"] = {"bpc": 1.5}

        refused(tampered(bundle, tmp_path / "t1", inflated, other_evaluator), "is not the policy's")
        refused(tampered(bundle, tmp_path / "t2", inflated, free_text), "not the fixed ones (note)")
        refused(tampered(bundle, tmp_path / "t3", inflated, confirmed), "is not what a rerun under its policy")
        stranger = "1" * 40
        strange = tampered(bundle, tmp_path / "t4", inflated, lambda d: d)
        (strange / "verdicts" / f"{inflated}.json").rename(strange / "verdicts" / f"{stranger}.json")
        refused(strange, "it names another target")

        published = agora(publisher, "ci", "--publish", str(bundle), "--site", site, "--json", env=job).json()
        assert published["exit_code"] == 0 and all(c["verification"] for c in published["checked"]), published
        assert len(published["witness_records"]) == 1 and (tmp_path / "site" / "index.html").exists()
        assert 'id="no-map"' not in (tmp_path / "site" / "clusters.html").read_text()  # embedded first: a cluster map
        assert "nothing verified" not in (tmp_path / "site" / "badge.json").read_text()
        refused(bundle, "is not among ci's pending claims")  # the same bundle again

        reader = tmp_path / "reader"
        agora(tmp_path, "clone", url, str(reader), "--account", "dora")
        rows = agora(reader, "analyze", "--json").json()["views"]["recent"]["rows"]
        status = {row["sha"]: row["status"] for row in rows}
        assert status[baseline] == "confirmed" and status[inflated] == "failed", status
        objects = git(remote, "cat-file", "--batch-all-objects", "--batch-check")
        assert objects and "BEGIN OPENSSH" not in (bundle / "bundle.json").read_text()


@pytest.mark.slow
def test_a_sandbox_that_stops_mid_run_keeps_the_verdicts_reached(tmp_path, monkeypatch):
    """The sandbox failing at the second claim (a runner losing user namespaces mid-run) ends the
    verify half with exit 4, but the verdict it reached is in the bundle and the publish half
    publishes it; the claim it did not reach stays pending for the next run."""
    from git_agora.errors import AgoraError, ExitCode
    from git_agora.evaluate.sandbox import SandboxUnavailable
    from git_agora.ops import ci_split, verify
    from git_agora.ops.ci import ci
    from git_agora.project import Project

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    alice = founded_with_ci(tmp_path, remote)
    agora(alice, "fetch")
    first = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()["sha"]
    mallory = joined(tmp_path, remote, "mallory", first)
    set_choice(mallory, "ORDER", "4")
    agora(mallory, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=1.5")
    verifier = make_clone(tmp_path, "verify-job", str(remote), "ci")
    real, calls = verify.verify, []

    def stops_at_the_second(project, sha, **options):
        calls.append(sha)
        if len(calls) > 1:
            raise SandboxUnavailable("the sandbox cannot start: bwrap: No permissions to create new namespace")
        return real(project, sha, **options)

    monkeypatch.setattr(verify, "verify", stops_at_the_second)
    monkeypatch.setenv("AGORA_CI_KEY", "")
    bundle = tmp_path / "bundle"
    with pytest.raises(AgoraError) as stopped:
        ci_split.verify_only(Project.open(verifier, account="ci"), bundle)
    assert stopped.value.exit_code == ExitCode.UNVERIFIED and "1 claim(s) reached before" in str(stopped.value)
    header = json.loads((bundle / "bundle.json").read_text())
    assert header["left"] == [calls[1]], header
    assert [p.stem for p in (bundle / "verdicts").iterdir()] == [calls[0]]

    secret, _ = ci_secret(tmp_path)
    publisher = make_clone(tmp_path, "publish-job", str(remote), "ci")
    monkeypatch.setenv("PATH", no_bwrap_path(tmp_path))
    asked: list[str] = []
    policy = Project.policy
    monkeypatch.setattr(Project, "policy", lambda self, sha: asked.append(sha) or policy(self, sha))
    published = ci(Project.open(publisher, account="ci"), secret=secret, bundle=bundle).to_dict()
    assert [c["target"] for c in published["checked"] if c["verification"]] == [calls[0]], published
    assert published["left"] == [calls[1]], published  # left for the next run (the recipe fails the job: exit 4)
    assert asked.count(calls[0]) == 1  # the target's policy checks the verdict and names its metric: asked once
