"""`git agora push`: publish the work tree as a code-bearing contribution (the heavy path)."""

from __future__ import annotations

import click

from ..contribution import Contribution, ContributionError, parse_meta_option
from ..errors import AgoraError
from .common import account_option, json_option, open_project, parse_metrics, report_published, resolve_parents


@click.command("push")
@click.option("-m", "--message", "description", required=True, help="What changed and why; the first line is the title.")
@click.option("--tag", "tags", multiple=True, required=True, help="A tag (repeatable): result, insight, wip, or your own.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME=VALUE", help="A measured metric (repeatable).")
@click.option("--parent", "parents", multiple=True, metavar="SHA", help="Another contribution this builds on (repeatable).")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Structured metadata (VALUE may be JSON).")
@click.option("--check", is_flag=True, help="Evaluate a clean export first, fill in the metric, refuse a wrong claim.")
@account_option
@json_option
@click.pass_context
def command(ctx, description, tags, metrics, parents, meta, check, account, as_json):
    """Publish the current work tree (tracked changes and untracked, non-ignored files) as one
    contribution whose first parent is the contribution the work started from."""
    from ..publish import publish
    from ..workspace import advance_head, check_size, snapshot

    project = open_project(ctx, account)
    account = project.account
    base = project.base
    parent_shas = resolve_parents(project, [base, *parents])
    measured = parse_metrics(metrics)
    try:
        metadata = parse_meta_option(meta)
    except ContributionError as exc:
        raise AgoraError(str(exc)) from None
    with snapshot(project.repo) as snap:
        check_size(project.repo, snap.tree, project.config.max_file_bytes)
        if check:
            from ..evaluate import check_claim

            measured, run_meta = check_claim(project, snap.tree, measured)
            metadata = {**metadata, "check": run_meta}
        contribution = Contribution(
            account=account,
            tags=tuple(dict.fromkeys(tags)),
            description=description,
            parents=tuple(parent_shas),
            metrics=measured,
            metadata=metadata,
        )
        published = publish(project, contribution, snap.tree)
        advance_head(project.repo, base, published.sha, snap)
    project.set_base(published.sha)
    return report_published(published, as_json, "published")
