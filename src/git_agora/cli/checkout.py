"""`git agora checkout`: the exact tree of a contribution, remembered as the next push's parent."""

from __future__ import annotations

from pathlib import Path

import click

from .common import emit_json, json_option, open_project


@click.command("checkout")
@click.argument("sha")
@click.option("--worktree", type=click.Path(file_okay=False, path_type=Path), help="Check out into a new work tree DIR.")
@json_option
@click.pass_context
def command(ctx, sha, worktree, as_json):
    """Check out contribution SHA (detached), so the next `git agora push` builds on it."""
    from ..project import Project
    from ..workspace import checkout

    project = open_project(ctx)
    contribution = project.contribution(sha)
    path = checkout(project.repo, contribution.sha, worktree)
    Project.open(path).set_base(contribution.sha)
    if as_json:
        emit_json({"sha": contribution.sha, "path": str(path)})
    else:
        click.echo(f"checked out {contribution.sha[:12]} {contribution.title!r} in {path}")
    return 0
