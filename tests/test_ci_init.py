"""`git agora ci --init github|gitea|gitlab` in a fresh founder's clone (detached on Agora commits, a
remote with no branch): the recipe is committed on the default branch, an orphan branch holding only CI
files, pushed only with --push; the work tree, the index and HEAD are unchanged, and every step is
printed, the key pin included. A contribution that adds a forge's CI file is refused at publishing."""

from __future__ import annotations

import pytest
from test_ci_e2e import founded_with_ci

from agora_testing import agora, git

PATHS = {"github": ".github/workflows/agora.yml", "gitea": ".gitea/workflows/agora.yml", "gitlab": ".gitlab-ci.yml"}


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
        assert git(alice, "ls-tree", "-r", "--name-only", f"refs/heads/{branch}").split() == [path]
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
