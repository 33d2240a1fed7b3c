"""`git agora fetch`: bring in every account log of a remote and update the index."""

from __future__ import annotations

import click

from .common import emit_json, json_option, open_project


@click.command("fetch")
@click.argument("remote", required=False)
@click.option(
    "--refs", "cross_refs", is_flag=True, help="Also fetch the commits cited from other projects (read-only)."
)
@json_option
@click.pass_context
def command(ctx, remote, cross_refs, as_json):
    """Fetch all account logs from REMOTE (default: the project's remote) and report what is new."""
    from ..ops.sync import fetch, one_blas_thread

    with one_blas_thread():
        done = fetch(open_project(ctx, remote=remote, as_json=as_json), cross_refs=cross_refs)
    if as_json:
        emit_json(done.to_dict())
    else:
        print_fetch(done)
    return 0


def print_fetch(done) -> None:
    n = done.new_contributions
    click.echo(
        f"fetched {n} new contribution{'s' if n != 1 else ''} from {done.remote}"
        + (f" ({len(done.updated_logs)} account logs moved)" if done.updated_logs else "")
    )
    for fetched in done.cross_refs:
        state = "fetched" if fetched.ok else f"not fetched ({fetched.detail})"
        click.echo(f"cross-project reference {fetched.ref.text}: {state}")
