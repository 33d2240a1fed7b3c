"""`git agora index`: update, rebuild or check the local Parquet index."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import AgoraError
from .common import emit_json, json_option, open_project


@click.command("index")
@click.option("--rebuild", is_flag=True, help="Rebuild from scratch instead of updating.")
@click.option(
    "--check",
    is_flag=True,
    help="Rebuild into a temporary place and fail, naming the rows, if it differs from the index.",
)
@click.option(
    "--export",
    "export_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write every table (edges, tags, accounts, verdicts too) as Parquet into DIR.",
)
@click.option("--embed", is_flag=True, help="Then embed every description without a vector yet, with progress.")
@click.option("--model", help="With --embed: the embedding model ('hashing': the lexical fallback).")
@json_option
@click.pass_context
def command(ctx, rebuild, check, export_dir, embed, model, as_json):
    """Bring the index in .git/agora/index/ up to date with the refs (the CI replay: --check)."""
    from ..ops.embedding import embed_everything
    from ..ops.indexing import check_index, update_index

    if model and not embed:
        raise click.UsageError("--model goes with --embed")
    project = open_project(ctx, as_json=as_json)
    if check:
        differences = check_index(project)
        if as_json:
            emit_json({"ok": not differences, "differences": differences})
        if differences:
            if not as_json:
                for line in differences:
                    click.echo(line, err=True)
            raise AgoraError("the incremental index differs from a rebuild: the rows above differ")
        if not as_json:
            click.echo("index ok: identical to a rebuild from scratch")
        return 0
    summary = update_index(project, rebuild=rebuild, export_to=export_dir)
    if not as_json:
        click.echo(
            f"{summary.contributions} commits indexed ({summary.valid} valid, "
            f"{summary.new_rows} new) in {summary.directory}"
        )
    embedded = embed_everything(project, model) if embed else None
    if as_json:
        emit_json({**summary.to_dict(), **({"embeddings": embedded.to_dict()} if embedded else {})})
    elif embedded is not None:
        click.echo(embedded.describe())
    return 0
