"""The CI configurations `git agora ci --init github|gitea|gitlab` writes (docs/ci.md, "The recipes").

Each recipe runs `git agora ci` on a schedule and by hand, as the CI account the policy names: it installs
git-agora and bubblewrap, makes the sandbox work on the runner (never `--no-sandbox`), keeps the index
between runs, hands the CI's key to that one step through its environment (a secret, never a file in the
workspace) and publishes the site (GitHub Pages; an artifact on Gitea, which has no Pages; GitLab Pages).
The GitHub and Gitea workflows pass actionlint and zizmor's pedantic audits without one suppression
(tests/test_ci_recipes.py runs both): every action pinned by a full commit SHA with its release in a
comment, no permission above none at the top, `contents: write` on the one job that pushes, no
`${{ }}` in a `run:` line, no credential persisted by the checkout.

Pure: strings in, a file out (`write_recipe`); no click, no Git.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..contribution import valid_account
from ..errors import AgoraError

FORGES = ("github", "gitea", "gitlab")
PATHS = {
    "github": ".github/workflows/agora.yml",
    "gitea": ".gitea/workflows/agora.yml",
    "gitlab": ".gitlab-ci.yml",
}
GITHUB_ENVIRONMENT = "agora-ci"  # the GitHub environment that holds the secret, usable from the default branch only
SECRET = "AGORA_CI_KEY"  # the CI account's private key text (an OpenSSH ed25519 key), a secret of the forge
GITLAB_SECRET = "AGORA_CI_KEY_BASE64"  # GitLab masks only values in the base64 alphabet: the key, encoded
GITLAB_PUSH_TOKEN = "AGORA_PUSH_TOKEN"  # GitLab's job token cannot push: a project access token can
SITE_DIR = "agora-site"
MAX_MINUTES = 45  # `git agora ci --max-minutes`: the verification budget of one run ...
JOB_MINUTES = 60  # ... inside the job's own limit, which leaves time to publish before the runner stops it
PYTHON = "3.12"
CRON = "17 * * * *"  # hourly, off the full hour that every other scheduled job on the forge asks for


@dataclass(frozen=True)
class Action:
    """An action pinned by the full commit SHA of a release (the tag, checked against the action's
    repository; tests/test_ci_recipes.py checks the form)."""

    name: str
    sha: str
    version: str

    @property
    def uses(self) -> str:
        return f"{self.name}@{self.sha} # {self.version}"


# GitHub-hosted runners run Node 24: the releases that declare it (`runs.using: node24`).
GITHUB_ACTIONS = {
    "checkout": Action("actions/checkout", "3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "setup-python": Action("actions/setup-python", "5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "cache": Action("actions/cache", "27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
    "upload-pages-artifact": Action(
        "actions/upload-pages-artifact", "fc324d3547104276b827a68afc52ff2a11cc49c9", "v5.0.0"
    ),
    "deploy-pages": Action("actions/deploy-pages", "cd2ce8fcbc39b97be8ca5fce6e763baed58fa128", "v5.0.0"),
}
# Gitea's runner (act) runs whatever `node` its job image has: the Node 20 releases run on every act_runner
# that runs actions at all. upload-artifact v4 and later refuse to run on Gitea (they take it for GitHub
# Enterprise Server, which they do not support); v3 uploads through the protocol Gitea serves.
GITEA_ACTIONS = {
    "checkout": Action("actions/checkout", "34e114876b0b11c390a56381ad16ebd13914f8d5", "v4.3.1"),
    "setup-python": Action("actions/setup-python", "a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"),
    "cache": Action("actions/cache", "0057852bfaa89a56745cba8c7296529d2fc39830", "v4.3.0"),
    "upload-artifact": Action("actions/upload-artifact", "c24449f33cd45d4826c6702db7e49f7cdb9b551d", "v3.2.1-node20"),
}

# a name git takes for a branch, made of characters that need no quoting in YAML, an expression or the shell
_BRANCH = re.compile(r"^(?![-/.])(?!.*\.\.)(?!.*//)(?!.*/\.)[A-Za-z0-9._/-]{1,200}(?<![./])$")


@dataclass(frozen=True)
class Recipe:
    forge: str  # github | gitea | gitlab
    path: str  # where it goes in the repository, relative to its root
    text: str  # the file
    notes: tuple[str, ...]  # what the founder does by hand: the secret, Pages, the schedule, the runner, ...


def package_version() -> str:
    """This git-agora's version, for the default pip requirement (0.1.0 when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("git-agora")
    except PackageNotFoundError:
        return "0.1.0"


