"""`git agora ci --init github|gitea|gitlab` in a fresh founder's clone (detached on Agora commits, a
remote with no branch): the recipe is committed on the default branch, an orphan branch holding only CI
files, pushed only with --push; the work tree, the index and HEAD are unchanged, and every step is
printed, the key pin included. A contribution that adds a forge's CI file is refused at publishing."""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib.resources import files

import pytest
from test_ci_e2e import ci_secret, founded_with_ci

from agora_testing import agora, git, make_clone

PATHS = {
    "github": ".github/workflows/agora.yml",
    "gitea": ".gitea/workflows/agora.yml",
    "gitlab": ".gitlab/agora-ci.yml",
}
# what else each branch holds: GitLab's recipe is included from a .gitlab-ci.yml made for it
ALSO = {"github": [], "gitea": [], "gitlab": [".gitlab-ci.yml"]}


@pytest.mark.slow
def test_ci_init_writes_the_workflow_on_the_default_branch_and_never_in_a_contribution(tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    alice = founded_with_ci(tmp_path, remote)
    head, status = git(alice, "rev-parse", "HEAD"), git(alice, "status", "--porcelain", "--ignored")
    for at, (forge, path) in enumerate(PATHS.items()):
        branch = f"ci-{forge}"
        out = agora(alice, "ci", "--init", forge, "--branch", branch, *(["--push"] if at else [])).stdout
        assert f"committed {path} on {branch}" in out and "orphan branch holding only CI files" in out, out
        assert 'keys = { ci = "<the line of ci_ed25519.pub>" }' in out and "1. " in out
        pinned = " ".join(ci_secret(tmp_path)[1].split()[:2])
        pin = f"The key pin: the policy pins ci's key, `{pinned}`; the forge's secret must hold its private half"
        assert pin in out and "`ssh-keygen -y -f ci_ed25519` (it prints that line)" in out, out
        steps = re.findall(r"^  \d+\. (.*)$", out, re.M)
        assert steps[0 if at else 1].startswith("Make `ci-") and steps[(1 if at else 2)].startswith(pin), steps
        assert steps[-2].startswith("Once the secret is stored, run the job once by hand") and "badge" in steps[-1]
        held = git(alice, "ls-tree", "-r", "--name-only", f"refs/heads/{branch}").split()
        assert held == sorted([path, *ALSO[forge]])
        assert "git agora ci" in git(alice, "show", f"refs/heads/{branch}:{path}")
        assert git(alice, "rev-parse", "HEAD") == head and not (alice / path).exists()
        assert git(alice, "status", "--porcelain", "--ignored") == status
        pushed = f"refs/heads/{branch}" in git(remote, "for-each-ref")
        assert pushed == bool(at) and (f"git push origin refs/heads/{branch}" in out) != pushed
    again = agora(alice, "ci", "--init", "github", "--branch", "ci-github", check=False)
    assert again.returncode == 1 and "exists on ci-github; --force replaces it" in again.stderr
    agora(alice, "ci", "--init", "github", "--branch", "ci-github", "--force")
    assert git(alice, "rev-list", "--count", "refs/heads/ci-github").strip() == "2"

    (alice / ".github" / "workflows").mkdir(parents=True)
    (alice / ".github" / "workflows" / "steal.yml").write_text("on: push\n")
    refs = git(remote, "for-each-ref")
    refused = agora(alice, "push", "--tag", "insight", "-m", "a note", check=False)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused
    assert "the tree changes .github/workflows/steal.yml, a forge's CI file" in refused.stderr
    assert git(remote, "for-each-ref") == refs
    # ... and so is one that changes the file GitLab's .gitlab-ci.yml includes
    shutil.rmtree(alice / ".github")
    (alice / ".gitlab").mkdir()
    (alice / ".gitlab" / "agora-ci.yml").write_text("steal:\n  script: [env]\n")
    refused = agora(alice, "push", "--tag", "insight", "-m", "a note", check=False)
    assert refused.returncode == 1 and "the tree changes .gitlab/agora-ci.yml, a forge's CI file" in refused.stderr
    assert git(remote, "for-each-ref") == refs


LOCK = "numpy==2.4.6 \\\n    --hash=sha256:" + "0" * 64 + "\n"


@pytest.mark.slow
def test_ci_init_writes_the_policys_python_and_a_copy_of_its_lock_and_includes_gitlabs_recipe(tmp_path):
    """A policy under [eval] format 3: the recipe installs its Python and the lock beside it
    (pip --require-hashes); GitLab's .gitlab-ci.yml gets the include appended once, and one that has an
    `include:` of its own is left alone, the step saying what to add."""
    import yaml

    from git_agora.demo.run import AGORA_TOML, TASK_FILES

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    toml = AGORA_TOML.replace("format = 2", "format = 3").replace(
        'files = ["score.py", "corpus.py"]', 'files = ["score.py", "corpus.py", "scorer.lock"]'
    )
    toml = toml.replace("timeout = 60", 'timeout = 60\npython = "3.11.9"\nlock = "scorer.lock"')
    assert 'lock = "scorer.lock"' in toml and "format = 3" in toml
    alice = make_clone(tmp_path, "alice", str(remote), "alice")
    for task_file in TASK_FILES:
        shutil.copyfile(files("git_agora") / "demo" / "task" / task_file, alice / task_file)
    (alice / ".gitignore").write_text("__pycache__/\n")
    (alice / "scorer.lock").write_text(LOCK)
    pin = f'keys = {{ ci-bot = "{ci_secret(tmp_path)[1]}" }}'
    (alice / "agora.toml").write_text(toml + f'\n[ci]\naccounts = ["ci-bot"]\n{pin}\n')
    agora(alice, "init")
    done = agora(alice, "ci", "--init", "github", "--branch", "trunk", "--json").json()
    assert done["files"] == [".github/workflows/agora.yml", ".github/agora-scorer.lock"]
    assert done["python"] == "3.11.9" and done["python_from_policy"] is True
    assert git(alice, "show", "refs/heads/trunk:.github/agora-scorer.lock") == LOCK
    workflow = yaml.safe_load(git(alice, "show", "refs/heads/trunk:.github/workflows/agora.yml"))
    steps = workflow["jobs"]["verify"]["steps"]
    assert [s["with"]["python-version"] for s in steps if "setup-python" in s.get("uses", "")] == ["3.11.9"]
    installs = "\n".join(s.get("run", "") for s in steps)
    assert "--require-hashes --no-deps -r .github/agora-scorer.lock" in installs
    assert '--account "$AGORA_ACCOUNT"' in installs
    (ci_step,) = [s for s in steps if "git agora ci --verify-only" in s.get("run", "")]
    assert ci_step["env"]["AGORA_ACCOUNT"] == "ci-bot"  # the current policy's CI account

    # GitLab: a .gitlab-ci.yml of the founder's gets the include appended, once
    git(alice, "update-ref", "refs/heads/gl", _commit_with(alice, ".gitlab-ci.yml", "lint:\n  script: [true]\n"))
    out = agora(alice, "ci", "--init", "gitlab", "--branch", "gl").stdout
    assert "with .gitlab/agora-scorer.lock, .gitlab-ci.yml" in out, out
    main = yaml.safe_load(git(alice, "show", "refs/heads/gl:.gitlab-ci.yml"))
    assert main["lint"] == {"script": [True]} and main["include"] == [{"local": ".gitlab/agora-ci.yml"}]
    agora(alice, "ci", "--init", "gitlab", "--branch", "gl", "--force")
    assert git(alice, "show", "refs/heads/gl:.gitlab-ci.yml").count("agora-ci.yml") == 1
    # ... and one with an include of its own is left alone
    own = "include:\n  - local: other.yml\n"
    git(alice, "update-ref", "refs/heads/gl2", _commit_with(alice, ".gitlab-ci.yml", own))
    out = agora(alice, "ci", "--init", "gitlab", "--branch", "gl2").stdout
    assert git(alice, "show", "refs/heads/gl2:.gitlab-ci.yml") == own
    assert "1. Include the recipe: add `- local: .gitlab/agora-ci.yml` under the `include:`" in out


def _commit_with(clone, path: str, text: str) -> str:
    """A commit (no parent) holding one file, made with plumbing: the clone's work tree is not touched."""

    def run(*args: str, input: str) -> str:
        return subprocess.run(["git", *args], cwd=clone, input=input, capture_output=True, text=True, check=True).stdout

    blob = run("hash-object", "-w", "--stdin", input=text).strip()
    tree = run("mktree", input=f"100644 blob {blob}\t{path}\n").strip()
    return run("commit-tree", tree, "-m", "the founder's CI", input="").strip()


def test_ci_init_says_how_to_pin_the_key_where_the_policy_names_no_ci(project):
    """A project founded without a CI account: the checklist names the key to make and the amendment
    that pins it, with the concrete commands, and the badge at the GitHub Pages address of the remote."""
    git(project, "remote", "set-url", "origin", "https://github.com/Founder/proj.git")  # never contacted
    out = agora(project, "ci", "--init", "github").stdout
    assert '`ssh-keygen -t ed25519 -N "" -C ci@agora -f ci_ed25519`' in out, out
    assert 'accounts = ["ci"] and keys = { ci = "<the line of ci_ed25519.pub>" } to agora.toml' in out
    assert '`git agora push --tag policy -m "the CI account"`' in out
    assert "`git agora init --ci-account ci --ci-key ci_ed25519.pub`" in out
    badge = "https://img.shields.io/endpoint?url=https://founder.github.io/proj/badge.json"
    assert f"[![agora]({badge})](https://founder.github.io/proj/)" in out, out
