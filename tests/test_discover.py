"""Finding an update's new commits from the moved refs alone agrees with `git log NEW --not OLD`, and
looks at no more than what is new."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from git_agora.index import discover, reader
from git_agora.refs.catfile import CatFile
from site_projects import load_tracegen

tracegen = load_tracegen()


def tips(repo: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "for-each-ref", "--format=%(refname) %(objectname)", "refs/agora/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split() for line in out.splitlines())


def walked(repo: Path, new: dict[str, str], old: dict[str, str]) -> set[str]:
    """What `git log --date-order` finds from the new tips down to the old ones, log commits left out."""
    if not new:
        return set()
    revisions = [*sorted(set(new.values())), *(f"^{sha}" for sha in sorted(set(old.values())))]
    return {raw.sha for raw in reader._records(["log", "--date-order"], revisions, repo)}


def indexed(repo: Path) -> set[str]:
    return walked(repo, tips(repo), {})


def known_in(shas: set[str]):
    return lambda keys: {sha for _, sha in keys if sha in shas}


def git_log_answer(repo: Path, old: dict[str, str], new: dict[str, str]) -> set[str]:
    return walked(repo, new, old)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("discover") / "p.git"
    tracegen.generate(path, 2000, 12, seed=5)
    return path


@pytest.mark.parametrize(
    ("account", "n", "mode"),
    [("ada", 1, "recent"), (None, 5, "recent"), ("newcomer", 1, "uniform"), ("late", 3, "uniform")],
)
def test_new_commits_are_what_git_log_finds_and_cost_what_is_new(project, account, n, mode):
    old, before = tips(project), indexed(project)
    tracegen.append(project, account, n=n, parent_mode=mode)
    new = tips(project)
    found = discover.new_commits(CatFile(project), old, new, known_in(before), limit=8 * n + 8)
    read = {raw.sha for raw in reader.read(project, found)}
    assert read == git_log_answer(project, old, new)
    assert len(read) == n


def test_a_hostile_log_commit_with_an_old_log_commit_as_parent_still_agrees(project, tmp_path):
    old, before = tips(project), indexed(project)
    tip = old["refs/agora/log/ada"]
    deep = subprocess.run(
        ["git", "-C", str(project), "rev-parse", f"{tip}~30"], capture_output=True, text=True, check=True
    ).stdout.strip()
    entry = next(iter(sorted(before)))
    message = f"agora log: ada\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {entry}\n"
    empty = subprocess.run(
        ["git", "-C", str(project), "hash-object", "-t", "tree", "-w", "--stdin"],
        input="",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    odd = subprocess.run(
        ["git", "-C", str(project), "commit-tree", empty, "-p", tip, "-p", entry, "-p", deep, "-m", message],
        capture_output=True,
        text=True,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "ada",
            "GIT_AUTHOR_EMAIL": "a@a",
            "GIT_COMMITTER_NAME": "ada",
            "GIT_COMMITTER_EMAIL": "a@a",
        },
    ).stdout.strip()
    subprocess.run(["git", "-C", str(project), "update-ref", "refs/agora/log/ada", odd], check=True)
    new = tips(project)
    found = discover.new_commits(CatFile(project), old, new, known_in(before))
    assert {raw.sha for raw in reader.read(project, found)} == git_log_answer(project, old, new) == set()


def test_too_many_new_commits_says_so(project):
    with pytest.raises(discover.TooMany):
        discover.new_commits(CatFile(project), {}, tips(project), known_in(set()), limit=100)
