"""`git agora fetch`: bring in every account log of a remote and update the index."""

from __future__ import annotations

import click

from ..errors import AgoraError
from .common import emit_json, json_option, open_project


@click.command("fetch")
@click.argument("remote", required=False)
@json_option
@click.pass_context
def command(ctx, remote, as_json):
    """Fetch all account logs from REMOTE (default: the project's remote) and report what is new."""
    project = open_project(ctx, remote=remote)
    result = fetch_and_index(project)
    if as_json:
        emit_json(fetch_report(result))
    else:
        print_fetch(result)
    return 0


def fetch_and_index(project):
    from ..refs.sync import RemoteError, fetch

    if project.remote is None:
        raise AgoraError("no remote to fetch from: add one (`git remote add origin URL`) or name it")
    try:
        result = fetch(project.repo, project.remote)
    except RemoteError as exc:
        raise AgoraError(str(exc)) from None
    update_index_quietly(project)
    return result


def update_index_quietly(project) -> None:
    """Keep the index current after a fetch; a project without a setup yet has nothing to index."""
    from ..index.state import is_current

    try:
        _ = project.setup
    except AgoraError:
        return
    if not is_current(project.repo):  # nothing new: do not even import pyarrow
        from ..index.store import update_index

        update_index(project.repo)


def fetch_report(result) -> dict:
    return {
        "remote": result.remote,
        "new_contributions": result.new_contributions,
        "updated_logs": list(result.updated_logs),
        "rewritten_logs": [r.__dict__ for r in result.rewritten],
    }


def print_fetch(result) -> None:
    n = result.new_contributions
    click.echo(f"fetched {n} new contribution{'s' if n != 1 else ''} from {result.remote}"
               + (f" ({len(result.updated_logs)} account logs moved)" if result.updated_logs else ""))
    for r in result.rewritten:
        click.echo(
            f"warning: the log of {r.account} on {result.remote} was rewritten "
            f"({r.old_tip[:12]} -> {r.new_tip[:12]}); the old tip is kept as {r.quarantine_ref}",
            err=True,
        )