def default_install() -> str:
    return f"git-agora=={package_version()}"


def recipe(forge: str, branch: str = "main", install: str | None = None, account: str = "ci") -> Recipe:
    """The CI configuration for `forge`. `branch`: the repository's default branch (schedules run from it,
    and the jobs run only there); `install`: the pip requirement that installs git-agora (default: this
    version); `account`: the CI account (`[ci] accounts` in the policy)."""
    if forge not in FORGES:
        raise AgoraError(f"no CI recipe for {forge!r}: choose one of {', '.join(FORGES)}")
    if not _BRANCH.match(branch) or branch.endswith(".lock"):
        raise AgoraError(f"{branch!r} is not a branch name")
    if not valid_account(account):
        raise AgoraError(f"{account!r} is not an account name")
    install = default_install() if install is None else install
    if not install.strip() or any(c in install for c in "\n\r\0$"):
        raise AgoraError(f"{install!r} is not a pip requirement a recipe can hold")
    values = {
        "BRANCH": branch,
        "INSTALL": shlex.quote(install),
        "ACCOUNT": account,
        "SITE": SITE_DIR,
        "MAX_MINUTES": str(MAX_MINUTES),
        "JOB_MINUTES": str(JOB_MINUTES),
        "PYTHON": PYTHON,
        "CRON": CRON,
        "SECRET": SECRET,
        "ENVIRONMENT": GITHUB_ENVIRONMENT,
        "GITLAB_SECRET": GITLAB_SECRET,
        "GITLAB_PUSH_TOKEN": GITLAB_PUSH_TOKEN,
    }
    if forge == "github":
        text, notes = _GITHUB, _github_notes(branch, account)
        values |= {f"USES_{k.upper().replace('-', '_')}": a.uses for k, a in GITHUB_ACTIONS.items()}
    elif forge == "gitea":
        text, notes = _GITEA, _gitea_notes(branch, account)
        values |= {f"USES_{k.upper().replace('-', '_')}": a.uses for k, a in GITEA_ACTIONS.items()}
    else:
        text, notes = _GITLAB, _gitlab_notes(branch, account)
    for name, fragment in _SHARED.items():
        text = text.replace(f"@@{name}@@\n", fragment)
    for name, value in values.items():
        text = text.replace(f"@@{name}@@", value)
    left = re.findall(r"@@[A-Z_]+@@", text)
    assert not left, left
    return Recipe(forge, PATHS[forge], text, notes)


