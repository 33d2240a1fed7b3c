"""`git agora site`: the project as a static site (overview, ratchet plot, cluster map, lineage,
contribution pages), and a local preview with --serve."""

from __future__ import annotations

from pathlib import Path

import click

from .common import emit_json, json_option, open_project


@click.command("site")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--serve", is_flag=True, help="Then serve it on 127.0.0.1 (diffs and lineages on demand) until Ctrl-C.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port for --serve.")
@click.option("--open", "open_browser", is_flag=True, help="Open the site in a web browser.")
@json_option
@click.pass_context
def command(ctx, out_dir, serve, port, open_browser, as_json):
    """Write a self-contained static site of the project into OUT_DIR, built from the local index
    (no network at view time: open OUT_DIR/index.html, or publish the folder on any static host)."""
    import webbrowser

    from ..ops.site import build_site, serve_site
    from .render import print_site_report

    project = open_project(ctx, as_json=as_json)
    report = emit_json if as_json else print_site_report
    if not serve:
        built = build_site(project, out_dir)
        report(built.to_dict() if as_json else built)
        if open_browser:
            webbrowser.open((built.directory / "index.html").as_uri())
        return 0

    def ready(url: str) -> None:
        click.echo(f"serving {url} (Ctrl-C to stop)", err=as_json)
        if open_browser:
            webbrowser.open(url)

    serve_site(project, out_dir, port, on_built=lambda b: report(b.to_dict() if as_json else b), on_ready=ready)
    return 0
