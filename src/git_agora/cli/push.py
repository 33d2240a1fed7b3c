"""`git agora push`: publish the work tree as a code-bearing contribution."""

from __future__ import annotations

import click

from .common import (
    account_option,
    band_option,
    json_option,
    new_names_options,
    open_project,
    parse_meta,
    parse_metrics,
    post_option,
    ref_option,
    report_published,
    sandbox_option,
)


@click.command("push")
@click.option(
    "-m", "--message", "description", required=True, help="What changed and why; the first line is the title."
)
@click.option(
    "--tag", "tags", multiple=True, required=True, help="A tag (repeatable): result, insight, wip, or your own."
)
@click.option(
    "--parent", "parents", multiple=True, metavar="SHA", help="A further contribution this builds on (repeatable)."
)
@click.option("--metric", "metrics", multiple=True, metavar="NAME=VALUE", help="A measured metric (repeatable).")
@new_names_options
@post_option("meta")
@band_option
@click.option(
    "--check", is_flag=True, help="Evaluate a clean export first; record the measured metric, refuse a wrong claim."
)
@click.option("--rerun", is_flag=True, help="This result re-measures its parent: the tree is unchanged on purpose.")
@sandbox_option
@ref_option
@account_option
@json_option
@click.pass_context
def command(ctx, metrics, meta, check, account, as_json, **params):
    """Publish the work tree (tracked and untracked, non-ignored files) on top of the checked-out
    contribution, then move HEAD to it when HEAD was detached there."""
    from ..ops.publish import Push, publish_worktree

    project = open_project(ctx, account, as_json=as_json)
    push = Push(metrics=parse_metrics(metrics), meta=parse_meta(meta), check_claim=check, **params)
    published = publish_worktree(project, push)
    return report_published(published, as_json, "published")
