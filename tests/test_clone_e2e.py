"""Joining a project: `git agora clone URL [DIR] [--setup SHA] [--account NAME]`, and plain `git clone`."""

from __future__ import annotations

import subprocess

import git_agora
from agora_testing import agora, git, make_clone


def publish_results(project, *values: float) -> list[str]:
    shas = []
    for n, value in enumerate(values):
        (project / "model.py").write_text(f"order = {4 + n}\n")
        out = agora(project, "push", "-m", f"order {4 + n}", "--tag", "result", "--metric", f"bpc={value}", "--json")
        shas.append(out.json()["sha"])
    return shas


def test_clone_checks_out_the_best_pins_the_setup_and_remembers_the_account(tmp_path, remote, project):
    _, best, _ = publish_results(project, 2.0, 1.5, 1.9)
    setup = git(project, "config", "agora.setup").strip()
    out = agora(tmp_path, "clone", str(remote), "joined", "--account", "bob")
    clone = tmp_path / "joined"
    assert f"checked out  {best[:12]} order 5 (the best result, bpc = 1.5; unchecked)" in out.stdout
    assert git(clone, "rev-parse", "HEAD").strip() == best
    assert (clone / "model.py").read_text() == "order = 5\n"
    assert git(clone, "status", "--porcelain") == ""
    assert git(clone, "config", "agora.setup").strip() == setup
    assert git(clone, "config", "agora.account").strip() == "bob"
    assert agora(clone, "whoami", "--json").json()["account"] == "bob"

    (clone / "model.py").write_text("order = 9\n")
    pushed = agora(clone, "push", "-m", "order 9", "--tag", "result", "--metric", "bpc=1.4")
    assert f"  on {best}" in pushed.stdout  # builds on what clone checked out
    agora(project, "fetch")
    assert agora(project, "show", pushed.stdout.split()[1], "--json").json()["account"] == "bob"


def test_clone_of_an_unscored_project_checks_out_the_setup_in_a_directory_named_after_the_url(
    tmp_path, remote, project
):
    setup = git(project, "config", "agora.setup").strip()
    out = agora(tmp_path, "clone", str(remote), "--json").json()
    assert out["checked_out"] == setup and out["best"] is False and out["setup"] == setup
    assert out["directory"] == str((tmp_path / "remote").resolve()) and out["account"] is None
    assert git(tmp_path / "remote", "rev-parse", "HEAD").strip() == setup


def test_clone_with_setup_pins_that_setup_and_refuses_another(tmp_path, remote, project):
    setup = git(project, "config", "agora.setup").strip()
    agora(tmp_path, "clone", str(remote), "ok", "--setup", setup[:10])
    assert git(tmp_path / "ok", "config", "agora.setup").strip() == setup

    wrong = agora(tmp_path, "clone", str(remote), "other", "--setup", "0" * 40, check=False)
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert wrong.stderr.strip().splitlines() == [
        f"git agora: error: {remote} has no setup {'0' * 40} (its setup is {setup[:12]}): "
        "refusing to pin another project"
    ]
    assert not (tmp_path / "other").exists()


def test_a_url_without_an_agora_project_is_one_line_and_leaves_nothing(tmp_path, remote):
    r = agora(tmp_path, "clone", str(remote), "x", check=False)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == f"git agora: error: {remote} has no Agora project (no setup found)\n"
    assert not (tmp_path / "x").exists()

    plain = tmp_path / "plain"  # a Git repository with history, but no Agora project
    git(tmp_path, "init", "-q", str(plain))
    (plain / "f").write_text("x\n")
    git(plain, "add", "f")
    git(plain, "commit", "-qm", "x")
    (tmp_path / "empty").mkdir()
    r = agora(tmp_path, "clone", str(plain), "empty", check=False)
    assert r.returncode == 1 and "has no Agora project (no setup found)" in r.stderr
    assert list((tmp_path / "empty").iterdir()) == []  # the empty directory given stays empty

    r = agora(tmp_path, "clone", str(tmp_path / "missing.git"), check=False)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "missing").exists()


def test_clone_refuses_a_non_empty_directory_and_a_bad_account(tmp_path, remote, project):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine\n")
    r = agora(tmp_path, "clone", str(remote), "busy", check=False)
    assert r.returncode == 1 and "already exists and is not an empty directory" in r.stderr
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["keep.txt"]
    r = agora(tmp_path, "clone", str(remote), "bad", "--account", "no/slash", check=False)
    assert r.returncode == 1 and "account 'no/slash' is not valid" in r.stderr and not (tmp_path / "bad").exists()


def test_clone_in_python(tmp_path, remote, project):
    best = publish_results(project, 3.0)[0]
    done = git_agora.clone(str(remote), tmp_path / "lib", account="carol")
    assert isinstance(done, git_agora.Cloned) and done.checked_out == best and done.best
    assert done.contributions == 2 and done.accounts == 1 and done.metric == "bpc" and done.value == 3.0


def test_after_a_plain_git_clone_git_agora_fetch_is_the_next_step(tmp_path, remote, project):
    best = publish_results(project, 2.5)[0]
    proc = subprocess.run(["git", "clone", str(remote), "plain"], cwd=tmp_path, capture_output=True, text=True)
    assert "You appear to have cloned an empty repository" in proc.stderr  # what docs/tutorial.md explains
    clone = tmp_path / "plain"
    agora(clone, "fetch")
    agora(clone, "checkout", best)
    assert (clone / "model.py").read_text() == "order = 4\n"


def test_a_plain_git_clone_is_told_the_one_command_that_fetches_the_project(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    agora(a, "init", "--metric", "bpc", "--direction", "min")
    subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / "plain")], check=True, capture_output=True)
    for args in (["log"], ["analyze"], ["post", "-m", "x", "--tag", "insight", "--account", "bob"]):
        r = agora(tmp_path / "plain", *args, check=False)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "run `git agora fetch` to fetch it from origin" in r.stderr and str(remote) in r.stderr
    agora(tmp_path / "plain", "fetch")  # the command it named works
    assert "Setup:" in agora(tmp_path / "plain", "log").stdout