def write_recipe(
    root: Path,
    forge: str,
    branch: str = "main",
    force: bool = False,
    *,
    install: str | None = None,
    account: str = "ci",
) -> Recipe:
    """Write `recipe(...)` at its path under `root` (a work tree); an existing file is replaced only with
    `force` (the file is replaced whole, never written through a link)."""
    made = recipe(forge, branch, install=install, account=account)
    target = Path(root) / made.path
    if (target.exists() or target.is_symlink()) and not force:
        raise AgoraError(f"{made.path} exists; --force replaces it")
    if target.is_dir() and not target.is_symlink():
        raise AgoraError(f"{made.path} is a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(prefix=".agora-ci-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(made.text)
        os.chmod(scratch, 0o644)
        os.replace(scratch, target)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
    return made


def _common_notes(branch: str, account: str) -> tuple[str, ...]:
    return (
        f'The policy must name the CI account with its key: `[ci] accounts = ["{account}"]` and `keys = {{ '
        f'{account} = "<the line of ci_ed25519.pub>" }}` in agora.toml (`git agora init --ci-account {account} '
        "--ci-key ci_ed25519.pub`, or a policy amendment by the setup's account): readers count no unpinned CI "
        "account; in a closed project also list it in `[identity] members` with its public key.",
        f'Make its key once: `ssh-keygen -t ed25519 -N "" -C {account}@agora -f ci_ed25519`. The private key '
        "goes into the forge's secret (below), never into the repository; delete the local copy once stored.",
        f"Commit the file on the default branch, `{branch}` (`--branch` names another): the schedule runs "
        "from it, and the jobs run only there.",
        "Run the job once by hand right after naming the account: its first run publishes the account's "
        "identity (its public key), and readers trust the first identity they see for an account.",
    )


def _github_notes(branch: str, account: str) -> tuple[str, ...]:
    return (
        *_common_notes(branch, account),
        f"Make the environment {GITHUB_ENVIRONMENT}: Settings > Environments > New environment; under "
        f"Deployment branches and tags choose Selected branches and add `{branch}`. Add the secret {SECRET} "
        "there (Environment secrets > Add environment secret), the whole text of ci_ed25519 (the private "
        "key): only this workflow's job on that branch can read it.",
        "Publish the site: Settings > Pages > Build and deployment > Source: GitHub Actions.",
        "GitHub Actions starts no workflow for pushes to custom refs such as refs/agora/*: this one runs "
        "hourly and by hand (Actions > agora ci > Run workflow).",
        "Scheduled workflows run only from the default branch, and GitHub disables them in a public "
        "repository after 60 days without activity: re-enable it under Actions when that happens.",
        "The sandbox: GitHub's Ubuntu 24.04 runners restrict unprivileged user namespaces through AppArmor; "
        "the workflow relaxes that on its throw-away VM so that bubblewrap works. A self-hosted runner must "
        "be a VM (or a privileged container) where bubblewrap can make user namespaces.",
    )


def _gitea_notes(branch: str, account: str) -> tuple[str, ...]:
    return (
        *_common_notes(branch, account),
        f"Add the secret {SECRET}: the repository's Settings > Actions > Secrets, the whole text of "
        "ci_ed25519 (the private key). Gitea has no environments to scope a secret to one branch: any "
        "workflow that someone with write access adds to the repository can read it, so grant write access "
        "only to people you would trust with the CI account's key.",
        "The runner must run the sandbox: act_runner in host mode on a VM, or a job container that is "
        "privileged (`container: privileged: true` in the runner's config.yaml). In an ordinary Docker "
        "container bubblewrap cannot make user namespaces and `git agora ci` refuses to verify.",
        "Gitea has no Pages: the site is an artifact of each run (agora-site); serve it with any web "
        "server, or publish it with docs/site.md's script.",
        "Gitea starts no workflow for pushes to refs/agora/*: this one runs hourly and by hand (Actions > "
        "agora ci > Run workflow). Gitea reads its `permissions:` keys from 1.26 on; before that the job "
        "token's rights come from the repository's settings and must allow pushing.",
    )


def _gitlab_notes(branch: str, account: str) -> tuple[str, ...]:
    return (
        *_common_notes(branch, account),
        f"Add two CI/CD variables (Settings > CI/CD > Variables), both masked and protected: {GITLAB_SECRET}, "
        "the key as one line (`base64 -w0 ci_ed25519`: GitLab masks only such values), and "
        f"{GITLAB_PUSH_TOKEN}, a project access token with the Developer role and the write_repository "
        "scope (Settings > Access tokens): the job token cannot push refs/agora/*.",
        f"Set the schedule in GitLab's UI: Build > Pipeline schedules > New schedule, e.g. `{CRON}`, on "
        f"`{branch}`. Pushes to refs/agora/* start no pipeline; Build > Pipelines > Run pipeline runs it by hand.",
        "The runner must run the sandbox: a shell runner on a VM, or the docker executor with "
        "`privileged = true` in [runners.docker]. In an unprivileged container bubblewrap cannot make user "
        "namespaces and `git agora ci` refuses to verify.",
        "The `pages` job publishes the site on GitLab Pages (Deploy > Pages shows its address).",
    )


# What the GitHub and Gitea workflows share (Gitea Actions reads GitHub's syntax), put in place before
# the values (`recipe`).
_SHARED = {
    "TRIGGERS": """\
on:
  schedule:
    - cron: "@@CRON@@"  # hourly
  workflow_dispatch:

""",
    "CONCURRENCY": """\
concurrency:
  group: agora-ci
  cancel-in-progress: false  # a run waits for the one before it: never cut short in the middle of a push

""",
    "CI_JOB_START": """\
    timeout-minutes: @@JOB_MINUTES@@
    permissions:
      # Write access to the repository, in this job only: `git agora ci` pushes the CI account's log
      # (its verdicts and its witness record) back to refs/agora/* here. Nothing else is granted.
      contents: write  # push refs/agora/log/<account> and refs/agora/identity/<account>
    steps:
      - name: Check out
        uses: @@USES_CHECKOUT@@
        with:
          # The token is not kept in .git/config: only the step that pushes gets it, through its environment.
          persist-credentials: false
          fetch-depth: 0  # a full clone: git turns its commit-graph off in a shallow one

      - name: Set up Python
        uses: @@USES_SETUP_PYTHON@@
        with:
          python-version: "@@PYTHON@@"

""",
    "CI_RUN_STEPS": """\
      - name: Keep the index between runs
        uses: @@USES_CACHE@@
        with:
          path: .git/agora/index
          key: agora-index-${{ github.run_id }}
          restore-keys: agora-index-

      # The key and the token reach this one step through its environment: never printed, never written
      # to a file (git agora ci holds the key in memory and passes it to nothing it starts).
      - name: git agora ci
        env:
          @@SECRET@@: ${{ secrets.@@SECRET@@ }}
          AGORA_ACCOUNT: "@@ACCOUNT@@"
          PUSH_TOKEN: ${{ github.token }}
        run: |
          # git reads these variables as configuration: the token stays out of .git/config and off
          # every command line.
          basic=$(printf 'x-access-token:%s' "$PUSH_TOKEN" | base64 -w0)
          export GIT_CONFIG_COUNT=1
          export GIT_CONFIG_KEY_0="http.$GITHUB_SERVER_URL/.extraheader"
          export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $basic"
          unset PUSH_TOKEN basic
          git agora ci --account "$AGORA_ACCOUNT" --max-minutes @@MAX_MINUTES@@ --site @@SITE@@

""",
}

_GITHUB = """\
# git agora ci: the project's CI account verifies new results in the sandbox, publishes its verdicts and
# one witness record of the account logs it saw, and builds the site (docs/ci.md). Written by
# `git agora ci --init github`.
#
# When it runs: GitHub Actions starts no workflow for pushes to custom refs such as refs/agora/*, where
# contributions arrive, so this runs on a schedule and by hand. Scheduled workflows run only from the
# default branch (@@BRANCH@@), and GitHub disables them after 60 days without activity in a public
# repository: re-enable the workflow under Actions when that happens.
#
# What it needs: the environment @@ENVIRONMENT@@ holding the secret @@SECRET@@ (the CI account's private
# key), deployable from @@BRANCH@@ only, and Pages with the source "GitHub Actions"; the policy names the
# account in `[ci] accounts`.
name: agora ci

@@TRIGGERS@@
# Nothing at the top: each job asks for what it needs.
permissions: {}

@@CONCURRENCY@@
jobs:
  ci:
    name: verify, witness, build the site
    if: github.ref == 'refs/heads/@@BRANCH@@'
    runs-on: ubuntu-24.04
    # The key is a secret of this environment alone, which only @@BRANCH@@ may use: a workflow on any other
    # branch, or another job, never sees it.
    environment: @@ENVIRONMENT@@
@@CI_JOB_START@@
      - name: Install git-agora and bubblewrap
        run: |
          python -m pip install --disable-pip-version-check @@INSTALL@@
          sudo apt-get update -q
          sudo apt-get install -y -q --no-install-recommends bubblewrap

      # Every evaluation of contributed code runs in bubblewrap's sandbox, which needs an unprivileged user
      # namespace. Ubuntu 24.04 restricts those through AppArmor; this relaxes that on this throw-away VM.
      # Without it `git agora ci` refuses to verify: it never runs contributed code outside the sandbox.
      - name: Let bubblewrap make user namespaces
        run: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0

@@CI_RUN_STEPS@@
      - name: Upload the site
        uses: @@USES_UPLOAD_PAGES_ARTIFACT@@
        with:
          path: @@SITE@@

  pages:
    name: publish the site on GitHub Pages
    needs: ci
    runs-on: ubuntu-24.04
    timeout-minutes: 10
    permissions:
      pages: write  # deploy the uploaded site to GitHub Pages
      id-token: write  # deploy-pages proves where the deployment comes from with an OIDC token
    environment:
      name: github-pages
      url: ${{ steps.deployment.outputs.page_url }}
    steps:
      - name: Deploy
        id: deployment
        uses: @@USES_DEPLOY_PAGES@@
"""

_GITEA = """\
# git agora ci: the project's CI account verifies new results in the sandbox, publishes its verdicts and
# one witness record of the account logs it saw, and builds the site (docs/ci.md). Written by
# `git agora ci --init gitea`. Gitea Actions reads GitHub's workflow syntax.
#
# When it runs: no workflow starts for pushes to refs/agora/*, where contributions arrive, so this runs
# on a schedule (from the default branch, @@BRANCH@@) and by hand.
#
# The runner: every evaluation of contributed code runs in bubblewrap's sandbox, which needs user
# namespaces. An ordinary Docker job container has none: use act_runner in host mode on a VM, or a
# privileged job container (`container: privileged: true` in the runner's config.yaml). `git agora ci`
# refuses to verify without the sandbox.
#
# What it needs: the secret @@SECRET@@ (the CI account's private key); the policy names the account in
# `[ci] accounts`. Gitea has no Pages: the site is an artifact of each run.
name: agora ci

@@TRIGGERS@@
# Nothing at the top: the job asks for what it needs (Gitea 1.26 and later read these keys).
permissions: {}

@@CONCURRENCY@@
jobs:
  ci:
    name: verify, witness, build the site
    if: github.ref == 'refs/heads/@@BRANCH@@'
    runs-on: ubuntu-latest
@@CI_JOB_START@@
      - name: Install git-agora and bubblewrap
        run: |
          sudo=sudo
          if [ "$(id -u)" = 0 ]; then sudo=; fi  # a job container runs as root, often without sudo
          python -m pip install --disable-pip-version-check @@INSTALL@@
          $sudo apt-get update -q
          $sudo apt-get install -y -q --no-install-recommends bubblewrap util-linux

      # An unprivileged user needs an unprivileged user namespace for the sandbox. Ubuntu 24.04 restricts
      # those through AppArmor; a runner VM of its own relaxes that here. As root (a privileged
      # container) bubblewrap needs no such namespace and drops to an unprivileged uid inside.
      - name: Let bubblewrap make user namespaces
        run: |
          restrict=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
          if [ "$(id -u)" != 0 ] && [ "$(cat "$restrict" 2>/dev/null)" = 1 ]; then
            sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0
          fi

@@CI_RUN_STEPS@@
      # Gitea has no Pages: the site is kept as this run's artifact (v3 of the action: later ones refuse
      # to run on Gitea). Serve it with any web server, or see docs/site.md.
      - name: Keep the site
        uses: @@USES_UPLOAD_ARTIFACT@@
        with:
          name: @@SITE@@
          path: @@SITE@@
          retention-days: 7
"""

_GITLAB = """\
# git agora ci: the project's CI account verifies new results in the sandbox, publishes its verdicts and
# one witness record of the account logs it saw, and builds the site (docs/ci.md). Written by
# `git agora ci --init gitlab`.
#
# When it runs: pushes to refs/agora/*, where contributions arrive, start no pipeline. Set a schedule in
# GitLab's UI (Build > Pipeline schedules > New schedule: "@@CRON@@", hourly, on @@BRANCH@@); Build >
# Pipelines > Run pipeline runs it by hand. Both jobs run only in those pipelines, on @@BRANCH@@.
#
# The runner: every evaluation of contributed code runs in bubblewrap's sandbox, which needs user
# namespaces. An unprivileged Docker container has none: use the docker executor with
# `privileged = true` in [runners.docker], or a shell runner on a VM. `git agora ci` refuses to verify
# without the sandbox.
#
# What it needs (Settings > CI/CD > Variables, masked and protected): @@GITLAB_SECRET@@, the CI account's
# private key as one base64 line (`base64 -w0 ci_ed25519`: GitLab masks only such values), and
# @@GITLAB_PUSH_TOKEN@@, a project access token with the write_repository scope (the job token cannot
# push). The policy names the account in `[ci] accounts`.

stages:
  - ci
  - deploy

agora-ci:
  stage: ci
  image: python:@@PYTHON@@-bookworm
  timeout: @@JOB_MINUTES@@m
  resource_group: agora-ci  # one run at a time: never two pushes of the CI account's log at once
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "web" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
  variables:
    GIT_DEPTH: "0"  # a full clone: git turns its commit-graph off in a shallow one
    AGORA_ACCOUNT: "@@ACCOUNT@@"
  cache:
    key: agora-index
    paths:
      - .git/agora/index
  before_script:
    - |
      python -m pip install --disable-pip-version-check @@INSTALL@@
      apt-get update -q
      apt-get install -y -q --no-install-recommends bubblewrap util-linux
  script:
    # The token and the key stay in this job's environment: git reads the GIT_CONFIG_* variables as
    # configuration (nothing in .git/config, nothing on a command line); git agora ci holds the key in
    # memory and passes it to nothing it starts. Nothing here prints them or writes them to a file.
    - git remote set-url origin "$CI_PROJECT_URL.git"
    - |
      basic=$(printf 'agora-ci:%s' "$@@GITLAB_PUSH_TOKEN@@" | base64 -w0)
      export GIT_CONFIG_COUNT=1
      export GIT_CONFIG_KEY_0="http.$CI_SERVER_URL/.extraheader"
      export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $basic"
      @@SECRET@@=$(printf '%s' "$@@GITLAB_SECRET@@" | base64 -d)
      export @@SECRET@@
      unset basic
      git agora ci --account "$AGORA_ACCOUNT" --max-minutes @@MAX_MINUTES@@ --site @@SITE@@
  artifacts:
    paths:
      - @@SITE@@
    expire_in: 1 day

pages:
  stage: deploy
  image: python:@@PYTHON@@-bookworm
  timeout: 10m
  needs:
    - job: agora-ci
      artifacts: true
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "web" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
  variables:
    GIT_STRATEGY: none  # the site comes from agora-ci's artifact; no clone needed
  script:
    - rm -rf public
    - mv @@SITE@@ public
  artifacts:
    paths:
      - public
"""
