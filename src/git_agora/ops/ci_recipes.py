"""The CI configurations `git agora ci --init github|gitea|gitlab` writes (docs/ci.md, "The generated
recipes").

Each recipe is the split job (docs/ci.md, "The split job"): a **verify** job with no secret and a
read-only token installs the scorer's environment the policy records (its Python, its hash-pinned lock),
reruns the pending claims in the sandbox (`git agora ci --verify-only --out bundle`) and keeps the
verdicts as an artifact; a **publish** job, the only one that reads the CI account's key (from a
protected environment on GitHub), downloads them, checks, signs and pushes them (`git agora ci
--publish bundle`, which runs nothing a contribution holds), writes the job summary and builds the site
(its `badge.json` included, whatever `git agora site` writes), which GitHub and GitLab publish on Pages.
Only the verify job relaxes the runner's AppArmor limit on user namespaces, for bubblewrap.

The index is kept in the forge's cache under a key that names what it covers (a digest of the remote's
refs/agora/*), written by the publish job alone, and checked after every restore (`git agora index
--check`, rebuilt from the refs where it differs).

The GitHub and Gitea workflows pass actionlint and zizmor's auditor persona (tests/test_ci_recipes.py
runs both, and shellcheck on every script): every action pinned by a full commit SHA with its release in
a comment, no permission at the top, `contents: read` for the verify job and `contents: write` for the
one that pushes, no `${{ }}` in a `run:` line, no credential persisted by the checkout.

Pure: strings in, strings out; no click, no Git, no files.
"""

from __future__ import annotations

import platform
import re
import shlex
from dataclasses import dataclass, field

from ..contribution import valid_account
from ..errors import AgoraError

FORGES = ("github", "gitea", "gitlab")
PATHS = {
    "github": ".github/workflows/agora.yml",
    "gitea": ".gitea/workflows/agora.yml",
    "gitlab": ".gitlab/agora-ci.yml",  # included from .gitlab-ci.yml (`GITLAB_INCLUDE`)
}
# The copy of the policy's lock the verify job installs, beside the recipe on the default branch (a forge
# file: publishing refuses a contribution that changes it, ops/publish.py FORGE_FILES).
LOCK_PATHS = {
    "github": ".github/agora-scorer.lock",
    "gitea": ".gitea/agora-scorer.lock",
    "gitlab": ".gitlab/agora-scorer.lock",
}
GITLAB_CI = ".gitlab-ci.yml"
GITLAB_INCLUDE = f"include:\n  - local: {PATHS['gitlab']}  # git agora ci (written by git agora ci --init gitlab)\n"
PUBLISH_ENVIRONMENT = "agora-publish"  # the environment that holds the key, usable from the default branch only
SECRET = "AGORA_CI_KEY"  # the CI account's private key text (an OpenSSH ed25519 key), a secret of the forge
GITLAB_SECRET = "AGORA_CI_KEY_BASE64"  # GitLab masks only values in the base64 alphabet: the key, encoded
GITLAB_PUSH_TOKEN = "AGORA_PUSH_TOKEN"  # GitLab's job token cannot push: a project access token can
DISPATCH_EVENT = "agora-ci"  # repository_dispatch's event type that starts a run on GitHub
SITE_DIR = "agora-site"
BUNDLE_DIR = "bundle"
BUNDLE_ARTIFACT = "agora-bundle"
MAX_MINUTES = 45  # `git agora ci --max-minutes`: the verification budget of one run ...
JOB_MINUTES = 60  # ... inside the verify job's own limit, which leaves time to write the bundle
PUBLISH_MINUTES = 20
CRON = "17 * * * *"  # hourly, off the full hour that every other scheduled job on the forge asks for
GITEA_RUNNER = "agora-sandbox"  # a runner label the founder gives a host that can run bubblewrap
_PYTHON = re.compile(r"^3\.[0-9]{1,2}(\.[0-9]{1,3})?$")


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


