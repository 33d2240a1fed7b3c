"""`git agora init`: create the setup contribution and publish it."""

from __future__ import annotations

from pathlib import Path

import click

from .common import account_option, json_option, open_project, report_published


@click.command("init")
@click.option("--name", help="Project name (default: the directory name).")
@click.option("--metric", help="Name of the primary metric, e.g. bpb.")
@click.option("--direction", type=click.Choice(["min", "max"]), help="Whether the metric is minimised or maximised.")
@click.option(
    "--eval", "eval_command", help="Command that evaluates a checkout and prints a JSON object with the metric."
)
@click.option("--tolerance", type=float, help="Reproduction tolerance of the metric (differences below it are noise).")
@click.option(
    "--brief",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File to publish as program.md, the brief.",
)
@click.option("--remote", help="Git remote to publish to (default: origin if it exists).")
@account_option
@json_option
@click.pass_context
def command(ctx, name, metric, direction, eval_command, tolerance, brief, remote, account, as_json):
    """Create the setup contribution: the current files plus agora.toml and program.md; the account
    is remembered in the clone's git config."""
    from ..ops.init import init_project

    project = open_project(ctx, account, remote, as_json=as_json)
    published = init_project(project, name, metric, direction, eval_command, tolerance, brief, remote)
    return report_published(published, as_json, "setup")
