"""`git agora fetch` and `sync` load numpy's BLAS with one thread (`ops.sync.one_blas_thread`); no
later child process inherits the setting, and a library caller's process (`ci` goes on to multiply
matrices) keeps its threads.

Each command runs in a fresh interpreter (the test process has loaded numpy already), which prints
what the loaded OpenBLAS says of its threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import git_agora as agora
from agora_testing import make_clone

SRC = str(Path(__file__).resolve().parents[1] / "src")

SCRIPT = """
    import ctypes, json, os, subprocess, sys
    {before}
    {fetch}
    blas = [line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line]
    threads = getattr(ctypes.CDLL(blas[0]), "scipy_openblas_get_num_threads64_", None) if blas else None
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"],
        capture_output=True, text=True,
    )
    print(json.dumps({{
        "threads": threads() if threads else None,
        "here": os.environ.get("OPENBLAS_NUM_THREADS"),
        "child": child.stdout.strip(),
    }}))
"""
COMMAND = "from git_agora.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit as exc:\n    assert not exc.code"
FETCH = COMMAND.format(argv=["fetch"])
LIBRARY = "import git_agora as agora\nagora.fetch(agora.open_project('.'))"


@pytest.fixture
def news(tmp_path, remote) -> Path:
    """bob's clone, one insight behind alice's project."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    project = agora.open_project(a)
    agora.init_project(project, metric="bpc", direction="min", eval_command="true", tolerance=0.01)
    b = make_clone(tmp_path, "b", str(remote), "bob")
    assert agora.fetch(agora.open_project(b)).new_contributions == 1
    agora.post(project, "an insight bob has not seen", ["insight"], parents=[project.setup])
    return b


def in_fresh_interpreter(
    clone: Path, fetch: str = COMMAND.format(argv=["fetch"]), before: str = "", **env: str
) -> dict:
    script = textwrap.dedent(SCRIPT).format(before=before, fetch=fetch)
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    environment.update(PYTHONPATH=SRC, **env)
    done = subprocess.run([sys.executable, "-c", script], cwd=clone, env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "1 new contribution" in done.stdout or fetch == LIBRARY
    found = json.loads(done.stdout.splitlines()[-1])
    if found["threads"] is None:
        pytest.skip("this numpy's BLAS is not OpenBLAS with scipy_openblas's names")
    return found


def default_blas_threads() -> int:
    """What OpenBLAS starts with in an interpreter that sets nothing (one thread per core)."""
    script = (
        "import ctypes, numpy\n"
        "blas = [line.split()[-1] for line in open('/proc/self/maps') if 'openblas' in line]\n"
        "print(ctypes.CDLL(blas[0]).scipy_openblas_get_num_threads64_())\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.parametrize("argv", [["fetch"], ["sync"]])
def test_the_command_loads_numpy_with_one_blas_thread_and_children_never_see_the_setting(news, argv):
    found = in_fresh_interpreter(news, COMMAND.format(argv=argv))
    assert found["threads"] == 1
    assert found["here"] is None and found["child"] == "None"


def test_a_users_setting_is_kept(news):
    found = in_fresh_interpreter(news, OPENBLAS_NUM_THREADS="2")
    assert found["threads"] == min(2, default_blas_threads())  # OpenBLAS starts no more threads than cores
    assert found["here"] == "2" and found["child"] == "2"


def test_a_library_caller_keeps_its_blas_threads(news):
    assert in_fresh_interpreter(news, LIBRARY)["threads"] == default_blas_threads()


def test_a_caller_with_threads_of_its_own_keeps_its_environment(news):
    """Another thread of the caller may start a child during the fetch: the setting is never made."""
    running = "import threading\nthreading.Thread(target=threading.Event().wait, daemon=True).start()"
    assert in_fresh_interpreter(news, before=running)["threads"] == default_blas_threads()


def test_numpy_loaded_before_the_fetch_is_left_as_it_is(news):
    found = in_fresh_interpreter(news, before="import numpy")
    assert found["threads"] == default_blas_threads()
    assert found["here"] is None
