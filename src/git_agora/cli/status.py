"""`git agora status`: who and where, and the remote's tampering this clone saw and not yet acknowledged."""

from __future__ import annotations

import click

from .common import account_option, emit_json, json_option, open_project


@click.command("status")
@click.option("--ack", "ack", multiple=True, metavar="ID", help="Acknowledge a tamper report ('all': every one).")
@account_option
@json_option
@click.pass_context
def command(ctx, ack, account, as_json):
    """Show the account, remote, setup and queue, and every rewritten or deleted remote log seen here
    (with where its old tip is kept) until you acknowledge it with --ack ID."""
    from ..ops.status import acknowledge, status
    from .render import print_identity

    project = open_project(ctx, account, as_json=as_json)
    marked = acknowledge(project, list(ack)) if ack else []
    done = status(project)
    if as_json:
        emit_json({**done.to_dict(), "acknowledged": [r.id for r in marked]})
        return 0
    print_identity(done.identity)
    for report in marked:
        click.echo(f"acknowledged {report.id}")
    for report in done.tamper:
        click.secho(f"tampering {report.describe()}", fg="red")
    if not done.tamper:
        click.echo("tampering none seen (or all acknowledged)")
    for note in done.notes:
        click.secho(f"warning  {note}", fg="yellow")
    return 0
