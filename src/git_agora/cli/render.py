"""Text for people: the analyze report, graph statistics and lineage (JSON goes out unrendered)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

WIDTH = 100


def render_analysis(data: dict, only_views: bool = False, with_diversity: bool = True) -> None:
    from rich.console import Console

    console = Console(width=WIDTH, highlight=False)
    summary = data["summary"]
    if summary["warning"] and not only_views:
        console.print(f"[bold red]WARNING[/] {summary['warning']}")
        console.print()
    if not only_views:
        _render_summary(console, summary)
        _render_slots(console, data["slots"])
    for view in data["views"].values():
        _render_view(console, view)
    if not only_views and with_diversity:
        _render_diversity(console, data["diversity"])
    if not only_views and data.get("references"):
        _render_references(console, data["references"])


def _metric(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def _render_summary(console, s: dict) -> None:
    console.print(
        f"[bold]{s['contributions']}[/] commits, {s['valid']} valid, {s['rejected']} rejected, "
        f"{s['accounts']} accounts; {s['results']} scored results, {s['hypotheses']} hypotheses, "
        f"{s['verifications']} verifications"
    )
    best = s.get("best")
    if best:
        arrow = "lower" if s["direction"] == "min" else "higher"
        console.print(
            f"best {s['metric']} = [bold]{_metric(best['metric'])}[/] ({arrow} is better, tolerance "
            f"{s['tolerance']:g}) by {best['account']}: {best['sha'][:10]} {best['title'][:50]} [{best['status']}]"
        )
    for note in s["notes"]:
        console.print(f"[dim]note: {note}[/]")
    console.print()


def _render_slots(console, slots: dict) -> None:
    from rich.padding import Padding
    from rich.text import Text

    console.print(
        f"[bold]Where to work next[/] (UCB, C = {slots['exploration_c']:.1f}, bunching {slots['bunching']:.2f})"
    )
    for slot in slots["slots"]:
        suggestions = slot["suggestions"]
        head = f"  [bold cyan]{slot['name']:<14}[/] {slot['purpose']}"
        console.print(head)
        if not suggestions:
            console.print(f"      [dim]{slot.get('note') or 'nothing to suggest yet'}[/]")
        for s in suggestions[:3]:
            console.print(f"      {s['sha'][:10]} {_metric(s['metric']):>9}  {s['account'][:12]:<12} {s['title'][:56]}")
            console.print(Padding(Text(s["reason"], style="dim"), (0, 0, 0, 6), expand=False))
    console.print()


def _render_view(console, view: dict) -> None:
    from rich.table import Table

    rows = view["rows"]
    title = f"{view['title']} ({view['total']})"
    if not rows:
        console.print(f"[bold]{title}[/]: [dim]{view.get('note') or 'none'}[/]")
        console.print()
        return
    columns = _columns(rows[0])
    wide = any(name == "title" for name, _ in columns)
    table = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=None,
        pad_edge=False,
        show_edge=False,
        width=WIDTH if wide else None,
        padding=(0, 1),
    )
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True, overflow="ellipsis", ratio=3 if name == "title" else None)
    for row in rows:
        table.add_row(*[_cell(row, name) for name, _ in columns])
    console.print(table)
    if view.get("note"):
        console.print(f"[dim]{view['note']}[/]")
    console.print()


_PREFERRED = (
    "rank",
    "sha",
    "account",
    "metric",
    "score",
    "status",
    "follow_ons",
    "children",
    "descendants",
    "quality",
    "contributions",
    "results",
    "best",
    "verifications_given",
    "verifications_received",
    "tag",
    "count",
    "reasons",
    "title",
)


def _columns(row: dict) -> list[tuple[str, str]]:
    present = [k for k in _PREFERRED if k in row]
    numeric = {k for k in present if isinstance(row.get(k), (int, float)) and not isinstance(row.get(k), bool)}
    return [(k, "right" if k in numeric else "left") for k in present][:8] + (
        [("title", "left")] if "title" in row and "title" not in present[:8] else []
    )


def _cell(row: dict, name: str) -> str:
    value = row.get(name)
    if value is None:
        return "-"
    if name == "sha":
        return value[:10]
    if isinstance(value, float):
        return f"{value:.4g}" if name != "metric" else _metric(value)
    if isinstance(value, (list, tuple)):
        return "; ".join(map(str, value))
    return str(value)


def _render_diversity(console, d: dict) -> None:
    if not d["available"]:
        console.print(f"[bold]Diversity[/]: [dim]{d['note']}[/]")
        return
    console.print(
        f"[bold]Diversity[/] ({d['model']}, {d['window']} most recent, cosine >= {d['threshold']}): "
        f"{d['count']} clusters, top share {_fmt(d['top_share'], '.0%')}, "
        f"effective {_fmt(d['effective_count'], '.1f')}, evenness {_fmt(d['evenness'], '.2f')}"
    )
    for cluster in d["clusters"][:5]:
        console.print(f"  {cluster['size']:>5} ({cluster['share']:.0%})  {cluster['label'][:80]}")
    if d.get("promising_small"):
        console.print("  promising work in small clusters:")
        for row in d["promising_small"][:3]:
            console.print(f"    {row['sha'][:10]} {_metric(row.get('metric')):>9}  {row['title'][:70]}")


def _render_references(console, references: list[dict]) -> None:
    console.print()
    console.print(f"[bold]Cited from other projects[/] ({len(references)}; `git agora fetch --refs` brings them)")
    for row in references:
        console.print(f"  {row['sha'][:10]} {row['account'][:12]:<12} cites {row['url']}#{(row['target'] or '')[:12]}")


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_stats(data: dict) -> None:
    """The graph figures of the paper's section 4.6, one topic a line."""
    share = lambda v: "-" if v is None else f"{v:.0%}"  # noqa: E731
    click.echo(
        f"nodes {data['nodes']}  edges {data['edges']}  multi-parent {data['multi_parent_nodes']}  "
        f"components {data['components']}, the largest holds {data['largest_component_share']:.1%}"
    )
    click.echo("tags: " + ", ".join(f"{tag} {n}" for tag, n in data["tag_counts"].items()))
    best = data["best_value"]
    click.echo(
        f"scored results {data['scored_results']}, new bests {data['new_bests_strict']} "
        f"(every strict improvement) / {data['new_bests']} (beyond the tolerance)"
        + (f", best {best:.6g}" if best is not None else "")
    )
    click.echo(
        f"verifications {data['verifications']} of {data['verified_targets']} targets, "
        f"{data['failed_verifications']} failed"
    )
    gap = data["equal_score_median_gap"]
    click.echo(
        f"equal scores from different accounts: {data['equal_score_pairs']} pairs"
        + (
            f", median gap {gap:.0f} s, {share(data['equal_score_share_1h'])} within 1 h, "
            f"{share(data['equal_score_share_6h'])} within 6 h"
            if gap is not None
            else ""
        )
    )
    for key, what in (("improvement_share_strict", "improvements"), ("improvement_share", "scored results")):
        shares = ", ".join(f"{k}: {s:.0%}" for k, s in data[key].items() if s is not None)
        if shares:
            click.echo(f"share of the total improvement made by the first k {what}: {shares}")
    if data.get("best_sha"):
        click.echo(
            f"the best's ancestry: {data['best_ancestry_size']} commits by {data['best_ancestry_accounts']} "
            f"accounts, {data['best_ancestry_cross_account_edges']} of {data['best_ancestry_edges']} parent "
            f"edges across accounts; {data['best_reproduced_scored_ancestors']} of its "
            f"{data['best_scored_ancestors']} scored ancestors independently reproduced"
        )


