"""The scorer's environment is part of the policy (`[eval] format = 3`: `python`, `lock`), and `git agora ci`
checks the running one against it before rerunning anything: a scorer whose packages differ from the lock
is refused loudly (exit 4, one line, nothing published), one that matches verifies. Templates carry a lock,
their `python` is the founder's, and a `[ci]` table written first is kept by `init --template`."""

from __future__ import annotations

import platform
import shutil
import subprocess
import tomllib
from importlib import metadata
from importlib.resources import files
from pathlib import Path

import pytest
from test_ci_e2e import CI_TOML, ci_secret, run_ci

from agora_testing import agora, git, make_clone
from git_agora.config import ConfigError, EvalSpec
from git_agora.errors import AgoraError
from git_agora.ops.scorer_env import environment_problem, parse_lock

HASH = "--hash=sha256:" + "ab" * 32
NUMPY = metadata.version("numpy")
PYTHON = ".".join(platform.python_version_tuple()[:2])


def spec(lock: str | None = "scorer.lock", python: str | None = None) -> EvalSpec:
    files = ("score.py", lock) if lock else ("score.py",)
    return EvalSpec(command="x", files=files, scorer=("numpy",), lock=lock, python=python, format=3)


def test_a_lock_is_pips_hash_checking_format_and_is_compared_with_what_is_installed():
    text = f"# scorer\nnumpy=={NUMPY} \\\n    {HASH} \\\n    {HASH}\n"
    assert parse_lock(text) == {"numpy": NUMPY}
    for bad in ("numpy>=1.0 " + HASH, f"numpy=={NUMPY}", f"numpy=={NUMPY} --hash=md5:00", ""):
        with pytest.raises(AgoraError):
            parse_lock(bad)
    assert environment_problem(spec(python=PYTHON), text) is None
    other = environment_problem(spec(), text.replace(NUMPY, "0.0.1"))
    assert other == f"numpy {NUMPY} is installed here, the lock scorer.lock has 0.0.1", other
    assert environment_problem(spec(python="3.2"), text).startswith(f"Python {platform.python_version()} runs here")
    assert "does not name the scorer package numpy" in environment_problem(spec(), f"pyarrow==1.0 {HASH}\n")
    with pytest.raises(ConfigError, match="must be one of"):
        EvalSpec(command="x", files=("score.py",), lock="scorer.lock", format=3)
    with pytest.raises(ConfigError, match="need format = 3"):
        EvalSpec.parse({"command": "x", "format": 2, "python": "3.11"})


def founded_with_a_lock(tmp: Path, name: str, version: str) -> tuple[Path, Path]:
    """alice founds the demo task with numpy as its scorer, locked at `version` under this Python."""
    from git_agora.demo.run import AGORA_TOML, TASK_FILES

    remote = tmp / f"{name}.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    alice = make_clone(tmp, f"alice-{name}", str(remote), "alice")
    for task_file in TASK_FILES:
        shutil.copyfile(files("git_agora") / "demo" / "task" / task_file, alice / task_file)
    (alice / ".gitignore").write_text("__pycache__/\n")
    (alice / "scorer.lock").write_text(f"numpy=={version} \\\n    {HASH}\n")
    toml = AGORA_TOML.replace("format = 2  # output needs a git-agora that reads [eval] format 2", "format = 3")
    toml = toml.replace('files = ["score.py", "corpus.py"]', 'files = ["score.py", "corpus.py", "scorer.lock"]')
    toml = toml.replace("timeout = 60", f'timeout = 60\nscorer = ["numpy"]\npython = "{PYTHON}"\nlock = "scorer.lock"')
    (alice / "agora.toml").write_text(toml + CI_TOML + f'keys = {{ ci = "{ci_secret(tmp)[1]}" }}\n')
    agora(alice, "init")
    agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result")
    return remote, alice


@pytest.mark.slow
def test_the_ci_refuses_a_scorer_that_differs_from_the_lock_and_verifies_under_one_that_matches(tmp_path):
    secret, _ = ci_secret(tmp_path)
    remote, _ = founded_with_a_lock(tmp_path, "other", "0.0.1")
    ci = make_clone(tmp_path, "ci-other", str(remote), "ci")
    refs = git(remote, "for-each-ref")
    for args in ((), ("--verify-only", "--out", str(tmp_path / "bundle"))):
        env = {"AGORA_CI_KEY": "" if args else secret, "AGORA_ACCOUNT": "ci"}
        out = agora(ci, "ci", "--no-site", *args, env=env, check=False, timeout=600)
        assert out.returncode == 4 and len(out.stderr.strip().splitlines()) == 1, out
        assert f"the scorer environment here is not the policy's: numpy {NUMPY} is installed here" in out.stderr
        assert "--require-hashes -r scorer.lock" in out.stderr and "nothing was rerun" in out.stderr
        assert git(remote, "for-each-ref") == refs  # nothing published
    assert not (tmp_path / "bundle").exists()

    remote, _ = founded_with_a_lock(tmp_path, "same", NUMPY)
    ci = make_clone(tmp_path, "ci-same", str(remote), "ci")
    done = run_ci(ci, secret, "--no-site", "--json").json()
    assert done["exit_code"] == 0 and [c["verdict"] for c in done["checked"]] == ["confirmed"], done


def test_a_template_brings_its_lock_and_keeps_a_ci_table_written_first(tmp_path):
    for name in ("autoresearch", "two-phase"):
        toml = tomllib.loads((files("git_agora") / "templates" / name / "agora.toml").read_text())["eval"]
        assert toml["format"] == 3 and toml["lock"] == "scorer.lock" and toml["lock"] in toml["files"]
        assert toml["pins"] == {"numpy": "installed"} and toml["python"] == "installed"
        parse_lock((files("git_agora") / "templates" / name / "scorer.lock").read_text())
    founder = tmp_path / "founder"
    founder.mkdir()
    git(founder, "init", "-q")
    key = tmp_path / "ci_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    public = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    (founder / "agora.toml").write_text(f'[ci]\naccounts = ["ci"]\nkeys = {{ ci = "{public}" }}\n')
    agora(founder, "init", "--template", "two-phase", account="alice")
    written = tomllib.loads((founder / "agora.toml").read_text())
    assert written["ci"]["keys"] == {"ci": public} and written["ci"]["accounts"] == ["ci"]
    assert written["eval"]["python"] == PYTHON and written["eval"]["lock"] == "scorer.lock"
    assert len(written["eval"]["pins"]["numpy"]) == 64 and (founder / "scorer.lock").is_file()
