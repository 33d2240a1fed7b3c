"""`git agora`: the command line. Commands load lazily so that publishing stays fast to start: a plain
`git agora post` even starts without click (`quick`); every other command line goes through the click
group (`group.cli`)."""

from __future__ import annotations

import sys

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
        run_post_quickly(call, end_process=argv is None)
    from .common import run_cli
    from .group import cli

    sys.exit(run_cli(cli, args))


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
