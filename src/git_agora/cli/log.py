"""`git agora log`: contributions, newest first, from the local index."""

from __future__ import annotations

import click

from .common import emit_json, json_option, open_project


@click.command("log")
@click.option("--account", "accounts", multiple=True, help="Only this account's contributions (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Only contributions with this tag (repeatable: any of them).")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many.")
@click.option("--rejected", is_flag=True, help="Show the invalid commits and why they were rejected.")
@json_option
@click.pass_context
def command(ctx, accounts, tags, limit, rejected, as_json):
    """List contributions, newest first."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..index.store import load_index

    project = open_project(ctx)
    _ = project.setup
    table = load_index(project.repo).contributions
    table = table.filter(pc.invert(table["valid"]) if rejected else table["valid"])
    if accounts:
        table = table.filter(pc.is_in(table["account"], value_set=pa.array(accounts, pa.string())))
    if tags:
        wanted = set(tags)
        mask = [bool(wanted.intersection(t)) for t in table["tags"].to_pylist()]
        table = table.filter(pa.array(mask, pa.bool_()))
    table = table.sort_by([("timestamp", "descending"), ("sha", "descending")]).slice(0, limit)
    rows = table.select(["sha", "account", "timestamp", "title", "tags", "metrics", "parents", "target", "verdict", "reasons"]).to_pylist()
    for row in rows:
        row["metrics"] = dict(row["metrics"] or [])
    if as_json:
        emit_json(rows)
        return 0
    if not rows:
        click.echo("no rejected commits" if rejected else "no contributions match")
        return 0
    for row in rows:
        metrics = " ".join(f"{k}={v:g}" for k, v in row["metrics"].items())
        verdict = f" {row['verdict']}→{row['target'][:8]}" if row["verdict"] else ""
        line = f"{row['sha'][:10]} {str(row['account'] or '?'):<12} {','.join(row['tags']):<18} {metrics}{verdict}  {row['title']}"
        click.echo(line)
        if rejected:
            for reason in row["reasons"]:
                click.echo(f"           rejected: {reason}")
    return 0
