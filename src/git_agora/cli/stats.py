"""`git agora stats`: the statistics a paper about the run would report."""

from __future__ import annotations

import click

from .common import emit_json, json_option, open_project


@click.command("stats")
@json_option
@click.pass_context
def command(ctx, as_json):
    """Graph statistics: nodes, edges, components, tags, bests, verifications, equal scores."""
    from ..ops.history import stats
    from .render import print_stats

    data = stats(open_project(ctx, as_json=as_json))
    if as_json:
        emit_json(data.to_dict())
    else:
        print_stats(data)
    return 0