# GitHub-hosted runners run Node 24: the releases that declare it (`runs.using: node24`). The cache's
# restore and save halves are folders of actions/cache at the same commit.
_CACHE = ("actions/cache", "27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5")
GITHUB_ACTIONS = {
    "checkout": Action("actions/checkout", "3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "setup-python": Action("actions/setup-python", "5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "cache-restore": Action(f"{_CACHE[0]}/restore", _CACHE[1], _CACHE[2]),
    "cache-save": Action(f"{_CACHE[0]}/save", _CACHE[1], _CACHE[2]),
    "upload-artifact": Action("actions/upload-artifact", "043fb46d1a93c77aae656e7c1c64a875d1fc6a0a", "v7.0.1"),
    "download-artifact": Action("actions/download-artifact", "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1"),
    "upload-pages-artifact": Action(
        "actions/upload-pages-artifact", "fc324d3547104276b827a68afc52ff2a11cc49c9", "v5.0.0"
    ),
    "deploy-pages": Action("actions/deploy-pages", "cd2ce8fcbc39b97be8ca5fce6e763baed58fa128", "v5.0.0"),
}
# Gitea's runner (act) runs whatever `node` its job image has: the Node 20 releases run on every act_runner
# that runs actions at all. upload-artifact v4 and later refuse to run on Gitea (they take it for GitHub
# Enterprise Server, which they do not support); v3 (and download-artifact v3) speak the protocol Gitea serves.
_GITEA_CACHE = ("actions/cache", "0057852bfaa89a56745cba8c7296529d2fc39830", "v4.3.0")
GITEA_ACTIONS = {
    "checkout": Action("actions/checkout", "34e114876b0b11c390a56381ad16ebd13914f8d5", "v4.3.1"),
    "setup-python": Action("actions/setup-python", "a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"),
    "cache-restore": Action(f"{_GITEA_CACHE[0]}/restore", _GITEA_CACHE[1], _GITEA_CACHE[2]),
    "cache-save": Action(f"{_GITEA_CACHE[0]}/save", _GITEA_CACHE[1], _GITEA_CACHE[2]),
    "upload-artifact": Action("actions/upload-artifact", "c24449f33cd45d4826c6702db7e49f7cdb9b551d", "v3.2.1-node20"),
    "download-artifact": Action(
        "actions/download-artifact", "ad191675b41f6a5b46da9a048cb6893812da158b", "v3.1.0-node20"
    ),
}

# a name git takes for a branch, made of characters that need no quoting in YAML, an expression or the shell
_BRANCH = re.compile(r"^(?![-/.])(?!.*\.\.)(?!.*//)(?!.*/\.)[A-Za-z0-9._/-]{1,200}(?<![./])$")


@dataclass(frozen=True)
class Recipe:
    forge: str  # github | gitea | gitlab
    path: str  # where it goes in the repository, relative to its root
    text: str  # the file
    notes: tuple[str, ...]  # what the founder does by hand: the secret, Pages, the schedule, the runner, ...
    python: str = ""  # the Python both jobs install
    python_from_policy: bool = False  # whether the policy records it ([eval] python), else this interpreter's
    extra: tuple[tuple[str, str], ...] = field(default=())  # other files beside it: (path, text)

    @property
    def files(self) -> tuple[tuple[str, str], ...]:
        """Every file the recipe writes, the workflow first."""
        return ((self.path, self.text), *self.extra)


def package_version() -> str:
    """This git-agora's version, for the default pip requirement (0.1.0 when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("git-agora")
    except PackageNotFoundError:
        return "0.1.0"


def default_install() -> str:
    return f"git-agora=={package_version()}"


def running_python() -> str:
    """This interpreter's major.minor: the fallback where the policy records no scorer Python."""
    major, minor, _ = platform.python_version_tuple()
    return f"{major}.{minor}"


def recipe(
    forge: str,
    branch: str = "main",
    install: str | None = None,
    account: str = "ci",
    *,
    python: str | None = None,
    lock: str | None = None,
) -> Recipe:
    """The CI configuration for `forge`. `branch`: the repository's default branch (schedules run from it,
    and the jobs run only there); `install`: the pip requirement that installs git-agora (default: this
    version); `account`: the CI account (`[ci] accounts` in the policy); `python`: the scorer's Python as
    the policy records it (`[eval] python`; None: this interpreter's major.minor, said in the file);
    `lock`: the text of the policy's lock (`[eval] lock`), copied beside the recipe and installed with
    `pip --require-hashes` by the verify job (None: no scorer packages are installed, said in the file)."""
    if forge not in FORGES:
        raise AgoraError(f"no CI recipe for {forge!r}: choose one of {', '.join(FORGES)}")
    if not _BRANCH.match(branch) or branch.endswith(".lock"):
        raise AgoraError(f"{branch!r} is not a branch name")
    if not valid_account(account):
        raise AgoraError(f"{account!r} is not an account name")
    install = default_install() if install is None else install
    if not install.strip() or any(c in install for c in "\n\r\0$"):
        raise AgoraError(f"{install!r} is not a pip requirement a recipe can hold")
    if python is not None and not _PYTHON.match(python):
        raise AgoraError(f"{python!r} is not a Python 3 version (3.11, or 3.11.7)")
    if lock is not None and not lock.strip():
        raise AgoraError("the policy's lock is empty")
    from_policy = python is not None
    python = python or running_python()
    lock_path = LOCK_PATHS[forge]
    values = {
        "BRANCH": branch,
        "INSTALL": shlex.quote(install),
        "ACCOUNT": account,
        "SITE": SITE_DIR,
        "BUNDLE": BUNDLE_DIR,
        "ARTIFACT": BUNDLE_ARTIFACT,
        "MAX_MINUTES": str(MAX_MINUTES),
        "JOB_MINUTES": str(JOB_MINUTES),
        "PUBLISH_MINUTES": str(PUBLISH_MINUTES),
        "PYTHON": python,
        "PYTHON_SOURCE": (
            "the scorer's Python, as the policy records it ([eval] python)"
            if from_policy
            else "the policy records no scorer Python ([eval] python): this is the one that wrote the file"
        ),
        "LOCK": lock_path,
        "CRON": CRON,
        "SECRET": SECRET,
        "ENVIRONMENT": PUBLISH_ENVIRONMENT,
        "GITLAB_SECRET": GITLAB_SECRET,
        "GITLAB_PUSH_TOKEN": GITLAB_PUSH_TOKEN,
        "DISPATCH": DISPATCH_EVENT,
        "RUNNER": GITEA_RUNNER,
    }
    indent = " " * (6 if forge == "gitlab" else 10)
    if lock is None:
        scorer = (
            f"{indent}# The policy records no lock ([eval] lock): the scorer's packages are whatever this runner\n"
            f"{indent}# has. Record one ([eval] format 3) and write this file again (git agora ci --init --force).\n"
        )
    else:
        scorer = (
            f"{indent}# The scorer's packages, exactly: the policy's lock ([eval] lock), copied beside this file.\n"
            f"{indent}python -m pip install --disable-pip-version-check --require-hashes --no-deps -r @@LOCK@@\n"
        )
    if forge == "github":
        text, notes = _GITHUB, _github_notes(branch, account)
        actions = GITHUB_ACTIONS
    elif forge == "gitea":
        text, notes = _GITEA, _gitea_notes(branch, account)
        actions = GITEA_ACTIONS
    else:
        text, notes, actions = _GITLAB, _gitlab_notes(branch, account), {}
    values |= {f"USES_{k.upper().replace('-', '_')}": a.uses for k, a in actions.items()}
    fragments = {**_SHARED, "SCORER_INSTALL": scorer}
    while any(f"@@{name}@@\n" in text for name in fragments):  # fragments hold fragments
        for name, fragment in fragments.items():
            text = text.replace(f"@@{name}@@\n", fragment)
    for name, value in values.items():
        text = text.replace(f"@@{name}@@", value)
    left = re.findall(r"@@[A-Z_]+@@", text)
    assert not left, left
    notes = (*_environment_notes(python, from_policy, lock is not None), *notes)
    extra = () if lock is None else ((lock_path, lock if lock.endswith("\n") else lock + "\n"),)
    return Recipe(forge, PATHS[forge], text, notes, python, from_policy, extra)


def _environment_notes(python: str, from_policy: bool, locked: bool) -> tuple[str, ...]:
    notes = []
    if not from_policy:
        notes.append(
            f"The policy records no scorer Python ([eval] python): the recipe installs Python {python}, this "
            "interpreter's. Record it in the policy ([eval] format 3, python and lock) so that the CI checks it, "
            "then write the recipe again with --force."
        )
    if not locked:
        notes.append(
            "The policy records no lock ([eval] lock): the verify job installs no scorer packages, and its "
            "reruns use whatever the runner has. Record a hash-pinned lock in the policy (docs/ci.md, "
            '"The scorer\'s environment") and write the recipe again with --force.'
        )
    else:
        notes.append(
            "The verify job installs the copy of the policy's lock written beside the recipe "
            "(pip --require-hashes); after a policy amendment with a new lock, write the recipe again with "
            "--force (git agora ci refuses, exit 4, to rerun under another environment than the policy's)."
        )
    notes.append(
        "git-agora itself is installed pinned by its version (git-agora==VERSION), its own dependencies by "
        "pip's resolver; to pin those by hash too, commit a lock made with `pip-compile --generate-hashes` and "
        "install it with `pip install --require-hashes -r` instead (docs/ci.md)."
    )
    return tuple(notes)


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
        f"Make the environment {PUBLISH_ENVIRONMENT}: Settings > Environments > New environment; under "
        f"Deployment branches and tags choose Selected branches and add `{branch}`. Add the secret {SECRET} "
        "there (Environment secrets > Add environment secret), the whole text of ci_ed25519 (the private "
        "key): only the publish job, which runs no contributed code, can read it.",
        "Publish the site: Settings > Pages > Build and deployment > Source: GitHub Actions. The site holds "
        "what `git agora site` writes, the badge's JSON endpoint included.",
        "GitHub Actions starts no workflow for pushes to custom refs such as refs/agora/*: this one runs "
        "hourly, by hand (Actions > agora ci > Run workflow), and on a repository_dispatch event "
        f'`{DISPATCH_EVENT}` (`curl -X POST -H "Authorization: Bearer $TOKEN" '
        "https://api.github.com/repos/OWNER/REPO/dispatches -d "
        f'\'{{"event_type":"{DISPATCH_EVENT}"}}\'`, docs/ci.md) right after a push.',
        "Scheduled workflows run only from the default branch, and GitHub disables them in a public "
        "repository after 60 days without activity: re-enable it under Actions when that happens.",
        "The sandbox: GitHub's Ubuntu 24.04 runners restrict unprivileged user namespaces through AppArmor; "
        "the verify job (only it) relaxes that on its throw-away VM so that bubblewrap works. A self-hosted "
        "runner must be a VM (or a privileged container) where bubblewrap can make user namespaces.",
    )


