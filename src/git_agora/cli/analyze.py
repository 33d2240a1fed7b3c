"""`git agora analyze`: what has been tried, what holds up, where the frontier is, what to do next."""

from __future__ import annotations

import sys

import click

from ..frontier.views import VIEW_NAMES
from .common import emit_json, json_option, open_project


@click.command("analyze")
@click.option(
    "--view",
    "views",
    multiple=True,
    type=click.Choice(VIEW_NAMES),
    metavar="VIEW",
    help=f"Only this view (repeatable): {', '.join(VIEW_NAMES)}.",
)
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True, help="Rows per view.")
@click.option(
    "--model", help="Sentence-transformers model name or path for descriptions ('hashing': the lexical fallback)."
)
@click.option("--summary", "summary_only", is_flag=True, help="Only the warning, the summary and the three slots.")
@click.option("--legend", is_flag=True, help="Explain the terms (UCB, C, bunching, clusters); always on a terminal.")
@json_option
@click.pass_context
def command(ctx, views, limit, model, summary_only, legend, as_json):
    """The frontier from the local index: leaders, evidence, open questions, clusters, and three
    suggested slots (exploit, explore known, explore novel) with the reason for each. Embeds the
    descriptions it reads (new ones among them), older ones only for AGORA_EMBED_BUDGET=SECONDS;
    `git agora index --embed` embeds the rest."""
    from ..ops.analyze import analyze
    from .render import render_analysis

    result = analyze(open_project(ctx, as_json=as_json), views, limit, model)
    if as_json:
        emit_json({**result.to_dict(), **({"views": {}} if summary_only else {})})
    else:
        legend = legend or sys.stdout.isatty()
        shown = () if summary_only else None
        render_analysis(result, only_views=bool(views), with_diversity=not summary_only, legend=legend, views=shown)
    return 0
