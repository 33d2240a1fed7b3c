"""`git agora stats`: the statistics a paper about the run would report."""

from __future__ import annotations

import click

from .common import emit_json, json_option, open_project


@click.command("stats")
@json_option
@click.pass_context
def command(ctx, as_json):
    """Graph statistics: nodes, edges, components, tags, bests, verifications, equal scores."""
    from ..frontier.stats import graph_stats
    from ..index.store import load_index

    project = open_project(ctx)
    _ = project.setup
    index = load_index(project.repo)
    stats = graph_stats(index.contributions, direction=index.config.direction, tolerance=index.config.tolerance)
    data = stats.to_dict()
    if as_json:
        emit_json(data)
        return 0
    print_stats(data)
    return 0


def print_stats(data: dict) -> None:
    click.echo(f"nodes {data['nodes']}  edges {data['edges']}  multi-parent {data['multi_parent_nodes']}  "
               f"largest component {data['largest_component_share']:.1%}")
    tags = ", ".join(f"{tag} {n}" for tag, n in data["tag_counts"].items())
    click.echo(f"tags: {tags}")
    best = data["best_value"]
    click.echo(f"scored results {data['scored_results']}, new bests {data['new_bests']}"
               + (f", best {best:.6g}" if best is not None else ""))
    click.echo(f"verifications {data['verifications']} of {data['verified_targets']} targets, "
               f"{data['failed_verifications']} failed")
    gap = data["equal_score_median_gap"]
    click.echo(f"equal scores from different accounts: {data['equal_score_pairs']} pairs"
               + (f", median gap {gap:.0f} s" if gap is not None else ""))
    shares = ", ".join(f"first {k}: {s:.0%}" for k, s in data["improvement_share"].items() if s is not None)
    if shares:
        click.echo(f"share of the total improvement made by the {shares}")