def _gitea_notes(branch: str, account: str) -> tuple[str, ...]:
    return (
        *_common_notes(branch, account),
        f"Add the secret {SECRET}: the repository's Settings > Actions > Secrets, the whole text of "
        "ci_ed25519 (the private key). Gitea has no environments to scope a secret to one branch: any "
        "workflow that someone with write access adds to the repository can read it, so grant write access "
        "only to people you would trust with the CI account's key. Only the publish job names it.",
        f"The verify job runs on the label `{GITEA_RUNNER}`: register a runner with it on a host that can run "
        "the sandbox (act_runner in host mode on a VM, or a privileged job container: `container: "
        "privileged: true` in the runner's config.yaml), e.g. `act_runner register --labels "
        f"{GITEA_RUNNER}:host`. A default runner's Docker container (`ubuntu-latest`) cannot make user "
        "namespaces, and `git agora ci` refuses to verify there.",
        "Gitea has no Pages: the site is an artifact of each run (agora-site); serve it with any web "
        "server, or publish it with docs/site.md's script.",
        "Gitea starts no workflow for pushes to refs/agora/*: this one runs hourly and by hand (Actions > "
        "agora ci > Run workflow, or Gitea's API for a workflow_dispatch, docs/ci.md). Gitea reads its "
        "`permissions:` keys from 1.26 on; before that the job token's rights come from the repository's "
        "settings and must allow pushing.",
    )


