"""`git agora show`: one contribution, whole."""

from __future__ import annotations

import click

from .common import emit_json, json_option, open_project


@click.command("show")
@click.argument("sha")
@json_option
@click.pass_context
def command(ctx, sha, as_json):
    """Show contribution SHA: account, tags, metrics, parents, metadata and description."""
    project = open_project(ctx)
    c = project.contribution(sha)
    data = contribution_dict(c)
    data["evidence"] = evidence_of(project, c.sha)
    if as_json:
        emit_json(data)
        return 0
    from datetime import datetime, timezone

    when = datetime.fromtimestamp(c.timestamp or 0, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    click.echo(f"contribution {c.sha}")
    click.echo(f"account      {c.account}")
    click.echo(f"date         {when}")
    click.echo(f"tags         {', '.join(c.tags)}")
    for name, value in c.metrics.items():
        click.echo(f"metric       {name} = {value:g}")
    if c.target:
        click.echo(f"verifies     {c.target} ({c.verdict.value})")
    for parent in c.parents:
        p = project.repo.contribution(parent)
        click.echo(f"parent       {parent[:12]} {p.account + ': ' + p.title if p else '(not a contribution)'}")
    ev = data["evidence"]
    if ev:
        click.echo(f"evidence     score {ev['score']:g}, {ev['children']} children, "
                   f"{ev['descendants']} descendants, {ev['status']}")
    else:
        click.echo("evidence     none: this commit is rejected (see `git agora log --rejected`)")
    if c.metadata:
        from ..contribution import encode_metadata

        click.echo(f"metadata     {encode_metadata(c.metadata)}")
    click.echo("")
    for line in c.description.splitlines():
        click.echo(f"    {line}")
    return 0


def contribution_dict(c) -> dict:
    return {
        "sha": c.sha,
        "account": c.account,
        "timestamp": c.timestamp,
        "title": c.title,
        "description": c.description,
        "tags": list(c.tags),
        "metrics": dict(c.metrics),
        "metadata": dict(c.metadata),
        "parents": list(c.parents),
        "target": c.target,
        "verdict": c.verdict.value if c.verdict else None,
        "tree": c.tree,
        "cross_refs": list(c.cross_refs),
    }


def evidence_of(project, sha: str) -> dict | None:
    """Evidence score and verification status of one contribution, from the index."""
    import pyarrow.compute as pc

    from ..frontier.evidence import evidence
    from ..index.store import load_index

    index = load_index(project.repo)
    table = evidence(index.contributions, index.config.tag_weights)
    row = table.filter(pc.equal(table["sha"], sha)).to_pylist()
    if not row:
        return None
    return {k: v for k, v in row[0].items() if k != "sha"}
