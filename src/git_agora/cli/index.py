"""`git agora index`: update, rebuild or check the local Parquet index."""

from __future__ import annotations

import click

from ..errors import AgoraError
from .common import emit_json, json_option, open_project


@click.command("index")
@click.option("--rebuild", is_flag=True, help="Rebuild from scratch instead of updating.")
@click.option("--check", is_flag=True, help="Rebuild into a temporary place and fail if it differs from the index.")
@click.option("--export", "export_dir", type=click.Path(file_okay=False), help="Also write every table (edges, tags, accounts, verdicts too) as Parquet into DIR.")
@json_option
@click.pass_context
def command(ctx, rebuild, check, export_dir, as_json):
    """Bring the index in .git/agora/index/ up to date with the refs (the CI replay: --check)."""
    from ..index.store import check_index, index_dir, load_index, update_index

    project = open_project(ctx)
    _ = project.setup
    if check:
        differences = check_index(project.repo)
        if as_json:
            emit_json({"ok": not differences, "differences": differences})
        if differences:
            raise AgoraError(f"the incremental index differs from a rebuild in: {', '.join(differences)}")
        if not as_json:
            click.echo("index ok: identical to a rebuild from scratch")
        return 0
    report = update_index(project.repo, rebuild=rebuild)
    index = load_index(project.repo, update=False)
    exported = _export(index, export_dir) if export_dir else []
    summary = {
        "directory": str(index_dir(project.repo)),
        "exported": exported,
        "new_rows": report.new_rows,
        "rebuilt": report.rebuilt,
        "contributions": index.contributions.num_rows,
        "valid": int(sum(index.contributions["valid"].to_pylist())),
        "warnings": list(report.warnings),
    }
    if as_json:
        emit_json(summary)
    else:
        click.echo(f"{summary['contributions']} commits indexed ({summary['valid']} valid, "
                   f"{summary['new_rows']} new) in {summary['directory']}")
    return 0


def _export(index, directory: str) -> list[str]:
    """Every table as a Parquet file, for DuckDB, pandas or polars."""
    from pathlib import Path

    import pyarrow.parquet as pq

    from ..index.schema import TABLES

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TABLES:
        path = out / f"{name}.parquet"
        pq.write_table(index.table(name), path)
        written.append(str(path))
    return written
