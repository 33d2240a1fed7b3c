"""Git's conventions: man pages generated from the click commands, committed fresh and installed (regular
and editable) so that `git agora --help` opens them; `init --account` remembered like `git config`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agora_testing import git, source_copy
from git_agora.cli import COMMANDS
from git_agora.manpage import pages, write_pages

ROOT = Path(__file__).parents[1]
COMMITTED = ROOT / "man" / "man1"


def test_the_committed_pages_are_fresh(tmp_path):
    written = write_pages(tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in COMMITTED.glob("*.1"))
    for path in written:
        assert path.read_bytes() == (COMMITTED / path.name).read_bytes(), (
            f"man/man1/{path.name} is stale: run `python -m git_agora.manpage man/man1` and commit it"
        )


def test_a_page_for_the_program_and_every_command():
    texts = pages()
    assert set(texts) == {"git-agora.1"} | {f"git-agora-{name}.1" for name in COMMANDS}
    assert '.TH "GIT\\-AGORA\\-PUSH" "1"' in texts["git-agora-push.1"]
    assert "\\fB\\-\\-predict\\fR \\fILOW..HIGH\\fR" in texts["git-agora-push.1"]
    assert "\\fBgit agora hook install\\fR [OPTIONS] REPOSITORY" in texts["git-agora-hook.1"]
    for text in texts.values():
        assert all(not line.startswith(("'", ". ")) for line in text.splitlines())  # no stray requests


def test_pages_render_without_warnings():
    man = shutil.which("man")
    assert man, "man is not installed (apt-get install man-db; .ci/run installs it)"
    for path in sorted(COMMITTED.glob("*.1")):
        shown = subprocess.run(
            [man, "--warnings", "-l", str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "80"},
        )
        assert shown.returncode == 0 and shown.stderr == "", (path.name, shown.stderr)
        assert "NAME" in shown.stdout and "SEE ALSO" in shown.stdout


def installed(tmp_path: Path, source: Path, editable: bool) -> Path:
    """A new venv with `source` installed from the wheel its build backend makes (as `pip install [-e]`
    would, without network or dependencies); returns the venv's bin/. Nothing touches the test's own
    environment (`pip install --prefix` would uninstall its git-agora)."""
    build_system = tomllib.loads((source / "pyproject.toml").read_text())["build-system"]
    assert (build_system["build-backend"], build_system["backend-path"]) == ("agora_build", ["build_backend"])
    hook = "build_editable" if editable else "build_wheel"
    build = (
        f"import sys; sys.path.insert(0, 'build_backend'); import agora_build; print(agora_build.{hook}(sys.argv[1]))"
    )
    built = subprocess.run([sys.executable, "-c", build, str(tmp_path)], capture_output=True, text=True, cwd=source)
    assert built.returncode == 0, built.stderr
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    wheel = tmp_path / built.stdout.strip().splitlines()[-1]
    args = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-deps"]
    done = subprocess.run([*args, "--no-index", str(wheel)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return venv / "bin"


@pytest.mark.slow
@pytest.mark.parametrize("editable", [False, True], ids=["regular", "editable"])
def test_git_agora_help_opens_the_man_page_after_pip_install(tmp_path, editable):
    assert shutil.which("man"), "man is not installed (apt-get install man-db; .ci/run installs it)"
    bin_dir = installed(tmp_path, source_copy(tmp_path), editable)
    assert (bin_dir / "git-agora").is_file()
    assert (bin_dir.parent / "share" / "man" / "man1" / "git-agora-push.1").is_file()
    env = {k: v for k, v in os.environ.items() if k != "MANPATH"}  # man finds share/man next to bin/ on PATH
    env.update(PATH=f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", MANPAGER="cat", MANWIDTH="100")
    helped = subprocess.run(["git", "agora", "--help"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("GIT-AGORA(1)") and "No manual entry" not in helped.stderr
    assert "git agora push" in helped.stdout and "EXIT STATUS" in helped.stdout
    push = subprocess.run(["man", "git-agora-push"], capture_output=True, text=True, env=env)
    assert push.returncode == 0 and "--predict LOW..HIGH" in push.stdout


def test_init_account_is_remembered(tmp_path, remote):
    from agora_testing import agora

    clone = tmp_path / "c"
    clone.mkdir()
    git(clone, "init", "-q")
    git(clone, "remote", "add", "origin", str(remote))
    agora(clone, "init", "--account", "carol")
    assert git(clone, "config", "agora.account").strip() == "carol"
    assert "carol" in agora(clone, "whoami").stdout
    agora(clone, "post", "-m", "no --account needed any more", "--tag", "insight")
    assert agora(clone, "log", "--json").json()[0]["account"] == "carol"
