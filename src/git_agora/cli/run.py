"""`git agora run`: evaluate exactly what `push` would publish, from a clean export."""

from __future__ import annotations

import click

from ..errors import AgoraError
from .common import emit_json, json_option, open_project


@click.command("run")
@click.option("--timeout", type=float, help="Seconds before the evaluation is stopped (default: the project's).")
@json_option
@click.pass_context
def command(ctx, timeout, as_json):
    """Run the project's evaluation command on a clean export of the work tree (tracked and
    untracked, non-ignored files: the tree `git agora push` would publish), not the directory itself."""
    from ..evaluate import evaluate_tree
    from ..workspace import snapshot

    project = open_project(ctx)
    with snapshot(project.repo) as snap:
        run = evaluate_tree(project.repo, project.config, snap.tree, timeout)
    if as_json:
        emit_json({**run.to_dict(), "tree": snap.tree})
    elif run.ok:
        for name, value in run.metrics.items():
            click.echo(f"{name} = {value:.6g}")
        click.echo(f"({run.duration_s:.1f} s, clean export of tree {snap.tree[:12]})")
    if not run.ok:
        raise AgoraError(f"evaluation failed: {run.error}")
    return 0
