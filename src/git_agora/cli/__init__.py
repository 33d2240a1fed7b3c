"""`git agora`: the command line. Commands load lazily so that publishing stays fast to start: a plain
`git agora post` even starts without click (`quick`); every other command line goes through the click
group (`group.cli`)."""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn

COMMANDS = (  # each is `command` in cli/<name>.py, imported when it runs (`group.LazyGroup`)
    "init clone push post claim fetch sync checkout show log whoami status key hook index lineage stats analyze "
    "search site run verify ci demo launch"
).split()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    _print_names_as_their_bytes()
    from .quick import parse_post, run_post_quickly

    call = parse_post(args)
    if call is not None:
        code = run_post_quickly(call)
    else:
        from .common import run_cli
        from .group import cli

        code = run_cli(cli, args)
    if argv is not None:  # called by a program, which goes on
        sys.exit(code)
    end_process(code)


def end_process(code: int) -> NoReturn:
    """End the process with `code` as the interpreter's exit would, less its teardown: the threads are
    joined and the exit handlers run as at any exit, the output is flushed, then the process ends without
    freeing every object one by one (with pyarrow and numpy loaded, 50-90 ms of a command on a 2-core
    machine, most of it the final garbage collections). An interpreter without the two steps exits the
    usual way."""
    threading = sys.modules.get("threading")  # never imported: no thread was started
    join_threads = getattr(threading, "_shutdown", None) if threading is not None else lambda: None
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if join_threads is None or run_exit_handlers is None:
        sys.exit(code)
    try:
        join_threads()  # non-daemon threads, and the executors' idle workers told to end first
    except KeyboardInterrupt:  # interrupted while a thread finishes: end now, as asked (git's status for it)
        code = 130
    run_exit_handlers()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: started with that descriptor closed (`>&-`)
                stream.flush()
    except BrokenPipeError:  # the reader left (`git agora log | head`): what it wanted, it has
        pass
    except OSError:  # the interpreter's own status when its last flush fails (a full disk under `> file`)
        code = code or 120
    os._exit(code)


def _print_names_as_their_bytes() -> None:
    """A file name that is not UTF-8 (Linux and git accept any bytes) reaches Python as lone surrogates,
    which a UTF-8 locale's strict stdout refuses with a traceback: print its original bytes instead, as
    git does. stderr already escapes them."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and sys.stdout.errors == "strict":
        reconfigure(errors="surrogateescape")


def __getattr__(name: str):
    if name == "cli":  # the click group, imported only by those who ask for it
        from .group import cli

        return cli
    raise AttributeError(name)
