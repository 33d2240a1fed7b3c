"""`git agora lineage`: where a contribution came from."""

from __future__ import annotations

import click

from .common import emit_json, json_option, open_project


@click.command("lineage")
@click.argument("sha")
@json_option
@click.pass_context
def command(ctx, sha, as_json):
    """Ancestry of SHA: size, accounts, cross-account edges, reproduced ancestors, milestone path."""
    from ..ops.history import lineage, titles
    from .render import print_lineage

    project = open_project(ctx, as_json=as_json)
    result = lineage(project, sha)
    if as_json:
        emit_json(result.to_dict())
    else:
        print_lineage(result, titles(project), project.config.metric)
    return 0
