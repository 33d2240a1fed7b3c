"""The generated GitHub workflow, run as a runner runs it (issue 48): its own steps, read from the file
`git agora ci --init github --push` committed on the remote's default branch, executed in order by a
small runner against a smart-HTTP forge on 127.0.0.1 that checks tokens as GitHub does (the verify job's
token reads, the publish job's may push). Each `run:` step is the file's script run by bash; each action
is played by what it does (checkout: a clone of the default branch; cache: a store of folders by key;
artifacts: a folder handed on). Only the install steps are left out (pip, apt, sysctl: this machine has
git-agora and bubblewrap), and the test names them.

What it shows: the verify job, with no key anywhere in its environment or files and a token that cannot
push, reruns the claim; the publish job, with the key and no bubblewrap on its PATH, publishes the
verdict, the witness, the summary and the site; the index is cached under the digest of the refs, so a
second run restores it by that exact key, checks it (`index --check`), publishes nothing and saves
nothing; a cached index that no longer matches the refs is rebuilt, not trusted.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
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


@pytest.mark.slow
def test_the_generated_github_workflow_runs_its_two_jobs_against_a_local_forge(tmp_path):
    forge = tmp_path / "forge"
    forge.mkdir()
    remote = forge / "project.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(remote, "config", "http.receivepack", "true")
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    secret, _ = ci_secret(tmp_path)
    with smart_http(forge, TOKENS) as server:
        url = f"{server}/project.git"
        alice = founded_with_ci(tmp_path, remote)
        git(alice, "remote", "set-url", "origin", url)
        git(alice, "config", f"http.{server}/.extraHeader", basic("founder-token"))
        agora(alice, "fetch")
        baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json")
        baseline = baseline.json()["sha"]
        agora(alice, "ci", "--init", "github", "--push")  # the workflow on the remote's default branch, only
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
