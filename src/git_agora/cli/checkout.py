"""`git agora checkout`: the exact tree of a contribution, remembered as the next push's parent."""

from __future__ import annotations

from pathlib import Path

import click

from .common import emit_json, json_option, open_project


@click.command("checkout")
@click.argument("sha", required=False)
@click.option("--best", is_flag=True, help="Check out the current best result (what `clone` checks out).")
@click.option("--checked", is_flag=True, help="With --best: when the best is unchecked, the best run-backed result.")
@click.option(
    "--worktree", type=click.Path(file_okay=False, path_type=Path), help="Check out into a new work tree DIR."
)
@json_option
@click.pass_context
def command(ctx, sha, best, checked, worktree, as_json):
    """Check out contribution SHA (detached), so the next `git agora push` builds on it; --best: the
    best result, with its status (and the best run-backed result when the best is unchecked)."""
    from ..ops.checkout import checkout, checkout_best

    if (sha is None) == (not best) or (checked and not best):
        raise click.UsageError("give a SHA or --best (--checked goes with --best)")
    project = open_project(ctx, as_json=as_json)
    done = checkout_best(project, checked, worktree) if best else checkout(project, sha, worktree)
    if as_json:
        emit_json(done.to_dict())
        return 0
    status = f" ({done.status})" if done.status else ""
    click.echo(f"checked out {done.sha[:12]} {done.title!r}{status} in {done.path}")
    if done.note:
        click.echo(f"note: {done.note}")
    return 0
