"""The generated recipes, run as a runner runs them (issue 48). GitHub's workflow: its own steps, read
from the file `git agora ci --init github --push` committed on the remote's default branch, executed in order by a
small runner against a smart-HTTP forge on 127.0.0.1 that checks tokens as GitHub does (the verify job's
token reads, the publish job's may push). Each `run:` step is the file's script run by bash; each action
is played by what it does (checkout: a clone of the default branch; cache: a store of folders by key;
artifacts: a folder handed on). Only the install steps are left out (pip, apt, sysctl: this machine has
git-agora and bubblewrap), and the test names them.

What it shows: the verify job, with no key anywhere in its environment or files and a token that cannot
push, reruns the claim; the publish job, with the key and no bubblewrap on its PATH, publishes the
verdict, the witness, the summary and the site; the index is cached under the digest of the refs, so a
second run restores it by that exact key, checks it (`index --check`), publishes nothing and saves
nothing; a cached index that no longer matches the refs is rebuilt, not trusted. GitLab's included file:
its three jobs in order, with the job token in the clone's URL as GitLab's runner does, the key as base64
and the push token as the publish environment's variables.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_ci_e2e import ci_secret, founded_with_ci

from agora_testing import agora, git
from servers import smart_http

TOKENS = {"founder-token": "write", "read-token": "read", "write-token": "write"}
INSTALLS = {  # the steps this machine does not need: what they install is here already
    "verify": ["Install git-agora, the scorer's packages and bubblewrap", "Let bubblewrap make user namespaces"],
    "publish": ["Install git-agora"],
}


def without_bwrap(tmp: Path) -> str:
    """A PATH with every program this machine's PATH has but bubblewrap: a runner that cannot run the
    sandbox, as the publish job needs none."""
    tools = tmp / "no-bwrap-runner"
    tools.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            if entry.name != "bwrap" and not (tools / entry.name).exists() and os.access(entry.path, os.X_OK):
                (tools / entry.name).symlink_to(entry.path)
    assert shutil.which("bwrap", path=str(tools)) is None and shutil.which("bash", path=str(tools))
    return str(tools)


def basic(token: str) -> str:
    return "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


class Runner:
    """Runs one job of the workflow, step by step, in a fresh folder, as GitHub's runner would."""

    def __init__(self, tmp: Path, url: str, server: str, cache: dict[str, Path], artifacts: dict[str, Path]):
        self.tmp, self.url, self.server, self.cache, self.artifacts = tmp, url, server, cache, artifacts
        self.pages: Path | None = None
        self.runs = 0

    def job(self, workflow: dict[str, Any], name: str, token: str, secrets: dict[str, str], path: str) -> dict:
        job = workflow["jobs"][name]
        self.runs += 1
        work = self.tmp / f"{name}-{self.runs}"
        home = work.with_name(work.name + "-home")
        home.mkdir(parents=True)
        (home / ".gitconfig").write_text("")
        # a runner's environment: no git identity, no key, only what the step's own `env:` adds
        base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER", "AGORA"))}
        base |= {"HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_TERMINAL_PROMPT": "0"}
        base |= {"PATH": path, "GITHUB_SERVER_URL": self.server}
        outputs: dict[str, dict[str, str]] = {}
        ran, skipped, logs = [], [], {}
        for step in job["steps"]:
            context = {"github.token": token, **{f"secrets.{k}": v for k, v in secrets.items()}}
            for sid, values in outputs.items():
                context |= {f"steps.{sid}.outputs.{k}": v for k, v in values.items()}
            if "if" in step and not self._condition(step["if"], context):
                skipped.append(step["name"])
                continue
            if "uses" in step:
                outputs[step.get("id", step["name"])] = self._action(step, work, context)
            elif step["name"] in INSTALLS[name]:
                skipped.append(step["name"])
                continue
            else:
                out = work.with_name(work.name + f"-output-{len(ran)}")
                out.write_text("")
                env = base | {k: render(str(v), context) for k, v in (step.get("env") or {}).items()}
                env |= {"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(work.with_name(work.name + "-summary"))}
                done = subprocess.run(
                    ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                    cwd=work,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                assert done.returncode == 0, f"{name}: {step['name']}\n{done.stdout}\n{done.stderr}"
                logs[step["name"]] = done.stdout + done.stderr
                lines = [ln.partition("=") for ln in out.read_text().splitlines() if ln]
                outputs[step.get("id", step["name"])] = {k: v for k, _, v in lines}
            ran.append(step["name"])
        summary = work.with_name(work.name + "-summary")
        return {
            "work": work,
            "outputs": outputs,
            "ran": ran,
            "skipped": skipped,
            "logs": logs,
            "summary": summary.read_text() if summary.exists() else "",
        }

    def _condition(self, expression: str, context: dict[str, str]) -> bool:
        left, op, right = expression.partition(" != ")
        assert op, expression  # the one form the recipe uses
        return context.get(left.strip(), "") != context.get(right.strip(), "")

    def _action(self, step: dict[str, Any], work: Path, context: dict[str, str]) -> dict[str, str]:
        action, given = step["uses"].split("@")[0], {k: render(str(v), context) for k, v in step["with"].items()}
        if action == "actions/checkout":
            assert given["persist-credentials"] == "False" and given["fetch-depth"] == "0"
            header = f"http.extraHeader={basic(context['github.token'])}"
            git(self.tmp, "-c", header, "clone", "-q", self.url, str(work))
            assert "extraheader" not in git(work, "config", "--list").lower()  # nothing kept
        elif action == "actions/setup-python":
            assert re.match(r"^3\.\d+", given["python-version"])
        elif action == "actions/cache/restore":
            hit = given["key"] if given["key"] in self.cache else None
            if hit is None:
                older = [k for k in self.cache if k.startswith(given["restore-keys"])]
                hit = older[-1] if older else None
            if hit is not None:
                shutil.copytree(self.cache[hit], work / given["path"])
            return {"cache-matched-key": hit or "", "cache-hit": str(hit == given["key"]).lower()}
        elif action == "actions/cache/save":
            saved = self.tmp / f"cache-{len(self.cache)}"
            shutil.copytree(work / given["path"], saved)
            self.cache[given["key"]] = saved
        elif action == "actions/upload-artifact":
            assert (work / given["path"]).is_dir() or given.get("if-no-files-found") != "error"
            self.artifacts[given["name"]] = work / given["path"]
        elif action == "actions/download-artifact":
            shutil.copytree(self.artifacts[given["name"]], work / given["path"])
        elif action == "actions/upload-pages-artifact":
            self.pages = work / given["path"]
        else:
            raise AssertionError(f"no stand-in for {action}")
        return {}


def poison(index: Path, sha: str, title: str) -> None:
    """Give `sha` another title in a copy of the index, its segment's and its manifest's checksums redone:
    an index that reads as intact and is not what the refs say."""
    import zlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    from git_agora.index.state import checksum

    manifest = json.loads((index / "manifest.json").read_text())
    for segment in manifest["segments"]:
        path = index / "segments" / segment["data"][0]
        table = pq.read_table(path)
        titles = table.column("title").to_pylist()
        if sha not in table.column("sha").to_pylist():
            continue
        titles[table.column("sha").to_pylist().index(sha)] = title
        table = table.set_column(table.schema.get_field_index("title"), "title", pa.array(titles, pa.string()))
        pq.write_table(table, path)
        data = path.read_bytes()
        segment["data"] = [path.name, len(data), zlib.crc32(data)]
        break
    else:
        raise AssertionError(f"{sha} is in no segment")
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    text = json.dumps({**body, "checksum": checksum(body)}, sort_keys=True, separators=(",", ":")) + "\n"
    (index / "manifest.json").write_text(text)


def render(text: str, context: dict[str, str]) -> str:
    done = re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: context[m.group(1)], text)
    assert "${{" not in done, text
    return done


@contextmanager
def a_forge_with_a_claim(tmp_path: Path, forge_name: str) -> Iterator[tuple[str, Path, str]]:
    """A smart-HTTP forge checking `TOKENS`, its project founded with `ci` as CI account, one result
    claimed on it, and `git agora ci --init FORGE --push` run in the founder's clone: (the server's
    address, the bare repository, the claim's SHA)."""
    forge = tmp_path / "forge"
    forge.mkdir()
    remote = forge / "project.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(remote, "config", "http.receivepack", "true")
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    with smart_http(forge, TOKENS) as server:
        alice = founded_with_ci(tmp_path, remote)
        git(alice, "remote", "set-url", "origin", f"{server}/project.git")
        git(alice, "config", f"http.{server}/.extraHeader", basic("founder-token"))
        agora(alice, "fetch")
        baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json")
        agora(alice, "ci", "--init", forge_name, "--push")  # the recipe on the remote's default branch, only
        yield server, remote, baseline.json()["sha"]


@pytest.mark.slow
def test_the_generated_github_workflow_runs_its_two_jobs_against_a_local_forge(tmp_path):
    secret, _ = ci_secret(tmp_path)
    with a_forge_with_a_claim(tmp_path, "github") as (server, remote, baseline):
        url = f"{server}/project.git"
        assert git(remote, "ls-tree", "-r", "--name-only", "main").split() == [".github/workflows/agora.yml"]
        workflow = yaml.safe_load(git(remote, "show", "main:.github/workflows/agora.yml"))

        cache: dict[str, Path] = {}
        runner = Runner(tmp_path / "runner", url, server, cache, {})
        with_bwrap = os.environ["PATH"]
        without = without_bwrap(tmp_path)

        verify = runner.job(workflow, "verify", "read-token", {}, with_bwrap)
        assert verify["skipped"] == INSTALLS["verify"]
        refs_key = verify["outputs"]["refs"]["key"]
        assert re.fullmatch(r"agora-index-[0-9a-f]{64}", refs_key)
        assert verify["outputs"]["restore"]["cache-matched-key"] == ""  # a first run: nothing cached
        bundle = verify["work"] / "bundle"
        assert [p.stem for p in (bundle / "verdicts").iterdir()] == [baseline]
        assert "BEGIN OPENSSH" not in "".join(p.read_text() for p in bundle.rglob("*.json"))
        assert "refs/agora/log/ci" not in git(remote, "for-each-ref")  # it published nothing ...
        env = {"GIT_TERMINAL_PROMPT": "0", "PATH": with_bwrap}
        pushed = subprocess.run(
            ["git", "-c", f"http.extraHeader={basic('read-token')}", "push", "origin", "HEAD:refs/heads/x"],
            cwd=verify["work"],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )
        assert pushed.returncode != 0 and "403" in pushed.stderr, pushed  # ... and its token cannot push

        publish = runner.job(workflow, "publish", "write-token", {"AGORA_CI_KEY": secret}, without)
        assert publish["skipped"] == INSTALLS["publish"]
        assert publish["outputs"]["refs"]["key"] == refs_key  # the same refs, the same key
        held = publish["outputs"]["held"]["key"]
        assert held != refs_key and held in cache  # its own push moved the refs: saved under the new digest
        assert "### git agora ci: exit 0" in publish["summary"] and "| confirmed | 1 |" in publish["summary"]
        assert runner.pages is not None and (runner.pages / "index.html").is_file()
        assert "refs/agora/log/ci" in git(remote, "for-each-ref")
        reader = tmp_path / "reader"
        agora(tmp_path, "clone", str(remote), str(reader), "--account", "dora")
        rows = agora(reader, "analyze", "--json").json()["views"]["recent"]["rows"]
        assert {row["sha"]: row["status"] for row in rows}[baseline] == "confirmed"

        # a second run: the cache holds the index under the refs' digest, restored by that exact key
        again = runner.job(workflow, "verify", "read-token", {}, with_bwrap)
        assert again["outputs"]["restore"]["cache-matched-key"] == again["outputs"]["refs"]["key"] == held
        assert list((again["work"] / "bundle" / "verdicts").iterdir()) == []
        refs = git(remote, "for-each-ref")
        quiet = runner.job(workflow, "publish", "write-token", {"AGORA_CI_KEY": secret}, without)
        assert "Save the index" in quiet["skipped"] and len(cache) == 1  # the same refs: nothing to save
        assert git(remote, "for-each-ref") == refs  # and nothing published

        # a cached index that no longer matches the refs (consistent in itself: its checksums redone) is
        # rebuilt from the refs, not trusted
        poisoned = next(iter(cache.values()))
        poison(poisoned, baseline, "a title the refs do not hold")
        trusting = quiet["work"] / ".git" / "agora" / "index"  # read as it is, a reader would believe it
        shutil.rmtree(trusting)
        shutil.copytree(poisoned, trusting)
        assert "a title the refs do not hold" in agora(quiet["work"], "log").stdout
        third = runner.job(workflow, "verify", "read-token", {}, with_bwrap)
        assert "index ok" in again["logs"]["git agora ci --verify-only"]
        assert third["outputs"]["restore"]["cache-matched-key"] == held
        log = third["logs"]["git agora ci --verify-only"]
        assert "the incremental index differs from a rebuild" in log and "commits indexed" in log, log
        assert list((third["work"] / "bundle" / "verdicts").iterdir()) == []
        assert "a title the refs do not hold" not in agora(third["work"], "log").stdout
        assert "index ok" in agora(third["work"], "index", "--check").stdout


def gitlab_job(tmp: Path, name: str, jobs: dict[str, Any], env: dict[str, str], cache: dict[str, Path]) -> Path:
    """One job of the GitLab recipe as a runner runs it: a clone with the job token in its URL (or none:
    `GIT_STRATEGY: none`), the cache and the artifacts of the jobs it needs, `before_script` left out
    where it only installs, `script` in one bash, then the cache pushed where its policy says so."""
    work, job = tmp / name, jobs[name]
    variables = {k: str(v) for k, v in (job.get("variables") or {}).items()}
    if variables.get("GIT_STRATEGY") == "none":
        work.mkdir()
    else:
        assert variables["GIT_DEPTH"] == "0"
        token = env["CI_JOB_TOKEN"]
        authed = env["CI_PROJECT_URL"].replace("http://", f"http://gitlab-ci-token:{token}@") + ".git"
        git(tmp, "clone", "-q", authed, str(work))
    for need in job.get("needs", []):
        assert need["artifacts"] is True
        for path in jobs[need["job"]]["artifacts"]["paths"]:
            shutil.copytree(tmp / need["job"] / path, work / path)
    spec = job.get("cache")
    if spec and spec["key"] in cache:
        shutil.copytree(cache[spec["key"]], work / spec["paths"][0])
    for part in job.get("before_script", []):
        assert "pip install" in part, part  # what it installs is here already
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(job["script"])],
        cwd=work,
        env=env | variables,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{name}\n{done.stdout}\n{done.stderr}"
    (work / ".job-log").write_text(done.stdout + done.stderr)
    if spec and spec.get("policy") == "pull-push":
        saved = tmp / f"cache-{name}"
        shutil.copytree(work / spec["paths"][0], saved)
        cache[spec["key"]] = saved
    return work


