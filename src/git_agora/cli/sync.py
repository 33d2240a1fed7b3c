"""`git agora sync`: push what is queued, then fetch."""

from __future__ import annotations

import click

from ..errors import ExitCode
from .common import account_option, emit_json, json_option, open_project
from .fetch import fetch_and_index, fetch_report, print_fetch


@click.command("sync")
@account_option
@json_option
@click.pass_context
def command(ctx, account, as_json):
    """Send contributions queued by earlier failed pushes, then fetch everyone's."""
    from ..refs.sync import push_log

    project = open_project(ctx, account)
    pushed = push_log(project.repo, project.account, project.remote)
    fetched = fetch_and_index(project) if not pushed.outcome.queued else None
    if as_json:
        emit_json({
            "push": pushed.outcome.value,
            "queued": pushed.queued,
            "detail": pushed.detail,
            "fetch": fetch_report(fetched) if fetched else None,
        })
    else:
        if pushed.outcome.queued:
            click.echo(f"git agora: push failed ({pushed.detail or pushed.outcome.value}); "
                       f"{pushed.queued} contribution(s) still queued", err=True)
        else:
            click.echo(f"push: {pushed.outcome.value}")
        if fetched:
            print_fetch(fetched)
    return ExitCode.QUEUED if pushed.outcome.queued else ExitCode.OK
