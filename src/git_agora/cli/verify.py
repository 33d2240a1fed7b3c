"""`git agora verify`: rerun a contribution from a clean export and publish the verdict."""

from __future__ import annotations

import click

from ..visible import visible
from .common import account_option, emit_json, json_option, open_project, report_published, sandbox_option


@click.command("verify")
@click.argument("sha")
@click.option("--tolerance", type=float, help="Reproduction tolerance (default: the project's).")
@click.option("--timeout", type=float, help="Seconds before the evaluation counts as failed (default: the project's).")
@click.option("--no-publish", is_flag=True, help="Only report the verdict; publish nothing.")
@sandbox_option
@account_option
@json_option
@click.pass_context
def command(ctx, sha, tolerance, timeout, no_publish, sandbox, account, as_json):
    """Run the project's evaluation (the setup's evaluator, never SHA's own) on a clean export of SHA,
    compare with its claim, and publish a verification (confirmed, partial or failed) whose only parent
    and target is SHA.

    The build step (or the one command) runs SHA's code in the sandbox (bubblewrap: no network, none of
    your files or keys, an unprivileged user; docs/protocol.md, "Threat model"); --no-sandbox runs it
    on this machine as you, and the verdict records that. The verdict carries numbers and a reason from
    a fixed list; the evaluator's output stays in .git/agora/runs/."""
    from ..ops.verify import verify

    project = open_project(ctx, account, as_json=as_json)
    done = verify(project, sha, tolerance, timeout, publish_verdict=not no_publish, sandbox=sandbox)
    if as_json:
        emit_json(done.to_dict())
        return done.published.exit_code if done.published else 0
    suffix = "" if done.published else " (not published)"
    click.echo(f"{done.verdict}: {visible(done.judgement.reason)}{suffix}")
    return report_published(done.published, False, "verification") if done.published else 0