def _gitlab_notes(branch: str, account: str) -> tuple[str, ...]:
    return (
        *_common_notes(branch, account),
        f"Include the file from .gitlab-ci.yml on `{branch}`: `include: - local: {PATHS['gitlab']}` "
        "(git agora ci --init writes that line into a new .gitlab-ci.yml, or appends it to one without an "
        "`include:`). The jobs use the default stages test and deploy.",
        f"Add two CI/CD variables (Settings > CI/CD > Variables), both masked and protected, with the "
        f"environment scope {PUBLISH_ENVIRONMENT} so that only the publish job gets them: {GITLAB_SECRET}, "
        "the key as one line (`base64 -w0 ci_ed25519`: GitLab masks only such values), and "
        f"{GITLAB_PUSH_TOKEN}, a project access token with the Developer role and the write_repository "
        "scope (Settings > Access tokens): the job token cannot push refs/agora/*.",
        f"Set the schedule in GitLab's UI: Build > Pipeline schedules > New schedule, e.g. `{CRON}`, on "
        f"`{branch}`. Pushes to refs/agora/* start no pipeline; Build > Pipelines > Run pipeline runs it by "
        "hand, and a pipeline trigger token starts it through the API (docs/ci.md).",
        "The runner must run the sandbox: a shell runner on a VM, or the docker executor with "
        "`privileged = true` in [runners.docker]. In an unprivileged container bubblewrap cannot make user "
        "namespaces and `git agora ci` refuses to verify.",
        "The `pages` job publishes the site on GitLab Pages (Deploy > Pages shows its address), with what "
        "`git agora site` writes, the badge's JSON endpoint included.",
    )


