"""`git agora analyze`: what has been tried, what holds up, where the frontier is, what to do next."""

from __future__ import annotations

import click

from ..errors import AgoraError
from .common import emit_json, json_option, open_project

VIEW_CHOICES = ("leaders", "built_on", "leaves", "promising", "unverified", "contested", "open_hypotheses",
                "recent", "tags", "contributors", "rejected")
WIDTH = 100


@click.command("analyze")
@click.option("--view", "views", multiple=True, type=click.Choice(VIEW_CHOICES), help="Only this view (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True, help="Rows per view.")
@click.option("--model", help="Sentence-transformers model name or path for descriptions ('hashing': the lexical fallback).")
@click.option("--summary", "summary_only", is_flag=True, help="Only the warning, the summary and the three slots.")
@json_option
@click.pass_context
def command(ctx, views, limit, model, summary_only, as_json):
    """The frontier from the local index: leaders, evidence, open questions, clusters, and three
    suggested slots (exploit, explore known, explore novel) with the reason for each."""
    result = run_analyze(ctx, views, limit, model)
    data = result.to_dict()
    if summary_only:
        data["views"] = {}
    if as_json:
        emit_json(data)
    else:
        render(data, only_views=bool(views), with_diversity=not summary_only)
    return 0


def run_analyze(ctx, views=(), limit=10, model=None):
    from ..frontier.analyze import AnalyzeConfig, analyze
    from ..index.store import load_index
    from .embedding_cache import cached_embeddings

    project = open_project(ctx)
    _ = project.setup
    index = load_index(project.repo)
    embeddings, model_id = cached_embeddings(project, index, model)
    try:
        config = AnalyzeConfig.from_project(index.config, limit=limit, views=tuple(views) or None, embedding_model=model_id)
    except ValueError as exc:
        raise AgoraError(f"agora.toml {exc}") from None
    return analyze(index.contributions, embeddings=embeddings, config=config)


def render(data: dict, only_views: bool = False, with_diversity: bool = True) -> None:
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

    console.print(f"[bold]Where to work next[/] (UCB, C = {slots['exploration_c']:.1f}, bunching {slots['bunching']:.2f})")
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
    table = Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False,
                  show_edge=False, width=WIDTH if wide else None, padding=(0, 1))
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True, overflow="ellipsis",
                         ratio=3 if name == "title" else None)
    for row in rows:
        table.add_row(*[_cell(row, name) for name, _ in columns])
    console.print(table)
    if view.get("note"):
        console.print(f"[dim]{view['note']}[/]")
    console.print()


_PREFERRED = ("rank", "sha", "account", "metric", "score", "status", "follow_ons", "children", "descendants",
              "quality", "contributions", "results", "best", "verifications_given", "verifications_received",
              "tag", "count", "reasons", "title")


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


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)
