"""docs/ci.md "The first day" runs as written, against a smart-HTTP remote on 127.0.0.1 standing in for an
empty forge repository: the founder's blocks in one shell (the key, `init --template` with the CI account
and key, `ci --init github --push`, the local key deleted once "the forge" holds it), then the two jobs
of a CI run as a runner runs them, each block of "What the two jobs run" in a fresh clone of the default
branch: the verify job with no key in its environment or files, the publish job with the key and no
contributed code (no bubblewrap on its PATH either). The `sh` blocks call the forge's web API and are
not run.

Checked: only CI files on the default branch (the workflow among them) and none in a contribution, the founder's clone
unchanged by `ci --init`, the verdicts on the remote as a fresh reader sees them (the honest result
confirmed, the false claim failed), the site's badge.json and cluster map, and then the drill of issue
48: after the founder moves the policy to a new scorer lock, the same runner's verify job refuses
loudly (exit 4, one line) and publishes nothing, where under the matching lock it verified.
The split drill's tampered bundles are tests/test_ci_split.py's; this test is the founder's path through it
and the scorer drill over smart HTTP (tests/test_scorer_env.py has it on a file remote, one process too).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_ci_split import no_bwrap_path
from test_templates_e2e import LEAST_SQUARES, edit
from test_tutorial import bash_blocks, run_script, section

from agora_testing import agora, git
from git_agora.ops.ci_recipes import BUNDLE_DIR, PUBLISH_ENVIRONMENT, SITE_DIR
from servers import smart_http

CI_DOC = Path(__file__).parents[1] / "docs" / "ci.md"
WORKFLOW = ".github/workflows/agora.yml"


def first_day() -> tuple[list[str], list[str]]:
    """The founder's bash blocks of "The first day", and the two jobs' (verify, then publish)."""
    text = section(CI_DOC.read_text(), "The first day: from an empty forge repository to a scheduled, split CI")
    founder, jobs = text.split("**What the two jobs run**")
    return bash_blocks(founder), bash_blocks(jobs)


def test_the_first_day_has_the_steps_it_promises():
    founder, jobs = first_day()
    assert [b.split()[0] for b in founder] == ["ssh-keygen", "git", "git", "rm"], founder
    assert "init --template two-phase --ci-account ci --ci-key" in founder[1] and "--init github --push" in founder[2]
    assert len(jobs) == 2 and "--verify-only --out bundle " in jobs[0] and "--publish bundle " in jobs[1]
    assert BUNDLE_DIR == "bundle" and f"--site {SITE_DIR}" in jobs[1]  # the folders the generated jobs use
    text = section(CI_DOC.read_text(), "The first day: from an empty forge repository to a scheduled, split CI")
    named = re.search(r"Settings > Environments > New environment `([^`]+)`", text)
    assert named and named[1] == PUBLISH_ENVIRONMENT, named  # the environment the generated workflow names


def job(runner: Path, url: str, block: str, env: dict[str, str], bundle: Path | None = None):
    """One job of a CI run: a fresh clone of the default branch (what the forge's checkout makes), the
    artifact put in place, and the block run there."""
    git(runner.parent, "clone", "-q", url, str(runner))
    git(runner, "config", "user.name", "runner")
    if bundle is not None:  # the verify job's artifact, downloaded
        shutil.copytree(bundle, runner / "bundle")
    return run_script(block, runner, env)


@pytest.mark.slow
def test_the_first_day_runs_against_a_local_forge(tmp_path):
    founder_blocks, (verify_block, publish_block) = first_day()
    forge = tmp_path / "forge"
    forge.mkdir()
    remote = forge / "project.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))  # the empty repository the forge made
    git(remote, "config", "http.receivepack", "true")
    home = tmp_path / "founder"
    home.mkdir()
    with smart_http(forge) as base:
        url = f"{base}/project.git"
        env = {"PROJECT_URL": url}
        *steps, delete = founder_blocks
        done = run_script("\n".join(steps), home, env)
        assert done.returncode == 0, done.stdout + done.stderr
        printed = done.stdout
        assert f"committed {WORKFLOW} on main" in printed and "pushed main to origin" in printed, printed
        assert "The key pin: the policy pins ci's key" in printed and "ssh-keygen -y -f ci_ed25519" in printed
        assert "https://img.shields.io/endpoint?url=" in printed and f"environment {PUBLISH_ENVIRONMENT}" in printed
        secret = (home / "ci_ed25519").read_text()  # what the founder stores as the forge's secret
        gone = run_script(delete, home / "project", env)
        assert gone.returncode == 0 and not (home / "ci_ed25519").exists(), gone

        founder = home / "project"
        on_main = git(remote, "ls-tree", "-r", "--name-only", "refs/heads/main").split()
        assert WORKFLOW in on_main and all(name.startswith(".github/") for name in on_main), on_main
        assert git(founder, "status", "--porcelain") == "" and not (founder / ".github").exists()
        setup = agora(founder, "whoami", "--json").json()["setup"]
        assert git(founder, "rev-parse", "HEAD").strip() == setup  # still on the setup, detached

        agora(tmp_path, "clone", url, str(tmp_path / "bob"), "--account", "bob")
        bob = tmp_path / "bob"
        edit(bob / "solve.py", r"^def coefficients\(\):\n    return .*$", LEAST_SQUARES)
        pushed = agora(bob, "push", "--check", "-m", "least squares on a grid", "--tag", "result", "--json")
        honest = pushed.json()["sha"]  # not the log's newest: the founder's last may share its second
        agora(tmp_path, "clone", url, str(tmp_path / "mallory"), "--account", "mallory")
        edit(tmp_path / "mallory" / "solve.py", r"^import json$", "import json  # the exact polynomial")
        claimed = ["push", "-m", "exact, trust me", "--tag", "result", "--metric", "max_error=1e-12", "--json"]
        false = agora(tmp_path / "mallory", *claimed).json()["sha"]
        agora(founder, "fetch")
        trees = {sha: git(founder, "rev-parse", f"{sha}^{{tree}}").strip() for sha in (setup, honest, false)}

        # the verify job: no secret, no key anywhere it can read; it pushes nothing
        keyless = tmp_path / "verify-home"
        keyless.mkdir()
        quiet = {"HOME": str(keyless), "XDG_CONFIG_HOME": str(keyless)}
        assert "AGORA_CI_KEY" not in os.environ
        refs = git(remote, "for-each-ref")
        verify = tmp_path / "verify-job"
        done = job(verify, url, verify_block, quiet)
        assert done.returncode == 0, done.stdout + done.stderr
        assert git(remote, "for-each-ref") == refs
        assert "(in the bundle, not published)" in done.stdout and " -> " not in done.stdout, done.stdout
        assert not [p for p in keyless.rglob("*") if p.is_file() and "ssh" in str(p)]
        held = [p for p in verify.rglob("*") if p.is_file() and "BEGIN OPENSSH" in p.read_text(errors="replace")]
        assert held == [] and "BEGIN OPENSSH" not in json.dumps(dict(os.environ))
        bundle = verify / "bundle"
        written = {p.stem: json.loads(p.read_text())["verdict"] for p in (bundle / "verdicts").glob("*.json")}
        assert written == {honest: "confirmed", false: "failed"}, written

        # the publish job: the key, a checkout of main (CI files only), no sandbox tool on its PATH
        publish = tmp_path / "publish-job"
        done = job(publish, url, publish_block, {"AGORA_CI_KEY": secret, "PATH": no_bwrap_path(tmp_path)}, bundle)
        assert done.returncode == 0, done.stdout + done.stderr
        assert git(publish, "ls-files").split() == on_main  # the CI files: no contributed code checked out
        assert "summary: 1 verified, 1 failed, 0 not rerun" in done.stdout and "exit 0" in done.stdout
        site = publish / "agora-site"
        shown = json.loads((site / "badge.json").read_text())
        assert shown["schemaVersion"] == 1 and shown["label"] == "agora" and shown["color"] == "orange", shown
        assert re.fullmatch(r"best [0-9.e+-]+ confirmed, 1 failed", shown["message"]), shown
        assert 'id="no-map"' not in (site / "clusters.html").read_text()  # the CI embedded: a cluster map

        reader = tmp_path / "reader"
        agora(tmp_path, "clone", url, str(reader), "--account", "dora")
        rows = agora(reader, "analyze", "--json").json()["views"]["recent"]["rows"]
        status = {row["sha"]: row["status"] for row in rows}
        assert status[honest] == "confirmed" and status[false] == "failed", status
        assert {sha: git(reader, "rev-parse", f"{sha}^{{tree}}").strip() for sha in trees} == trees
        for sha in trees:
            assert not any(n.startswith(".github/") for n in git(reader, "ls-tree", "-r", "--name-only", sha).split())
        assert b"BEGIN OPENSSH" not in git_objects(remote)

        # the drill: the founder moves the project to a new scorer; this runner still has the old one
        lock = founder / "scorer.lock"
        lock.write_text(re.sub(r"numpy==[0-9.]+", "numpy==2.99.0", lock.read_text()))
        agora(founder, "push", "--tag", "policy", "-m", "a new scorer: numpy 2.99.0")
        refs = git(remote, "for-each-ref")
        again = tmp_path / "verify-job-2"
        refused = job(again, url, verify_block, quiet)
        assert refused.returncode == 4 and len(refused.stderr.strip().splitlines()) == 1, refused
        said = refused.stderr
        assert "the scorer environment here is not the policy's: numpy" in said and "has 2.99.0" in said, said
        assert "--require-hashes -r scorer.lock" in said and "nothing was rerun" in said, said
        assert not (again / "bundle").exists() and git(remote, "for-each-ref") == refs


def git_objects(bare: Path) -> bytes:
    listed = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=bare, capture_output=True)
    return listed.stdout