# What the GitHub and Gitea workflows share (Gitea Actions reads GitHub's syntax), put in place before
# the values (`recipe`). The scripts run under `bash -e`.
_SHARED = {
    "CREDENTIALS": """\
          # git reads these variables as configuration: the token stays out of .git/config and off
          # every command line.
          basic=$(printf 'x-access-token:%s' "$TOKEN" | base64 -w0)
          export GIT_CONFIG_COUNT=1
          export GIT_CONFIG_KEY_0="http.$GITHUB_SERVER_URL/.extraheader"
          export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $basic"
          unset TOKEN basic
""",
    "CONCURRENCY": """\
concurrency:
  group: agora-ci
  cancel-in-progress: false  # a run waits for the one before it: never cut short in the middle of a push

""",
    "CHECKOUT": """\
      # The default branch: the CI's own files, nothing contributed (contributions are refs/agora/*
      # commits, fetched as data by git agora).
      - name: Check out
        uses: @@USES_CHECKOUT@@
        with:
          # The token is not kept in .git/config: the steps that fetch or push get it through their environment.
          persist-credentials: false
          fetch-depth: 0  # a full clone: git turns its commit-graph off in a shallow one

      # @@PYTHON_SOURCE@@
      - name: Set up Python
        uses: @@USES_SETUP_PYTHON@@
        with:
          python-version: "@@PYTHON@@"

""",
    "RESTORE_INDEX": """\
      # The cache's key names what the index covers: a digest of the remote's refs/agora/*. The same refs
      # give the same key; new refs restore the latest index, which git agora updates and checks.
      - name: Key the index by the refs it covers
        id: refs
        env:
          TOKEN: ${{ github.token }}
        run: |
@@CREDENTIALS@@
          refs=$(git ls-remote origin 'refs/agora/*')
          digest=$(printf '%s\\n' "$refs" | sha256sum | cut -c1-64)
          printf 'key=agora-index-%s\\n' "$digest" >> "$GITHUB_OUTPUT"

      # Only the publish job, which runs no contributed code, saves the cache; both restore it.
      - name: Restore the index
        id: restore
        uses: @@USES_CACHE_RESTORE@@
        with:
          path: .git/agora/index
          key: ${{ steps.refs.outputs.key }}
          restore-keys: agora-index-

""",
    "FETCH_CHECK": """\
          # A restored index is checked before anything reads it: `index --check` rebuilds it from the
          # refs in a scratch folder and compares; where they differ it is rebuilt from the refs.
          git agora fetch
          git agora index --check || git agora index --rebuild
""",
    "VERIFY_COMMAND": """\
          # The bundle is written once the verdicts are reached, also where some claims could not be rerun
          # because of this runner (exit 4): the publish job publishes the verdicts and fails in turn
          # (exit 4, from the bundle), as the one-process run does. Without a bundle (no sandbox, another
          # scorer environment than the policy's, ...) this job fails here and nothing is published.
          rc=0
          git agora ci --verify-only --out @@BUNDLE@@ --account "$AGORA_ACCOUNT" --max-minutes @@MAX_MINUTES@@ || rc=$?
          if [ "$rc" != 0 ] && { [ "$rc" != 4 ] || [ ! -f @@BUNDLE@@/bundle.json ]; }; then
            exit "$rc"
          fi
""",
    "VERIFY_RUN": """\
      # No key here: --verify-only refuses to start holding one, signs nothing and pushes nothing. The
      # scorer's environment is checked against the policy before anything is rerun (exit 4 otherwise).
      - name: git agora ci --verify-only
        env:
          TOKEN: ${{ github.token }}
          AGORA_ACCOUNT: "@@ACCOUNT@@"
        run: |
@@CREDENTIALS@@
@@FETCH_CHECK@@
@@VERIFY_COMMAND@@

      - name: Keep the verdicts for the publish job
        uses: @@USES_UPLOAD_ARTIFACT@@
        with:
          name: @@ARTIFACT@@
          path: @@BUNDLE@@
          if-no-files-found: error
          retention-days: 1

""",
    "PUBLISH_START": """\
      - name: Install git-agora
        run: python -m pip install --disable-pip-version-check @@INSTALL@@

@@RESTORE_INDEX@@
      - name: Download the verdicts
        uses: @@USES_DOWNLOAD_ARTIFACT@@
        with:
          name: @@ARTIFACT@@
          path: @@BUNDLE@@

      # The key and the token reach this one step through its environment: never printed, never written
      # to a file (git agora ci holds the key in memory and passes it to nothing it starts). It checks the
      # bundle against the policy and its own list of pending claims, refuses it whole otherwise, and
      # writes the job summary ($GITHUB_STEP_SUMMARY) and the site, its badge included.
      - name: git agora ci --publish
        env:
          @@SECRET@@: ${{ secrets.@@SECRET@@ }}
          AGORA_ACCOUNT: "@@ACCOUNT@@"
          TOKEN: ${{ github.token }}
        run: |
@@CREDENTIALS@@
@@FETCH_CHECK@@
          git agora ci --publish @@BUNDLE@@ --account "$AGORA_ACCOUNT" --site @@SITE@@

      - name: Key the index by the refs it now covers
        id: held
        env:
          TOKEN: ${{ github.token }}
        run: |
@@CREDENTIALS@@
          refs=$(git ls-remote origin 'refs/agora/*')
          digest=$(printf '%s\\n' "$refs" | sha256sum | cut -c1-64)
          printf 'key=agora-index-%s\\n' "$digest" >> "$GITHUB_OUTPUT"

      - name: Save the index
        if: steps.held.outputs.key != steps.restore.outputs.cache-matched-key
        uses: @@USES_CACHE_SAVE@@
        with:
          path: .git/agora/index
          key: ${{ steps.held.outputs.key }}

""",
}

