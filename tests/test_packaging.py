"""Installable as users install tools: a wheel built from this tree, installed into a fresh virtual
environment, gives a working `git agora` with its man pages (what `pipx install` does too: a venv of
its own, the console scripts on PATH)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


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
    assert {"git_agora/demo/task/score.py", "git_agora/web/static/site.js", "git_agora/templates/program.md"} <= set(
        names
    )
    pages = sorted(n.rsplit("/", 1)[1] for n in names if "/share/man/man1/" in n)
    assert pages == sorted(p.name for p in (ROOT / "man" / "man1").glob("*.1")) and "git-agora.1" in pages

    venv = tmp_path / "venv"  # the core's dependencies come from this environment: nothing is downloaded
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
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "PYTHONNOUSERSITE": "1"}
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
