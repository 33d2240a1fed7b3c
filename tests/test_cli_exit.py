"""`git agora` as the process's entry point ends without the interpreter's teardown (`cli.end_process`):
what any exit does must still happen (threads joined, exit handlers run, output flushed, the status kept),
and only the freeing of what is left is skipped."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ENDING = """
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from git_agora.cli import end_process

out = Path(sys.argv[1])

class Finalized:
    def __del__(self):
        (out / "teardown").write_text("ran")

kept = Finalized()  # freed only by the interpreter's teardown
idle = ThreadPoolExecutor(1)  # never shut down: its worker waits for work until the exit tells it to end
idle.submit(lambda: None).result()
ending = threading.Event()
worker = threading.Thread(target=lambda: (ending.wait(), time.sleep(0.2), (out / "thread").write_text("done")))
worker.start()
atexit.register(lambda: (out / "atexit").write_text("ran"))
print("buffered, not flushed", end="")
ending.set()
"""


BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output held until flushed


def run(script: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=BUFFERED,
    )


def test_the_entry_point_ends_as_an_exit_would_less_the_teardown(tmp_path):
    r = run(ENDING + "end_process(3)\n", tmp_path)
    assert r.returncode == 3, r.stderr
    assert r.stdout == "buffered, not flushed" and r.stderr == ""
    assert (tmp_path / "thread").read_text() == "done"  # joined before the end, as at any exit
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "teardown").exists()  # the teardown, skipped


def test_the_usual_exit_runs_the_teardown_the_entry_point_skips(tmp_path):
    r = run(ENDING + "sys.exit(3)\n", tmp_path)
    assert r.returncode == 3 and r.stdout == "buffered, not flushed"
    assert {p.name for p in tmp_path.iterdir()} == {"thread", "atexit", "teardown"}


STUCK_AT_EXIT = """
import os, signal, threading, time
from git_agora.cli import end_process

signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as at a terminal (a background job ignores it)

def stuck():  # a thread that never ends; once the exit waits for it, the user presses Ctrl-C
    while not getattr(threading, "_SHUTTING_DOWN", True):
        time.sleep(0.01)
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGINT)
    threading.Event().wait()

threading.Thread(target=stuck).start()
end_process(0)
"""


def test_an_interrupt_while_the_exit_waits_for_a_thread_ends_the_process():
    r = subprocess.run([sys.executable, "-c", STUCK_AT_EXIT], capture_output=True, text=True, timeout=120)
    assert r.returncode == 130 and "Traceback" not in r.stderr


def left_reader(ending: str) -> tuple[int, bytes]:
    """The status and stderr of a command whose output is still buffered when its reader leaves
    (`git agora log | head`)."""
    script = f"import sys\nfrom git_agora.cli import end_process\nprint('x' * 100)\nsys.stdin.readline()\n{ending}\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=BUFFERED,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves before the output is flushed
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    return proc.wait(timeout=60), proc.stderr.read()


def test_a_reader_that_left_costs_no_traceback():
    assert left_reader("end_process(0)") == (0, b"")
    status, said = left_reader("sys.exit(0)")  # the usual exit complains, and changes the status
    assert status == 120 and b"BrokenPipeError" in said


@pytest.mark.parametrize("closed", [1, 2])
def test_a_closed_output_descriptor_ends_as_the_usual_exit_does(closed):
    """Started with stdout or stderr closed (`>&-`), Python holds None for it: nothing to flush there."""
    script = "import sys\nfrom git_agora.cli import end_process\nprint('x', file=sys.stderr)\nend_process(3)\n"
    closing = "import os, subprocess, sys\n"
    closing += f"os.close({closed})\n"
    closing += f"sys.exit(subprocess.run([sys.executable, '-c', {script!r}], close_fds=True).returncode)\n"
    r = subprocess.run([sys.executable, "-c", closing], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr


def test_commands_end_through_it_with_their_status(tmp_path):
    """The console script's `main()`: a failing command's status and its one line survive the ending."""
    script = "import sys\nfrom git_agora.cli import main\nsys.argv = ['git-agora', 'show', 'nope']\nmain()\n"
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert r.stderr.startswith("git agora: ") and len(r.stderr.strip().splitlines()) == 1
