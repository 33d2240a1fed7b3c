"""`git agora whoami`: the account, remote and project this clone publishes to."""

from __future__ import annotations

import click

from .common import account_option, emit_json, json_option, open_project


@click.command("whoami")
@account_option
@json_option
@click.pass_context
def command(ctx, account, as_json):
    """Show the account you publish as, the remote, the setup and what is queued."""
    from ..ops.status import whoami
    from .render import print_identity

    identity = whoami(open_project(ctx, account, as_json=as_json))
    if as_json:
        emit_json(identity.to_dict())
    else:
        print_identity(identity)
    return 0
