"""`git agora clone`: join an existing project."""

from __future__ import annotations

from pathlib import Path

import click

from .common import account_option, cli_feedback, emit_json, json_option


@click.command("clone")
@click.argument("url")
@click.argument("directory", required=False, type=click.Path(file_okay=True, path_type=Path))
@click.option("--setup", metavar="SHA", help="The project's setup must be this one; it is pinned whatever else.")
@click.option(
    "--checked", is_flag=True, help="When the best is unchecked (no run record), check out the best run-backed result."
)
@account_option
@json_option
@click.pass_context
def command(ctx, url, directory, setup, checked, account, as_json):
    """Clone the Agora project at URL into DIRECTORY (default: named after the URL): fetch every
    account log, pin the setup (git config agora.setup), check out the current best result (the
    setup when nothing is scored yet) and remember the account (git config agora.account)."""
    from ..ops.clone import clone, default_directory

    root = ctx.find_root()
    if account is None and root.get_parameter_source("account") == click.core.ParameterSource.COMMANDLINE:
        account = root.params["account"]  # `git agora --account NAME clone URL`
    directory = Path(root.obj.get("directory", ".")) / (directory or default_directory(url))
    done = clone(url, directory, setup, account, cli_feedback(as_json), checked)
    if as_json:
        emit_json(done.to_dict())
        return 0
    click.echo(f"cloned {done.url} into {done.directory}")
    click.echo(f"setup        {done.setup} (pinned: git config agora.setup)")
    which = "the best run-backed result" if done.best_result else "the best result"
    what = (
        f"{which}, {done.metric} = {done.value:.6g}; {done.status}" if done.best else "the setup: nothing is scored yet"
    )
    click.echo(f"checked out  {done.checked_out[:12]} {done.title} ({what})")
    if done.note:
        click.echo(f"note         {done.note}")
    click.echo(f"contributions {done.contributions} by {done.accounts} account(s)")
    if done.account:
        click.echo(f"account      {done.account} (remembered: git config agora.account)")
    else:
        click.echo("account      none yet: pass --account NAME or run `git config agora.account NAME` in the clone")
    click.echo(f"next: cd {directory} && git agora analyze")
    return 0
