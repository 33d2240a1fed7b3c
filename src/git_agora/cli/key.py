"""`git agora key`: the key you sign with, and `key rotate` to move your account to a new one."""

from __future__ import annotations

from pathlib import Path

import click

from .common import account_option, emit_json, json_option, open_project


@click.group("key")
def command():
    """Your account's SSH signing key."""


@command.command("show")
@account_option
@json_option
@click.pass_context
def show(ctx, account, as_json):
    """Show the key you sign with and the keys your identity announces (oldest first)."""
    from ..ops.keys import key_info

    info = key_info(open_project(ctx, account, as_json=as_json))
    if as_json:
        emit_json(info.to_dict())
        return 0
    click.echo(f"account  {info.account}")
    click.echo(f"key      {info.path}{' (git config agora.signingkey)' if info.configured else ''}")
    click.echo(f"public   {info.public}")
    for n, public in enumerate(info.chain, 1):
        click.echo(f"identity {n}. {public}")
    return 0


@command.command("rotate")
@click.option("--key", "new_key", type=click.Path(path_type=Path), help="Rotate to this private key file.")
@click.option("--no-push", is_flag=True, help="Do not push the new identity now (the next push sends it).")
@account_option
@json_option
@click.pass_context
def rotate(ctx, new_key, no_push, account, as_json):
    """Announce a new signing key, signed by the current one, and sign with it from now on. Without --key
    a new ed25519 key replaces the default one (the old one is kept beside it, renamed). Work signed with
    earlier keys stays valid: this rotates, it does not revoke."""
    from ..ops.keys import rotate_key

    project = open_project(ctx, account, as_json=as_json)
    done = rotate_key(project, new_key, push=not no_push)
    if as_json:
        emit_json(done.to_dict())
        return 0
    click.echo(f"{done.account} now signs with {done.path}")
    click.echo(f"identity {done.identity[:12]} announces {done.new_public.split()[1][:24]}..., signed by the old key")
    if done.retired:
        click.echo(f"the old key is kept as {done.retired}")
    for notice in filter(None, [done.push_problem and f"not pushed: {done.push_problem}", done.members_notice]):
        click.secho(notice, fg="yellow", err=True)
    return 0