def print_lineage(result, titles: dict[str, str], metric: str | None) -> None:
    target = result.sha
    click.echo(f"lineage of {target[:12]} {titles.get(target, '')!r}")
    click.echo(f"  ancestry      {result.size} contributions by {len(result.accounts)} accounts")
    click.echo(f"  parent edges  {result.edges}, {result.cross_account_edges} across accounts")
    click.echo(f"  reproduced    {len(result.reproduced)} ancestors independently confirmed")
    click.echo(f"  milestones    {len(result.milestones)} new bests of {metric or 'metric'}:")
    for m in result.milestones:
        click.echo(f"    {m.sha[:10]} {m.value:<10.6g} {m.account:<12} {titles.get(m.sha, '')[:60]}")


@contextmanager
def demo_progress(total: int) -> Iterator[Callable[[dict], None]]:
    """A progress bar advanced by each worker event (one per round)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(highlight=False)) as progress:
        task = progress.add_task("workers publishing", total=total)
        yield lambda e: progress.update(task, advance=1, description=f"{e['account']:>4} {e['detail'][:48]}")


def print_demo_summary(summary) -> None:
    click.echo()
    render_analysis({**summary.analysis.to_dict(), "views": {}}, with_diversity=False)
    click.secho("Statistics", bold=True)
    print_stats(summary.stats.to_dict())
    if summary.lineage is not None:
        click.echo()
        print_lineage(summary.lineage, summary.titles, summary.metric)
    holds = summary.holds
    if holds.all_hold:
        click.echo(
            f"\nevery scored result holds: {holds.scored} scored, {holds.confirmed} confirmed by another "
            f"account, {holds.reproduced_now} reproduced now with the project's evaluator"
        )
    else:
        click.secho(
            f"\n{len(holds.not_reproduced)} of {holds.scored} scored results do not reproduce: "
            + ", ".join(sha[:10] for sha in holds.not_reproduced),
            fg="red",
        )
    differences = summary.index_differences
    verdict = (
        "index ok: identical to a rebuild from scratch" if not differences else "differs in " + ", ".join(differences)
    )
    click.echo(f"\nindex check: {verdict}")
    for problem in summary.problems:
        click.secho(f"worker problem {problem}", fg="yellow")


def print_site_report(report) -> None:
    click.echo(
        f"wrote {report.pages} pages to {report.directory} in {report.seconds:.1f} s: {report.contribution_pages} "
        f"contributions, {report.lineage_pages} lineages, {report.plotted_results} of {report.scored_results} "
        f"scored results plotted, {report.mapped_contributions} on the cluster map, {report.diffs} diffs"
    )
    click.echo(f"largest page {report.largest_page} ({report.largest_page_bytes / 1e6:.2f} MB, shared scripts apart)")
    for note in report.notes:
        click.echo(f"note: {note}")
    click.echo(f"open {report.directory / 'index.html'}")
