"""`git agora search`: has this been tried? The nearest contributions to a free-text idea."""

from __future__ import annotations

import click

from ..visible import visible
from .common import emit_json, json_option, open_project
from .render import cut, utc_minute


@click.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--model", help="Sentence-transformers model name or path ('hashing': the lexical fallback).")
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="[-]TAG",
    help="Only contributions with this tag (repeatable: any of them); -TAG leaves that tag out (--tag -verification).",
)
@json_option
@click.pass_context
def command(ctx, query, limit, model, tags, as_json):
    """Contributions closest to QUERY by embedding similarity; those without a vector yet (see
    `git agora index --embed`) and every contribution without embeddings are matched by keyword."""
    from ..ops.analyze import search

    text = " ".join(query)
    result = search(open_project(ctx, as_json=as_json), text, limit, model, tags=tags)
    if as_json:
        emit_json(result.to_dict())
        return 0
    model = f", {result.model}" if result.model else ""
    via = f" via {result.encoder}" if result.encoder else ""
    click.echo(f"nearest to {visible(repr(text))} ({result.method}{model}{via}):")
    if result.note:
        click.echo(f"  note: {visible(result.note)}")
    for hit in result.hits:
        metric = "-" if hit.metric is None else f"{hit.metric:.6g}"
        by = " (keyword)" if hit.method != result.method else ""
        account = cut(hit.account, 12)
        click.echo(f"  {hit.score:5.2f}  {hit.sha[:10]} {metric:>9}  {account:<12} {cut(hit.title, 60)}{by}")
        for claim in hit.claimed_by:
            until = utc_minute(claim["until"])
            click.echo(f"         claimed by {visible(claim['account'])} until {until}: {cut(claim['title'], 50)}")
    if not result.hits:
        click.echo("  nothing similar yet")
    return 0
