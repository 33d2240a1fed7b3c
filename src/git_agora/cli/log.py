"""`git agora log`: contributions, newest first, from the local index."""

from __future__ import annotations

import click

from ..visible import cut, visible
from .common import emit_json, json_option, open_project

TITLE_CHARS = 200  # a title is cut here (its description may reach the protocol's 64 KiB in one line)


@click.command("log")
@click.option("--account", "accounts", multiple=True, help="Only this account's contributions (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Only contributions with this tag (repeatable: any of them).")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many.")
@click.option("--rejected", is_flag=True, help="Show the invalid commits and why they were rejected.")
@json_option
@click.pass_context
def command(ctx, accounts, tags, limit, rejected, as_json):
    """List contributions, newest first."""
    from ..ops.history import log

    project = open_project(ctx, as_json=as_json)
    entries = log(project, accounts, tags, limit, rejected)
    if as_json:
        emit_json([e.to_dict() for e in entries])
        return 0
    if rejected:
        from ..ops.status import tampering

        for report in tampering(open_project(ctx)):
            click.secho(f"tampering  {report.describe()}", fg="red")
    if not entries:
        click.echo("no rejected commits" if rejected else "no contributions match" + _did_you_mean(project, tags))
    for e in entries:
        metrics = " ".join(f"{k}={v:g}" for k, v in e.metrics.items())
        verdict = f" {e.verdict}→{(e.target or '')[:8]}" if e.verdict else ""
        account = f"{e.account} (looks like {e.looks_like})" if e.looks_like else str(e.account or "?")
        title = cut(e.title or "", TITLE_CHARS)
        line = f"{e.sha[:10]} {account:<12} {','.join(e.tags):<18} {metrics}{verdict}  {title}"
        click.echo(visible(line))
        for reason in e.reasons if rejected else ():
            click.echo(f"           rejected: {visible(reason)}")
    return 0


def _did_you_mean(project, tags) -> str:
    """`; did you mean --tag NAME?` when a --tag that matched nothing is close to a known tag."""
    from ..ops.names import suggest_tag

    near = suggest_tag(project, list(tags)) if tags else None
    return f"; did you mean --tag {near}?" if near and near not in tags else ""
