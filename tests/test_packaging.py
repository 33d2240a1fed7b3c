"""Installable as users install tools: a wheel built from this tree, and one built from the sdist
`python -m build` makes, installed into a fresh virtual environment, give a working `git agora` with
its man pages and templates (what `pipx install` does too: a venv of its own, the console scripts on
PATH). Everything builds offline: `--no-isolation` (pip's `--no-build-isolation`) reuses this
environment's setuptools."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from agora_testing import source_copy

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_FILES = {
    "git_agora/templates/program.md",
    "git_agora/templates/autoresearch/prepare.py",
    "git_agora/templates/autoresearch/train.py",
    "git_agora/templates/autoresearch/agora.toml",
    "git_agora/templates/autoresearch/program.md",
    "git_agora/templates/autoresearch/gitignore",
    "git_agora/templates/autoresearch/scorer.lock",
    "git_agora/templates/two-phase/score.py",
    "git_agora/templates/two-phase/solve.py",
    "git_agora/templates/two-phase/agora.toml",
    "git_agora/templates/two-phase/program.md",
    "git_agora/templates/two-phase/gitignore",
    "git_agora/templates/two-phase/scorer.lock",
}


@pytest.mark.slow
def test_the_wheel_installs_a_working_git_agora_with_its_man_pages(tmp_path):
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-w", str(wheels), "-q"],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("git_agora-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"git_agora/demo/task/score.py", "git_agora/web/static/site.js", *TEMPLATE_FILES} <= set(names)
    assert "git_agora/py.typed" in names  # PEP 561: a caller's type checker reads the package's types
    assert not [n for n in names if n.endswith(".pyc")]  # a template's bytecode, left by running it, stays out
    pages = sorted(n.rsplit("/", 1)[1] for n in names if "/share/man/man1/" in n)
    assert pages == sorted(p.name for p in (ROOT / "man" / "man1").glob("*.1")) and "git-agora.1" in pages

    venv, env = fresh_venv_with(wheel, tmp_path)
    where = subprocess.run(["git", "agora", "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert where.returncode == 0 and "git agora, version" in where.stdout, where.stderr
    probe = subprocess.run(
        ["git-agora", "--version"], capture_output=True, text=True, env={**env, "PYTHONVERBOSE": "0"}, cwd=tmp_path
    )
    assert probe.returncode == 0
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import git_agora; print(git_agora.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    site = next((venv / "lib").glob("python*/site-packages"))
    assert str(site) in imported.stdout, imported  # the wheel's copy, not the source tree's
    clone = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    (clone / "m.py").write_text("x = 1\n")
    init = subprocess.run(
        ["git", "agora", "init", "--metric", "m", "--account", "al"], capture_output=True, text=True, env=env, cwd=clone
    )
    assert init.returncode == 0 and init.stdout.startswith("setup "), init.stderr
    man = venv / "share" / "man" / "man1" / "git-agora-verify.1"
    assert man.exists() and "no\\-sandbox" in man.read_text()


def fresh_venv_with(wheel: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A new virtual environment with `wheel` installed (the core's dependencies come from this
    environment: nothing is downloaded); and an environment whose PATH starts with its bin/."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "deps.pth").write_text("\n".join(ours) + "\n")  # the test venv's packages, after the wheel's own
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-deps",
            "-q",
            "--no-index",
            str(wheel),
        ],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    return venv, {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "PYTHONNOUSERSITE": "1"}


def python_build(*args: str, cwd: Path) -> None:
    """`python -m build` offline: this environment's setuptools, no download (run outside the tree,
    whose build/ folder would shadow the `build` package)."""
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--skip-dependency-check", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]


@pytest.mark.slow
def test_the_sdist_holds_everything_and_its_wheel_installs_a_working_git_agora(tmp_path):
    pytest.importorskip("build", reason="python -m build needs the build package (the test extra)")
    source = source_copy(tmp_path)
    python_build("--sdist", "--outdir", str(tmp_path / "dist"), str(source), cwd=tmp_path)
    (sdist,) = (tmp_path / "dist").glob("git_agora-*.tar.gz")
    with tarfile.open(sdist) as archive:
        top = sdist.name.removesuffix(".tar.gz")
        members = {m.name.removeprefix(f"{top}/") for m in archive.getmembers() if m.isfile()}
        archive.extractall(tmp_path / "unpacked", filter="data")
    sources = {
        str(p.relative_to(source))
        for folder in ("src/git_agora", "src/hybridlm")
        for p in (source / folder).rglob("*")
        if p.is_file()
    }
    pages = {f"man/man1/{p.name}" for p in (ROOT / "man" / "man1").glob("*.1")}
    assert {"pyproject.toml", "README.md", "build_backend/agora_build.py", *pages} <= members
    assert {f"src/{name}" for name in TEMPLATE_FILES} <= sources and not sources - members, sources - members
    assert not [m for m in members if "__pycache__" in m or m.endswith(".pyc")]

    unpacked = tmp_path / "unpacked" / top  # the wheel users get from the sdist (pip install git-agora.tar.gz)
    python_build("--wheel", "--outdir", str(tmp_path / "wheels"), str(unpacked), cwd=tmp_path)
    (wheel,) = (tmp_path / "wheels").glob("git_agora-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert TEMPLATE_FILES <= names and {"git_agora/cli/init.py", "git_agora/ops/templates.py"} <= names
    assert {f"git_agora-{top.split('-')[1]}.data/data/share/{p}" for p in pages} <= names

    venv, env = fresh_venv_with(wheel, tmp_path)
    version = subprocess.run(["git", "agora", "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert version.returncode == 0 and "git agora, version" in version.stdout, version.stderr
    assert {p.name for p in (venv / "share" / "man" / "man1").glob("*.1")} == {
        p.removeprefix("man/man1/") for p in pages
    }
    clone = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    init = subprocess.run(
        ["git", "agora", "init", "--template", "two-phase", "--account", "al"],
        capture_output=True,
        text=True,
        env=env,
        cwd=clone,
    )
    assert init.returncode == 0 and init.stdout.startswith("setup ") and "pinned: numpy" in init.stderr, init.stderr
    assert sorted(p.name for p in clone.iterdir()) == [  # the installed copy's bytecode stays behind
        ".git",
        ".gitignore",
        "agora.toml",
        "program.md",
        "score.py",
        "scorer.lock",
        "solve.py",
    ]