_GITHUB = """\
# git agora ci, in two jobs (docs/ci.md, "The generated recipes"): `verify`, with no secret and a read-only
# token, reruns the pending claims in the sandbox and keeps the verdicts as an artifact; `publish`, the
# only job that reads the CI account's key (environment @@ENVIRONMENT@@), runs no contributed code: it
# checks, signs and pushes the verdicts and a witness record, writes the job summary and builds the site
# (badge included) that `pages` deploys. Written by `git agora ci --init github`.
#
# When it runs: GitHub Actions starts no workflow for pushes to custom refs such as refs/agora/*, where
# contributions arrive, so this runs on a schedule, by hand, and on a repository_dispatch event
# "@@DISPATCH@@" (send one right after a push, docs/ci.md). Scheduled workflows run only from the
# default branch (@@BRANCH@@), and GitHub disables them after 60 days without activity in a public
# repository: re-enable the workflow under Actions when that happens.
#
# What it needs: the environment @@ENVIRONMENT@@ holding the secret @@SECRET@@ (the CI account's private
# key), deployable from @@BRANCH@@ only, and Pages with the source "GitHub Actions"; the policy names the
# account in `[ci] accounts`.
name: agora ci

on:
  schedule:
    - cron: "@@CRON@@"  # hourly
  workflow_dispatch:
  repository_dispatch:
    types: [@@DISPATCH@@]

# Nothing at the top: each job asks for what it needs.
permissions: {}

@@CONCURRENCY@@
jobs:
  verify:
    name: rerun the pending claims in the sandbox (no secret)
    if: github.ref == 'refs/heads/@@BRANCH@@'
    runs-on: ubuntu-24.04
    timeout-minutes: @@JOB_MINUTES@@
    permissions:
      contents: read  # fetch refs/agora/*: this job's token cannot push
    steps:
@@CHECKOUT@@
      - name: Install git-agora, the scorer's packages and bubblewrap
        run: |
          python -m pip install --disable-pip-version-check @@INSTALL@@
@@SCORER_INSTALL@@
          sudo apt-get update -q
          sudo apt-get install -y -q --no-install-recommends bubblewrap

      # Every evaluation of contributed code runs in bubblewrap's sandbox, which needs an unprivileged user
      # namespace. Ubuntu 24.04 restricts those through AppArmor; this relaxes that on this throw-away VM,
      # in this job only (it holds no secret; the publish job runs no contributed code and keeps the limit).
      # Without it `git agora ci` refuses to verify: it never runs contributed code outside the sandbox.
      - name: Let bubblewrap make user namespaces
        run: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0

@@RESTORE_INDEX@@
@@VERIFY_RUN@@
  publish:
    name: check, sign and publish the verdicts, build the site
    needs: verify
    if: github.ref == 'refs/heads/@@BRANCH@@'
    runs-on: ubuntu-24.04
    timeout-minutes: @@PUBLISH_MINUTES@@
    # The key is a secret of this environment alone, which only @@BRANCH@@ may use: a workflow on any other
    # branch, or another job, never sees it.
    environment: @@ENVIRONMENT@@
    permissions:
      # Write access to the repository, in this job only: `git agora ci --publish` pushes the CI account's
      # log (its verdicts and its witness record) back to refs/agora/* here. Nothing else is granted.
      contents: write  # push refs/agora/log/<account> and refs/agora/identity/<account>
    steps:
@@CHECKOUT@@
@@PUBLISH_START@@
      - name: Upload the site
        uses: @@USES_UPLOAD_PAGES_ARTIFACT@@
        with:
          path: @@SITE@@

  pages:
    name: publish the site on GitHub Pages
    needs: publish
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
# git agora ci, in two jobs (docs/ci.md, "The generated recipes"): `verify`, with no secret and a read-only
# token, reruns the pending claims in the sandbox and keeps the verdicts as an artifact; `publish`, the
# only job that reads the CI account's key, runs no contributed code: it checks, signs and pushes the
# verdicts and a witness record, writes the job summary and builds the site (badge included). Written by
# `git agora ci --init gitea`. Gitea Actions reads GitHub's workflow syntax.
#
# When it runs: no workflow starts for pushes to refs/agora/*, where contributions arrive, so this runs
# on a schedule (from the default branch, @@BRANCH@@) and by hand (the UI, or Gitea's API for a
# workflow_dispatch: docs/ci.md).
#
# What it needs: the secret @@SECRET@@ (the CI account's private key); the policy names the account in
# `[ci] accounts`. Gitea has no Pages: the site is an artifact of each run.
name: agora ci

on:
  schedule:
    - cron: "@@CRON@@"  # hourly
  workflow_dispatch:

# Nothing at the top: each job asks for what it needs (Gitea 1.26 and later read these keys).
permissions: {}

@@CONCURRENCY@@
jobs:
  verify:
    name: rerun the pending claims in the sandbox (no secret)
    if: github.ref == 'refs/heads/@@BRANCH@@'
    # A runner label of a host that can run the sandbox, not a default runner's Docker container: every
    # evaluation of contributed code runs in bubblewrap, which needs user namespaces, and an ordinary job
    # container has none. Register act_runner in host mode on a VM (`act_runner register --labels
    # @@RUNNER@@:host`), or with privileged job containers (`container: privileged: true` in its
    # config.yaml). `git agora ci` refuses to verify without the sandbox.
    runs-on: @@RUNNER@@
    timeout-minutes: @@JOB_MINUTES@@
    permissions:
      contents: read  # fetch refs/agora/*: this job's token cannot push
    steps:
@@CHECKOUT@@
      - name: Install git-agora, the scorer's packages and bubblewrap
        run: |
          sudo=sudo
          if [ "$(id -u)" = 0 ]; then sudo=; fi  # a job container runs as root, often without sudo
          python -m pip install --disable-pip-version-check @@INSTALL@@
@@SCORER_INSTALL@@
          $sudo apt-get update -q
          $sudo apt-get install -y -q --no-install-recommends bubblewrap util-linux

      # An unprivileged user needs an unprivileged user namespace for the sandbox. Ubuntu 24.04 restricts
      # those through AppArmor; a runner VM of its own relaxes that here, in this job only (it holds no
      # secret; the publish job runs no contributed code). As root (a privileged container) bubblewrap
      # needs no such namespace and drops to an unprivileged uid inside.
      - name: Let bubblewrap make user namespaces
        run: |
          restrict=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
          if [ "$(id -u)" != 0 ] && [ "$(cat "$restrict" 2>/dev/null)" = 1 ]; then
            sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0
          fi

@@RESTORE_INDEX@@
@@VERIFY_RUN@@
  publish:
    name: check, sign and publish the verdicts, build the site
    needs: verify
    if: github.ref == 'refs/heads/@@BRANCH@@'
    # It runs nothing a contribution holds and needs no sandbox: any runner does.
    runs-on: ubuntu-latest
    timeout-minutes: @@PUBLISH_MINUTES@@
    permissions:
      # Write access to the repository, in this job only: `git agora ci --publish` pushes the CI account's
      # log (its verdicts and its witness record) back to refs/agora/* here. Nothing else is granted.
      contents: write  # push refs/agora/log/<account> and refs/agora/identity/<account>
    steps:
@@CHECKOUT@@
@@PUBLISH_START@@
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
# git agora ci, in two jobs (docs/ci.md, "The generated recipes"): agora-verify, with no secret, reruns
# the pending claims in the sandbox and keeps the verdicts as an artifact; agora-publish, the only job
# that gets the CI account's key (variables scoped to the environment @@ENVIRONMENT@@), runs no
# contributed code: it checks, signs and pushes the verdicts and a witness record and builds the site
# (badge included) that `pages` publishes. Written by `git agora ci --init gitlab`; include it from
# .gitlab-ci.yml:
#
#   include:
#     - local: .gitlab/agora-ci.yml
#
# When it runs: pushes to refs/agora/*, where contributions arrive, start no pipeline. Set a schedule in
# GitLab's UI (Build > Pipeline schedules > New schedule: "@@CRON@@", hourly, on @@BRANCH@@); Build >
# Pipelines > Run pipeline runs it by hand, and a pipeline trigger token through the API (docs/ci.md).
# The jobs run only in those pipelines, on @@BRANCH@@.
#
# The runner: every evaluation of contributed code runs in bubblewrap's sandbox, which needs user
# namespaces. An unprivileged Docker container has none: use the docker executor with
# `privileged = true` in [runners.docker], or a shell runner on a VM. `git agora ci` refuses to verify
# without the sandbox.
#
# What it needs (Settings > CI/CD > Variables, masked, protected, environment scope @@ENVIRONMENT@@):
# @@GITLAB_SECRET@@, the CI account's private key as one base64 line (`base64 -w0 ci_ed25519`: GitLab
# masks only such values), and @@GITLAB_PUSH_TOKEN@@, a project access token with the write_repository
# scope (the job token cannot push). The policy names the account in `[ci] accounts`.
#
# The cache: GitLab fixes a cache's key when the pipeline is made, so it cannot name the refs the index
# covers; every job checks a restored index against a rebuild from the refs (`git agora index --check`)
# and rebuilds it where they differ. Only agora-publish, which runs no contributed code, writes it.

agora-verify:
  stage: test
  # @@PYTHON_SOURCE@@
  image: python:@@PYTHON@@-bookworm
  timeout: @@JOB_MINUTES@@m
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "web" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "trigger" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "api" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
  variables:
    GIT_DEPTH: "0"  # a full clone: git turns its commit-graph off in a shallow one
    AGORA_ACCOUNT: "@@ACCOUNT@@"
  cache:
    key: agora-index
    paths:
      - .git/agora/index
    policy: pull  # read only: agora-publish writes it
  before_script:
    - |
      python -m pip install --disable-pip-version-check @@INSTALL@@
@@SCORER_INSTALL@@
      apt-get update -q
      apt-get install -y -q --no-install-recommends bubblewrap util-linux
  script:
    # No key here (the variables are scoped to @@ENVIRONMENT@@): --verify-only refuses to start holding
    # one, signs nothing and pushes nothing. The job token reads the repository through git's
    # environment (GIT_CONFIG_*), never from .git/config.
    - |
      git remote set-url origin "$CI_PROJECT_URL.git"
      basic=$(printf 'gitlab-ci-token:%s' "$CI_JOB_TOKEN" | base64 -w0)
      export GIT_CONFIG_COUNT=1
      export GIT_CONFIG_KEY_0="http.$CI_SERVER_URL/.extraheader"
      export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $basic"
      unset basic
      git agora fetch
      git agora index --check || git agora index --rebuild
      # A bundle written is agora-publish's to publish, also at exit 4 (some claims not rerun because of
      # this runner: agora-publish fails in turn); without one this job fails here.
      rc=0
      git agora ci --verify-only --out @@BUNDLE@@ --account "$AGORA_ACCOUNT" --max-minutes @@MAX_MINUTES@@ || rc=$?
      if [ "$rc" != 0 ] && { [ "$rc" != 4 ] || [ ! -f @@BUNDLE@@/bundle.json ]; }; then
        exit "$rc"
      fi
  artifacts:
    paths:
      - @@BUNDLE@@
    expire_in: 1 day

agora-publish:
  stage: deploy
  image: python:@@PYTHON@@-bookworm
  timeout: @@PUBLISH_MINUTES@@m
  resource_group: agora-ci  # one at a time: never two pushes of the CI account's log at once
  environment: @@ENVIRONMENT@@  # the key and the push token are variables of this environment alone
  needs:
    - job: agora-verify
      artifacts: true
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "web" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "trigger" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "api" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
  variables:
    GIT_DEPTH: "0"
    AGORA_ACCOUNT: "@@ACCOUNT@@"
  cache:
    key: agora-index
    paths:
      - .git/agora/index
    policy: pull-push
  before_script:
    # git-agora only: this job runs no contributed code, so it needs neither the scorer nor bubblewrap.
    - python -m pip install --disable-pip-version-check @@INSTALL@@
  script:
    # The token and the key stay in this job's environment: git reads the GIT_CONFIG_* variables as
    # configuration (nothing in .git/config, nothing on a command line); git agora ci holds the key in
    # memory and passes it to nothing it starts. Nothing here prints them or writes them to a file.
    - |
      git remote set-url origin "$CI_PROJECT_URL.git"
      basic=$(printf 'agora-ci:%s' "$@@GITLAB_PUSH_TOKEN@@" | base64 -w0)
      export GIT_CONFIG_COUNT=1
      export GIT_CONFIG_KEY_0="http.$CI_SERVER_URL/.extraheader"
      export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $basic"
      @@SECRET@@=$(printf '%s' "$@@GITLAB_SECRET@@" | base64 -d)
      export @@SECRET@@
      unset basic
      git agora fetch
      git agora index --check || git agora index --rebuild
      git agora ci --publish @@BUNDLE@@ --account "$AGORA_ACCOUNT" --site @@SITE@@
  artifacts:
    paths:
      - @@SITE@@
    expire_in: 1 day

pages:
  stage: deploy
  image: python:@@PYTHON@@-bookworm
  timeout: 10m
  needs:
    - job: agora-publish
      artifacts: true
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "web" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "trigger" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
    - if: $CI_PIPELINE_SOURCE == "api" && $CI_COMMIT_BRANCH == "@@BRANCH@@"
  variables:
    GIT_STRATEGY: none  # the site comes from agora-publish's artifact; no clone needed
  script:
    - rm -rf public
    - mv @@SITE@@ public
  artifacts:
    paths:
      - public
"""
