"""The click group of `git agora`: commands load lazily (`COMMANDS`), so each starts with only its own
imports."""

from __future__ import annotations

import importlib
import importlib.util

import click

from . import COMMANDS


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if _module_exists(name)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not _module_exists(name):
            return None
        return importlib.import_module(f"git_agora.cli.{name}").command

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """An unknown command names the nearest one, and `-h` (git takes `git agora --help` for itself)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            hint = f" Did you mean '{near[0]}'?" if near else ""
            raise click.UsageError(f"'{name}' is not a git agora command.{hint} See 'git agora -h'.", ctx)
        return super().resolve_command(ctx, args)


def _module_exists(module: str) -> bool:
    return importlib.util.find_spec(f"git_agora.cli.{module}") is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--account",
    envvar="AGORA_ACCOUNT",
    help="Publish as this account (else AGORA_ACCOUNT or git config agora.account).",
)
@click.option("-C", "directory", type=click.Path(file_okay=False), help="Run as if started in this directory.")
@click.version_option(package_name="git-agora")
@click.pass_context
def cli(ctx: click.Context, account: str | None, directory: str | None) -> None:
    """git-agora: research contributions as Git commits, shared over any Git remote.

    Every result, insight, hypothesis and verification is a signed commit under refs/agora/, appended
    to its account's log and shared with plain git push and fetch: Git is the only state. The loop:
    `git agora analyze`, `git agora checkout SHA`, change something, `git agora push --check --predict
    LOW..HIGH -m "..." --tag result`, and `git agora verify SHA` for others' results."""
    ctx.obj = {"account": account, "directory": directory or "."}
