"""`CatFile.commits` asks for many commits at once; it must answer exactly as one question at a time."""

from __future__ import annotations

import os
import subprocess

from agora_testing import git
from git_agora.refs.catfile import BATCH, CatFile


def test_many_at_once_equals_one_at_a_time(tmp_path):
    git(tmp_path, "init", "-q", "--bare", ".")
    tree = _empty_tree(tmp_path)
    shas, parent = [], None
    for i in range(BATCH + 300):  # more than one batch
        args = ["commit-tree", tree, "-m", f"commit {i}\n\n" + "x" * (i % 700)]
        parent = _git(tmp_path, *args, *(["-p", parent] if parent else []))
        shas.append(parent)
    asked = [*shas, "0" * 40, tree, "nonsense", shas[0]]  # missing, not a commit, not a sha, twice
    with CatFile(tmp_path) as together:
        at_once = together.commits(asked)
    with CatFile(tmp_path) as alone:
        one_by_one = [alone.commit(sha) for sha in asked]
    assert at_once == one_by_one
    assert at_once[-4:-1] == [None, None, None] and at_once[-1] == at_once[0] is not None


def _empty_tree(repo) -> str:
    return _git(repo, "mktree", input_text="")


def _git(repo, *args: str, input_text: str | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@a", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@a"}
    proc = subprocess.run(
        ["git", *args],
        cwd=repo,
        input=input_text,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return proc.stdout.strip()
