"""`git agora checkout`: the exact tree of a contribution, remembered as the next push's parent."""

from __future__ import annotations

from pathlib import Path

import click

from .common import emit_json, json_option, open_project


@click.command("checkout")
@click.argument("sha")
@click.option(
    "--worktree", type=click.Path(file_okay=False, path_type=Path), help="Check out into a new work tree DIR."
)
@json_option
@click.pass_context
def command(ctx, sha, worktree, as_json):
    """Check out contribution SHA (detached), so the next `git agora push` builds on it."""
    from ..ops.checkout import checkout

    done = checkout(open_project(ctx, as_json=as_json), sha, worktree)
    if as_json:
        emit_json(done.to_dict())
    else:
        click.echo(f"checked out {done.sha[:12]} {done.title!r} in {done.path}")
    return 0
