"""`git agora hook install REPO`: server-side enforcement for a bare repository that runs hooks."""

from __future__ import annotations

from pathlib import Path

import click

from .common import emit_json, json_option


@click.group("hook")
def command():
    """Server-side checks for hosts that run hooks (self-hosted git, Gitea)."""


@command.command("install")
@click.argument("repository", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace a pre-receive hook that is not git-agora's.")
@json_option
def install(repository, force, as_json):
    """Install a pre-receive hook in the bare REPOSITORY that refuses deleting or rewriting account logs
    and identities, and invalid or oversize contributions, with one line the pusher sees."""
    from ..ops.hook import install_hook

    hook = install_hook(repository, force)
    if as_json:
        emit_json({"hook": str(hook)})
    else:
        click.echo(f"installed {hook}")
    return 0
