"""`git agora verify`: rerun a contribution from a clean export and publish the verdict."""

from __future__ import annotations

import click

from ..visible import visible
from .common import account_option, emit_json, json_option, open_project, report_published, sandbox_option, scheduled
from .common import scheduler_options as scheduled_by


@click.command("verify")
@click.argument("sha", required=False)
@click.option("--tolerance", type=float, help="Reproduction tolerance (default: the project's).")
@click.option("--timeout", type=float, help="Seconds before the evaluation counts as failed (default: the project's).")
@click.option("--no-publish", is_flag=True, help="Only report the verdict; publish nothing.")
@click.option("--pending", is_flag=True, help="Instead of SHA: every claim you have not verified yet (see below).")
@click.option("--max-evaluations", type=click.IntRange(0), default=10, show_default=True, help="With --pending.")
@click.option("--max-minutes", type=click.FloatRange(0), default=30.0, show_default=True, help="With --pending.")
@scheduled_by("With --pending: each rerun a job of this scheduler, --jobs at once; this process publishes.")
@sandbox_option
@account_option
@json_option
@click.pass_context
def command(ctx, sha, tolerance, timeout, no_publish, pending, sandbox, account, as_json, **on):
    """Run the project's evaluation (the setup's evaluator, never SHA's own) on a clean export of SHA,
    compare with its claim, and publish a verification (confirmed, partial or failed) whose only parent
    and target is SHA.

    --pending: fetch, then verify in the sandbox, most consequential first and within the budget, every
    result of another account that you have not verified yet (how a founder confirms a fleet; docs/agents.md);
    with --scheduler slurm --jobs N each rerun is a Slurm job, N at once, and this process publishes.

    The build step (or the one command) runs SHA's code in the sandbox (bubblewrap: no network, none of
    your files or keys, an unprivileged user; docs/protocol.md, "Threat model"); --no-sandbox runs it
    on this machine as you, and the verdict records that. The verdict carries numbers and a fixed
    reason; the evaluator's output stays in .git/agora/runs/."""
    single_only = no_publish or sandbox is False or tolerance is not None or timeout is not None
    if pending == bool(sha) or (pending and single_only):
        raise click.UsageError("give SHA, or --pending (without --tolerance, --timeout, --no-publish or --no-sandbox)")
    on |= scheduled(on, reruns=pending)
    project = open_project(ctx, account, as_json=as_json)
    if pending:
        return _pending(project, as_json, **on)
    from ..ops.verify import verify

    done = verify(project, sha, tolerance, timeout, publish_verdict=not no_publish, sandbox=sandbox)
    if as_json:
        emit_json(done.to_dict())
        return done.published.exit_code if done.published else 0
    suffix = "" if done.published else " (not published)"
    click.echo(f"{done.verdict}: {visible(done.judgement.reason)}{suffix}")
    code = report_published(done.published, False, "verification") if done.published else 0
    if done.weight:
        click.echo(visible(done.weight.describe()))
    return code


def _pending(project, as_json: bool, max_evaluations: int, max_minutes: float, **scheduled) -> int:
    from ..ops.ci import Budget, verify_pending
    from .render import print_pending_report as show

    report = verify_pending(project, Budget(max_evaluations, max_minutes), **scheduled)
    return (emit_json if as_json else show)(report.to_dict() if as_json else report) or 0
