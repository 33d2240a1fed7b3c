"""`git agora lineage`: where a contribution came from."""

from __future__ import annotations

import click

from ..errors import AgoraError
from .common import emit_json, json_option, open_project


@click.command("lineage")
@click.argument("sha")
@json_option
@click.pass_context
def command(ctx, sha, as_json):
    """Ancestry of SHA: size, accounts, cross-account edges, reproduced ancestors, milestone path."""
    from ..frontier.lineage import lineage
    from ..index.store import load_index

    project = open_project(ctx)
    target = project.contribution(sha).sha
    index = load_index(project.repo)
    config = index.config
    try:
        result = lineage(index.contributions, target, direction=config.direction, tolerance=config.tolerance)
    except KeyError:
        raise AgoraError(f"{sha} is not a valid contribution (see `git agora log --rejected`)") from None
    if as_json:
        emit_json(result.to_dict())
        return 0
    titles = dict(zip(index.contributions["sha"].to_pylist(), index.contributions["title"].to_pylist()))
    click.echo(f"lineage of {target[:12]} {titles.get(target, '')!r}")
    click.echo(f"  ancestry      {result.size} contributions by {len(result.accounts)} accounts")
    click.echo(f"  parent edges  {result.edges}, {result.cross_account_edges} across accounts")
    click.echo(f"  reproduced    {len(result.reproduced)} ancestors independently confirmed")
    metric = config.metric or "metric"
    click.echo(f"  milestones    {len(result.milestones)} new bests of {metric}:")
    for m in result.milestones:
        click.echo(f"    {m.sha[:10]} {m.value:<10.6g} {m.account:<12} {titles.get(m.sha, '')[:60]}")
    return 0
