"""`git agora sync`: push what is queued, then fetch."""

from __future__ import annotations

import click

from ..errors import ExitCode
from .common import account_option, emit_json, json_option, open_project
from .fetch import print_fetch


@click.command("sync")
@account_option
@json_option
@click.pass_context
def command(ctx, account, as_json):
    """Send contributions queued by earlier failed pushes, then fetch everyone's."""
    from ..ops.sync import one_blas_thread, sync

    with one_blas_thread():
        done = sync(open_project(ctx, account, as_json=as_json))
    if as_json:
        emit_json(done.to_dict())
    elif done.push.outcome.queued:
        click.echo(
            f"git agora: push failed ({done.push.detail or done.push.outcome.value}); "
            f"{done.push.queued} contribution(s) still queued",
            err=True,
        )
    else:
        click.echo(f"push: {done.push.outcome.value}")
    if done.fetch and not as_json:
        print_fetch(done.fetch)
    return ExitCode.QUEUED if done.push.outcome.queued else ExitCode.OK
