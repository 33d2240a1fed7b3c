"""`git agora verify`: rerun a contribution from a clean checkout and publish the verdict."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ..errors import AgoraError
from .common import account_option, emit_json, json_option, open_project, publish_exit_code, report_published


@click.command("verify")
@click.argument("sha")
@click.option("--tolerance", type=float, help="Reproduction tolerance (default: the project's).")
@click.option("--timeout", type=float, help="Seconds before the evaluation counts as failed (default: the project's).")
@click.option("--no-publish", is_flag=True, help="Only report the verdict; publish nothing.")
@account_option
@json_option
@click.pass_context
def command(ctx, sha, tolerance, timeout, no_publish, account, as_json):
    """Check out SHA in a fresh work tree, run the project's evaluation, compare with the claim,
    and publish a verification (confirmed, partial or failed) whose parent and target is SHA."""
    from ..contribution import Contribution, Verdict
    from ..evaluate import command_hash, hardware, judge, run_command
    from ..publish import publish

    project = open_project(ctx, account)
    target = project.contribution(sha)
    me = project.account
    if target.account == me:
        raise AgoraError("you cannot verify your own work: ask another account")
    config = project.config
    if not config.eval_command:
        raise AgoraError("the project has no evaluation command ([eval] command in agora.toml)")
    if not target.metrics:
        raise AgoraError(f"{target.sha[:12]} claims no metric: there is nothing to reproduce")
    tolerance = config.tolerance if tolerance is None else tolerance
    with tempfile.TemporaryDirectory(prefix="agora-verify-") as tmp:
        work = Path(tmp) / "checkout"
        project.repo.git.run("worktree", "add", "--detach", "--quiet", str(work), target.sha)
        try:
            run = run_command(config.eval_command, work, timeout or config.eval_timeout, config.metric)
        finally:
            project.repo.git.run("worktree", "remove", "--force", str(work), check=False)
            project.repo.git.run("worktree", "prune", check=False)
    judgement = judge(dict(target.metrics), run, tolerance, config.metric)
    metadata = {
        "claimed": dict(judgement.claimed),
        "reproduced": dict(judgement.reproduced),
        "difference": {k: round(v, 12) for k, v in judgement.differences.items()},
        "tolerance": tolerance,
        "reason": judgement.reason,
        "evaluator": {"command": config.eval_command, "sha256": command_hash(config.eval_command)},
        "hardware": hardware(),
        "duration_s": round(run.duration_s, 3),
    }
    report = {"target": target.sha, "verdict": judgement.verdict, **metadata}
    if no_publish:
        if as_json:
            emit_json(report)
        else:
            click.echo(f"{judgement.verdict}: {judgement.reason} (not published)")
        return 0
    primary = config.metric if config.metric in judgement.reproduced else None
    description = (
        f"Verification of {target.sha[:12]} ({target.account}: {target.title}): {judgement.verdict}\n\n"
        f"{judgement.reason}."
    )
    verification = Contribution(
        account=me,
        tags=("verification",),
        description=description,
        parents=(target.sha,),
        target=target.sha,
        verdict=Verdict(judgement.verdict),
        metadata=metadata,
        metrics={primary: judgement.reproduced[primary]} if primary else {},
    )
    tree = project.repo.commit_info(target.sha).tree
    published = publish(project, verification, tree)
    if as_json:
        emit_json({**published.to_dict(), **report})
        return publish_exit_code(published)
    click.echo(f"{judgement.verdict}: {judgement.reason}")
    return report_published(published, False, "verification")
