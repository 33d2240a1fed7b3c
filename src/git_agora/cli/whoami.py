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
    from ..refs.sync import queued_entries

    project = open_project(ctx, account)
    info = {"account": project.account, "remote": project.remote}
    setup = project.find_setup() if project.repo.git.config_get("agora.setup") is None else project.setup
    info["setup"] = setup
    info["base"] = project.base if setup else None
    info["queued"] = len(queued_entries(project.repo, project.account, project.remote))
    if as_json:
        emit_json(info)
    else:
        for key, value in info.items():
            click.echo(f"{key:8} {value if value is not None else '-'}")
    return 0