@pytest.mark.slow
def test_the_generated_gitlab_jobs_run_against_a_local_forge(tmp_path):
    """GitLab's included file, its three jobs in order: the verify job with the read-only job token and
    none of the publish environment's variables, the publish job with the base64 key and the push token
    (its own environment's variables), then pages."""
    secret, _ = ci_secret(tmp_path)
    with a_forge_with_a_claim(tmp_path, "gitlab") as (server, remote, baseline):
        included = yaml.safe_load(git(remote, "show", "main:.gitlab-ci.yml"))
        assert included == {"include": [{"local": ".gitlab/agora-ci.yml"}]}
        jobs = yaml.safe_load(git(remote, "show", "main:.gitlab/agora-ci.yml"))
        runner = tmp_path / "runner"
        runner.mkdir()
        home = tmp_path / "runner-home"
        home.mkdir()
        (home / ".gitconfig").write_text("")
        base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER", "AGORA"))}
        base |= {"HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_TERMINAL_PROMPT": "0"}
        base |= {"CI_SERVER_URL": server, "CI_PROJECT_URL": f"{server}/project"}
        cache: dict[str, Path] = {}

        verify_env = base | {"CI_JOB_TOKEN": "read-token"}
        verify = gitlab_job(runner, "agora-verify", jobs, verify_env, cache)
        assert [p.stem for p in (verify / "bundle" / "verdicts").iterdir()] == [baseline]
        assert "refs/agora/log/ci" not in git(remote, "for-each-ref") and cache == {}

        scoped = {"AGORA_CI_KEY_BASE64": base64.b64encode(secret.encode()).decode(), "AGORA_PUSH_TOKEN": "write-token"}
        publish_env = base | {"CI_JOB_TOKEN": "read-token", "PATH": without_bwrap(tmp_path)} | scoped
        publish = gitlab_job(runner, "agora-publish", jobs, publish_env, cache)
        assert "refs/agora/log/ci" in git(remote, "for-each-ref") and list(cache) == ["agora-index"]
        assert "summary: 1 verified, 0 failed, 0 not rerun" in (publish / ".job-log").read_text()
        assert "http.extraheader" not in git(publish, "config", "--list").lower()  # the token stayed in env

        pages = gitlab_job(runner, "pages", jobs, base, cache)
        assert (pages / "public" / "index.html").is_file()

        # a second pipeline: the fixed-key cache is checked after restore, and nothing new is published
        refs = git(remote, "for-each-ref")
        (tmp_path / "again").mkdir()
        again = gitlab_job(tmp_path / "again", "agora-verify", jobs, verify_env, cache)
        assert "index ok" in (again / ".job-log").read_text()
        assert list((again / "bundle" / "verdicts").iterdir()) == []
        assert git(remote, "for-each-ref") == refs
