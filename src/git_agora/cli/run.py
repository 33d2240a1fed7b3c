"""`git agora run`: evaluate exactly what `push` would publish, from a clean export."""

from __future__ import annotations

import click

from ..errors import AgoraError
from ..visible import visible
from .common import emit_json, json_option, open_project, sandbox_option


@click.command("run")
@click.option("--timeout", type=float, help="Seconds before the evaluation is stopped (default: the project's).")
@click.option(
    "--quick", is_flag=True, help="The setup's smaller evaluation ([eval] quick): not comparable, never published."
)
@sandbox_option
@json_option
@click.pass_context
def command(ctx, timeout, quick, sandbox, as_json):
    """Run the project's evaluation command on a clean export of the work tree (tracked and
    untracked, non-ignored files: the tree `git agora push` would publish), not the directory itself.
    The command, the export folder and the timeout are printed first; the evaluator's stderr streams
    to a terminal; Ctrl-C (or SIGTERM) stops the evaluator's whole process group. The contribution's
    code runs in the sandbox (docs/protocol.md, "Threat model") unless --no-sandbox; its output is kept
    in .git/agora/runs/, never published."""
    from ..ops.evaluate import run

    done = run(open_project(ctx, as_json=as_json), timeout, quick=quick, sandbox=sandbox)
    if as_json:
        emit_json(done.to_dict())
    elif done.run.ok:
        for name, value in done.run.metrics.items():
            click.echo(f"{name} = {value:.6g}")
        click.echo(f"({done.run.duration_s:.1f} s, clean export of tree {done.tree[:12]})")
        if quick:
            click.echo("quick run ([eval] quick): not comparable to full runs, never publish it")
    if not done.run.ok:
        raise AgoraError(f"evaluation failed: {visible(done.run.error or '')}")
    return 0
