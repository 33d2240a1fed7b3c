"""`git agora claim SHA -m "what I am trying" --for 2h`: say what you work on before you spend compute."""

from __future__ import annotations

import time

import click

from ..errors import AgoraError
from .common import account_option, emit_json, json_option, open_project, report_published


@click.command("claim")
@click.argument("sha", required=False)
@click.option("-m", "--message", "description", default="", help="What you are trying (the first line is the title).")
@click.option("--for", "duration", default="2h", show_default=True, help="How long the claim lasts: 30m, 2h, 1d.")
@click.option("--release", is_flag=True, help="End your active claim on SHA now.")
@click.option("--list", "listing", is_flag=True, help="List the active claims (also shown by analyze).")
@account_option
@json_option
@click.pass_context
def command(ctx, sha, description, duration, release, listing, account, as_json):
    """Claim SHA: publish a `wip` contribution on it that says what you try and until when. The slots of
    `analyze` and `search` show active claims; claims never count as evidence."""
    from ..ops.claim import claim, claims
    from ..ops.claim import release as release_claim

    project = open_project(ctx, account, as_json=as_json)
    if listing:
        active = claims(project)
        if as_json:
            emit_json([c.to_dict() for c in active])
        for c in [] if as_json else active:
            left = max(0, c.until - int(time.time())) // 60
            click.echo(f"{c.target[:10]} {c.account:12} {left:4d} min left  {c.title}")
        if not active and not as_json:
            click.echo("no active claims")
        return 0
    if not sha:
        raise AgoraError("which contribution? git agora claim SHA -m 'what I am trying' --for 2h")
    if release:
        return report_published(release_claim(project, sha), as_json, "released")
    return report_published(claim(project, sha, description, duration), as_json, "claimed")
