"""Text for people: the analyze report, graph statistics and lineage (JSON goes out unrendered).

The analyze report is laid out here, line by line, for the console's width (`COLUMNS`, else the
terminal's, else 100): a line breaks only between fields (a slot's reason never splits "U = 138.4"),
titles are cut at a word boundary with an ellipsis, quality is a percentage everywhere.
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import click

from ..frontier.columns import KINDS, TABLE_COLUMNS
from ..visible import visible

if TYPE_CHECKING:
    from ..frontier.analyze import AnalyzeResult, Summary
    from ..frontier.claims import Claim
    from ..frontier.clusters import Diversity
    from ..frontier.stats import GraphStats
    from ..frontier.ucb import Slots
    from ..frontier.verdict_rows import VerdictRow
    from ..frontier.views import View
    from ..ops.status import Identity

DEFAULT_WIDTH = 100  # when neither COLUMNS nor a terminal says
ELLIPSIS = "…"
MIN_TITLE = 16  # a table drops columns rather than cut titles shorter than this


def console_width() -> int:
    """`COLUMNS` when set, else the terminal's width, else DEFAULT_WIDTH (never under 40)."""
    return max(40, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def render_analysis(
    result: AnalyzeResult,
    only_views: bool = False,
    with_diversity: bool = True,
    legend: bool = False,
    views: Sequence[str] | None = None,
) -> None:
    """The analyze report of `result`, its views all or those named in `views`."""
    from rich.console import Console

    out = _Out(Console(width=console_width(), highlight=False, soft_wrap=True))
    summary = result.summary
    if summary.warning and not only_views:
        out.flow(["WARNING", *summary.warning.split()], style="bold red")
        out.blank()
    if not only_views:
        _render_summary(out, summary)
        _render_slots(out, result.slots)
        if result.claims:
            _render_claims(out, result.claims)
    for name, view in result.views.items():
        if views is None or name in views:
            _render_view(out, view)
    if not only_views and with_diversity:
        _render_diversity(out, result.diversity)
    if not only_views and result.references:
        _render_references(out, result.references)
    if legend:
        render_legend(out)


class _Out:
    """Lines no wider than the console, printed as they are (no markup, no wrapping by rich)."""

    def __init__(self, console):
        self.console, self.width = console, console.width
        self.after_blank = True  # no blank line at the top, never two in a row

    def line(self, text: str, style: str | None = None) -> None:
        from rich.text import Text

        self.console.print(Text(visible(text.rstrip()), style=style or ""), soft_wrap=True)
        self.after_blank = False

    def blank(self) -> None:
        if not self.after_blank:
            self.console.print()
        self.after_blank = True

    def flow(self, fields: Sequence[str], indent: int = 0, first: str = "", style: str | None = None) -> None:
        """`first` then the fields, space-separated, broken only between fields; continuation lines
        are indented by `indent`; a field wider than a whole line is cut (`cut`)."""
        for text in flow(fields, self.width, indent, first):
            self.line(text, style)


def flow(fields: Sequence[str], width: int, indent: int = 0, first: str = "") -> list[str]:
    lines: list[str] = []
    current = first
    for field in fields:
        field = cut(field, width - indent)
        joined = f"{current} {field}" if current.strip() else current + field
        if _cells(joined) <= width or not current.strip():
            current = joined
        else:
            lines.append(current)
            current = " " * indent + field
    if current.strip():
        lines.append(current)
    return lines


def cut(text: str, width: int) -> str:
    """`text` in at most `width` cells, its control characters shown (`visible`), cut at a word boundary
    with an ellipsis when too long, never inside an escape."""
    limit = 4 * width + 16  # characters that hold the first `width` cells unless most take none
    probe, whole = visible(text[:limit]), len(text) <= limit  # `visible` escapes character by character
    if not whole and _cells(probe) <= width:
        probe, whole = visible(text), True  # zero-width characters: measure it all, once
    if whole and _cells(probe) <= width:
        return probe
    room = max(width - 1, 0)
    head = probe[: _fitting(probe, room)]
    head = _PARTIAL_ESCAPE.sub("", head)
    at_word = head.rsplit(" ", 1)[0] if " " in head else ""
    if probe[len(head) : len(head) + 1] != " " and len(at_word) >= len(head) // 2:
        head = at_word  # prefer a whole word unless that throws away more than half
    return head.rstrip(" ,;:-") + ELLIPSIS


_PARTIAL_ESCAPE = re.compile(r"\\(?:x[0-9a-f]?|u[0-9a-f]{0,3})?$")  # an escape `visible` wrote, cut short


def _fitting(text: str, room: int) -> int:
    """The length of the longest prefix of `text` in at most `room` cells (cells never shrink as a
    prefix grows): a binary search, O(len log len), where trimming a character at a time was quadratic."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _cells(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cells(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _fields(sentence: str) -> list[str]:
    """A reason or a summary as fields: split after each ", " and "; " (the separators stay attached)."""
    return re.split(r"(?<=[,;]) ", sentence)


def _metric(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def _percent(value) -> str:
    return "-" if value is None else f"{round(100 * value)}%"


def _unsettled(count: int) -> list[str]:
    """The best's failed reruns that do not count yet, as fields of its line."""
    if not count:
        return []
    reruns = "1 failed rerun that does" if count == 1 else f"{count} failed reruns that do"
    return [f"{reruns} not count yet:", "settle it"]


def verdict_line(row: VerdictRow) -> str:
    """One verdict on its target (`frontier.verdict_rows.VerdictRow`): who, what it says and measured,
    whether it counts and why not."""
    measured = "no measurement" if row.metric is None else f"measured {_metric(row.metric)}"
    weight = "counts" if row.counts else f"does not count: {row.why}"
    return f"{row.account}: {row.verdict}, {measured}, {weight} ({row.sha[:10]})"


def _render_summary(out: _Out, s: Summary) -> None:
    out.flow(
        _fields(
            f"{s.contributions} commits, {s.valid} valid, {s.rejected} rejected, {s.accounts} accounts; "
            f"{s.results} scored {plural(s.results, 'result')}, {s.hypotheses} "
            f"{plural(s.hypotheses, 'hypothesis', 'hypotheses')}, {s.verifications} "
            f"{plural(s.verifications, 'verification')}"
        ),
        indent=2,
    )
    best = s.best
    if best:
        arrow = "lower" if s.direction == "min" else "higher"
        out.flow(
            [
                f"best {s.metric} = {_metric(best.metric)}",
                f"({arrow} is better,",
                f"tolerance {s.tolerance:g}),",
                shown_status({"status": best.status, "checked": s.best_checked}) + ("," if s.best_unsettled else ""),
                *_unsettled(s.best_unsettled),
            ],
            indent=2,
            style="bold",
        )
        head = f"  by {best.account}: {best.sha[:10]} "
        out.line(head + cut(best.title, out.width - _cells(head)))
        for v in s.best_verdicts:
            out.flow(_fields(verdict_line(v)), indent=6, first="    verdict")
    for note in s.notes:
        out.flow(note.split(), indent=6, first="note:", style="dim")
    out.blank()


def _render_slots(out: _Out, slots: Slots) -> None:
    out.flow(
        ["Where to work next", f"(UCB, C = {slots.exploration_c:.1f},", f"bunching {slots.bunching:.2f})"],
        style="bold",
    )
    for slot in slots.slots:
        out.line(f"  {slot.name:<14} {slot.purpose}", style="bold cyan")
        if not slot.suggestions:
            out.flow((slot.note or "nothing to suggest yet").split(), indent=6, first=" " * 6, style="dim")
        for s in slot.suggestions[:3]:
            head = f"    {s.sha[:10]}  {_metric(s.metric):>9}  {s.account[:12]:<12}  "
            out.line(head + cut(s.title, out.width - _cells(head)))
            out.flow(_fields(s.reason), indent=6, first=" " * 6, style="dim")
            for c in s.claimed_by:
                out.flow(_claimed(c).split(), indent=6, first=" " * 6, style="yellow")
    out.blank()


def utc_minute(until: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))


def _claimed(claim: Mapping[str, Any]) -> str:
    """A suggestion's active claim (`frontier.claims.claims_on`: {account, until, sha, title})."""
    return f"claimed by {claim['account']} until {utc_minute(claim['until'])}: {claim['title']}"


def _render_claims(out: _Out, claims: Sequence[Claim]) -> None:
    out.line("Claimed: work in progress (build elsewhere, or coordinate)", style="bold")
    for c in claims:
        head = f"    {c.target[:10]}  {c.account[:12]:<12}  until {utc_minute(c.until)}  "
        out.line(head + cut(c.title, out.width - _cells(head)))
    out.blank()


def _render_view(out: _Out, view: View) -> None:
    rows = view.rows
    title = f"{view.title} ({view.total})"
    if not rows:
        out.flow([f"{title}:", *(view.note or "none").split()], indent=2)
        out.blank()
        return
    out.line(title, style="bold")
    columns = _columns(view.name, rows[0])
    cells = [[_cell(row, name) for name, _ in columns] for row in rows]
    for line_no, text in enumerate(_table(columns, cells, out.width)):
        out.line(text, style="bold" if line_no == 0 else None)
        row = rows[line_no - 1] if line_no else None
        if row is not None and row.reasons is not None:
            out.flow(_fields("; ".join(row.reasons)), indent=4, first=" " * 4, style="dim")
        if row is not None and row.why:
            out.flow(_fields(f"does not count: {row.why}"), indent=4, first=" " * 4, style="dim")
    if view.note:
        out.flow(view.note.split(), indent=2, style="dim")
    out.blank()


def _table(columns: list[tuple[str, str]], cells: list[list[str]], width: int) -> list[str]:
    """Header and rows, two spaces between columns; the title column takes the remaining width (its
    cells cut at a word boundary); columns before it are dropped from the right until it has MIN_TITLE."""
    names = [name for name, _ in columns]
    flexible = names.index("title") if "title" in names else None
    measured = [[] if i == flexible else [_cells(row[i]) for row in cells] for i in range(len(names))]
    widths = [max([_cells(name), *sizes]) for name, sizes in zip(names, measured, strict=True)]  # a title: what is left
    keep = list(range(len(names)))

    def fixed() -> int:
        return sum(widths[i] + 2 for i in keep if i != flexible)

    while len(keep) > 1:
        room = width - fixed()
        if room >= MIN_TITLE if flexible is not None else room + 2 >= 0:
            break
        keep.remove(next(i for i in reversed(keep) if i != flexible))
    room = width - fixed()

    def render(values: list[str]) -> str:
        parts = []
        for i in keep:
            if i == flexible:
                parts.append(cut(values[i], max(room, 1)))
            elif columns[i][1] == "right":
                parts.append(values[i].rjust(widths[i]))
            else:
                parts.append(values[i].ljust(widths[i]))
        return "  ".join(parts).rstrip()

    return [render(names)] + [render(row) for row in cells]


def shown_status(row: Mapping[str, Any]) -> str:
    """A row's status as readers show it: an unverified result without its run record is "unchecked"
    (`frontier.checked.shown_status`, the one rule)."""
    status = str(row.get("status"))
    return "unchecked" if status == "unverified" and row.get("checked") is False else status


def _columns(view: str, first: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The view's columns (`frontier.columns`), right-aligned when a share or a number in the first row."""
    return [(name, "right" if _numeric(name, first.get(name)) else "left") for name in TABLE_COLUMNS[view]]


def _numeric(name: str, value) -> bool:
    return KINDS.get(name) == "share" or isinstance(value, int | float) and not isinstance(value, bool)


def _cell(row: Mapping[str, Any], name: str) -> str:
    value = row.get(name)
    if value is None:
        return "-"
    if name == "status":
        return shown_status(row)
    kind = KINDS.get(name)
    if kind == "sha":
        return value[:10]
    if kind == "share":
        return _percent(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if kind == "signed":
        return f"{value:+.4g}"
    if isinstance(value, float):
        return _metric(value) if kind == "metric" else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "; ".join(map(str, value))
    return str(value)


def _render_diversity(out: _Out, d: Diversity) -> None:
    if not d.available:
        out.flow(["Diversity:", *(d.note or "").split()], indent=2)
        return
    out.flow(
        [
            "Diversity",
            f"({d.model},",
            f"{d.window} most recent,",
            f"cosine >= {d.threshold}):",
            f"{d.count} clusters,",
            f"top share {_fmt(d.top_share, '.0%')},",
            f"effective {_fmt(d.effective_count, '.1f')},",
            f"evenness {_fmt(d.evenness, '.2f')}",
        ],
        indent=2,
        style="bold",
    )
    if d.clusters:
        out.flow(_fields("largest clusters: size, share of recent work, a central title"), indent=4, first="  ")
    for cluster in d.clusters[:5]:
        head = f"  {cluster.size:>5}  {cluster.share:>4.0%}  "
        out.line(head + cut(cluster.label, out.width - _cells(head)))
    if d.promising_small:
        out.line("  promising work in small clusters:")
        for row in d.promising_small[:3]:
            head = f"    {row['sha'][:10]}  {_metric(row.get('metric')):>9}  "
            out.line(head + cut(row["title"], out.width - _cells(head)))


def _render_references(out: _Out, references: Sequence[Mapping[str, Any]]) -> None:
    out.blank()
    out.flow(
        ["Cited from other projects", f"({len(references)};", "`git agora fetch --refs`", "brings them)"], style="bold"
    )
    for row in references:
        out.flow(
            [
                f"  {row['sha'][:10]}",
                f"{row['account'][:12]:<12}",
                "cites",
                f"{row['url']}#{(row['target'] or '')[:12]}",
            ],
            indent=4,
        )


LEGEND = (
    (
        "quality",
        "how a scored result ranks among all of them, in percent: 100% is the best, 0% the worst; work "
        "without a metric of its own inherits that of its nearest scored first-parent ancestor.",
    ),
    (
        "UCB, U",
        "the score that orders suggestions (higher first): 100 x quality, plus C x "
        "sqrt(log(N+1)/(follow-ons+1)) for work few have built on (N: all contributions), plus a bonus for work "
        "with few near-duplicates.",
    ),
    ("C", "the weight of exploration in U; it grows with bunching."),
    (
        "bunching",
        "the share of scored results within noise of the best (a few tolerances): near 1, progress has "
        "stalled there and exploring pays more.",
    ),
    (
        "cluster",
        "contributions whose descriptions are near-duplicates (cosine at least 0.90); its size is how often "
        "that direction was tried recently ('cluster 3 of size 1': tried once, still open).",
    ),
    (
        "improvement share",
        "in `git agora stats`: of the whole gain from the first scored result to the best, the part made "
        "by the first k results.",
    ),
)


def render_legend(out: _Out | None = None) -> None:
    """What the terms of the report mean (under analyze on a terminal, or with --legend)."""
    if out is None:
        from rich.console import Console

        out = _Out(Console(width=console_width(), highlight=False, soft_wrap=True))
    out.blank()
    out.line("Legend", style="bold")
    for term, text in LEGEND:
        if len(term) > 10:
            out.line(f"  {term}", style="dim")
        out.flow(text.split(), indent=13, first=f"  {term:<10}" if len(term) <= 10 else " " * 13, style="dim")


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_stats(data: GraphStats) -> None:
    """The graph figures of the paper's section 4.6, one topic a line."""
    click.echo(
        f"nodes {data.nodes}  edges {data.edges}  multi-parent {data.multi_parent_nodes}  "
        f"components {data.components}, the largest holds {data.largest_component_share:.1%}"
    )
    click.echo("tags: " + ", ".join(f"{tag} {n}" for tag, n in data.tag_counts))
    best = data.best_value
    click.echo(
        f"scored results {data.scored_results}, new bests {data.new_bests_strict} "
        f"(every strict improvement) / {data.new_bests} (beyond the tolerance)"
        + (f", best {best:.6g}" if best is not None else "")
    )
    click.echo(
        f"verifications {data.verifications} (on {data.verified_targets} "
        f"{plural(data.verified_targets, 'result')}), {data.failed_verifications} failed"
    )
    gap = data.equal_score_median_gap
    click.echo(
        f"equal scores from different accounts: {data.equal_score_pairs} pairs"
        + (
            f", median gap {gap:.0f} s, {_fmt(data.equal_score_share_1h, '.0%')} within 1 h, "
            f"{_fmt(data.equal_score_share_6h, '.0%')} within 6 h"
            if gap is not None
            else ""
        )
    )
    for shares_of, what in (
        (data.improvement_share_strict, "improvements"),
        (data.improvement_share, "scored results"),
    ):
        shares = ", ".join(f"k={k} {s:.0%}" for k, s in shares_of if s is not None)
        if shares:
            click.echo(
                f"improvement share (of the gain from the first result to the best) of the first k {what}: {shares}"
            )
    if data.best_sha:
        click.echo(
            f"the best's ancestry: {data.best_ancestry_size} commits by {data.best_ancestry_accounts} "
            f"accounts, {data.best_ancestry_cross_account_edges} of {data.best_ancestry_edges} parent "
            f"edges across accounts; "
            + reproduced_ancestors(data.best_reproduced_scored_ancestors or 0, data.best_scored_ancestors or 0)
        )


def print_identity(identity: Identity) -> None:
    """`whoami`'s lines (and `status`'s first ones): the account, remote, setup, base and queue."""
    for field in fields(identity):
        value = getattr(identity, field.name)
        click.echo(f"{field.name:8} {'-' if value is None else value}")


def plural(n: int, one: str, many: str | None = None) -> str:
    return one if n == 1 else many or one + "s"


def reproduced_ancestors(reproduced: int, scored: int) -> str:
    """The one rule `lineage` and `stats` say of a result's ancestry (`Lineage.reproduced_scored_ancestors`):
    its scored ancestors, itself excluded, with a current confirmed verdict from another account."""
    return f"{reproduced} of its {scored} scored ancestor{'' if scored == 1 else 's'} independently reproduced"


def print_lineage(result, titles: dict[str, str], metric: str | None) -> None:
    target = result.sha
    click.echo(f"lineage of {target[:12]} {visible(repr(titles.get(target, '')))}")
    click.echo(f"  ancestry      {result.size} contributions by {len(result.accounts)} accounts")
    click.echo(f"  parent edges  {result.edges}, {result.cross_account_edges} across accounts")
    itself = target in result.reproduced
    counted = reproduced_ancestors(len(result.reproduced_scored_ancestors), len(result.scored_ancestors))
    click.echo(f"  reproduced    {counted}" + ("; the result itself too" if itself else ""))
    click.echo(f"  milestones    {len(result.milestones)} new bests of {metric or 'metric'}:")
    for m in result.milestones:
        click.echo(f"    {m.sha[:10]} {m.value:<10.6g} {visible(m.account):<12} {cut(titles.get(m.sha, ''), 60)}")


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
    render_analysis(summary.analysis, with_diversity=False, legend=sys.stdout.isatty(), views=("calibration",))
    click.secho("Statistics", bold=True)
    print_stats(summary.stats)
    if summary.lineage is not None:
        click.echo()
        print_lineage(summary.lineage, summary.titles, summary.metric)
    holds = summary.holds
    if holds.all_hold:
        click.echo(
            f"\nevery scored result holds: {holds.scored} scored, {holds.confirmed} confirmed by an account "
            f"with standing, {holds.reproduced_now} reproduced now by the founder with the project's evaluator"
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


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def print_launch_status(status) -> None:
    """The agents of a launch: state, pid, budget used and left, exit, contributions, the last one."""
    supervisor = "running" if status.supervisor_running else "ended"
    scheduled = status.scheduler != "local"
    who = f"scheduler {status.scheduler}" if scheduled else f"supervisor pid {status.supervisor_pid}"
    click.echo(
        f"launch in {status.directory}: {len(status.agents)} agent{'s' if len(status.agents) != 1 else ''} "
        f"on {status.remote}; "
        f"{who} ({status.supervisor_mode or '-'}) {supervisor}"
    )
    what = f"scripted worker, {status.rounds} round(s)" if status.command == "scripted" else status.command
    budget = "no budget" if status.budget_seconds is None else f"budget {_duration(status.budget_seconds)} each"
    click.echo(f"command: {what}; {budget}, grace {status.grace_seconds:g} s")
    now = time.time()
    ident = "job" if status.scheduler != "local" else "pid"
    columns = [(n, "left") for n in ("agent", "state", ident, "used/left", "exit", "contributions")]
    cells = []
    for a in status.agents:
        exit_code = a.signal or ("-" if a.exit_code is None else str(a.exit_code))
        count = f"{a.contributions}" + (f" ({a.queued} queued)" if a.queued else "")
        last = a.last_contribution
        title = f"{last.sha[:10]} {_duration(now - last.timestamp)} ago: {last.title}" if last else "-"
        used = f"{_duration(a.used_seconds)}/{_duration(a.left_seconds)}"
        cells.append([a.name, a.state, str(a.job_id or a.pid or "-"), used, exit_code, count, title])
    lines = _table([*columns, ("title", "left")], cells, console_width())
    for line in [lines[0].replace("title", "last contribution"), *lines[1:]]:
        click.echo(line)
    for a in status.agents:
        started = f"{a.sessions} session{'s' if a.sessions != 1 else ''} (--restart)" if a.sessions else None
        if a.note or started:
            click.echo(f"{a.name}: {'; '.join(w for w in (started, a.note) if w)}")
    if status.agents:
        first = status.agents[0]
        click.echo(f"logs: {first.stdout.parent.parent}/AGENT/stdout.log, stderr.log; clones in AGENT/clone")
    if status.running:
        click.echo(f"stop them: git agora launch stop --dir {status.directory}")


def print_ci_report(report) -> None:
    """`git agora ci`: what was fetched, each rerun's verdict, what the budget left, the witness, the site."""
    n = report.new_contributions
    click.echo(f"{report.account}: fetched {n} new contribution{'s' if n != 1 else ''} from {report.remote}")
    _print_reruns(report)
    if report.witness_records:
        logs = report.witnessed_logs
        records = ", ".join(sha[:12] for sha in report.witness_records)
        click.echo(f"  witnessed {logs} account log{'s' if logs != 1 else ''}: {records}")
    for note in report.notes:
        click.echo(note)
    if report.site:
        click.echo(f"site: {report.site}")
    click.echo(ci_summary_text(report.summary))


SHAS_LISTED = 20  # short shas a summary line lists before "and N more"


def ci_summary_rows(summary) -> list[tuple[str, int, list[str], str]]:
    """(what, how many, short shas, why) of a CI run (`ops.ci_summary.CiSummary`): each verdict, each
    reason claims were not rerun (this runner's first), what the budget left."""

    def shas(targets) -> list[str]:
        more = [f"and {len(targets) - SHAS_LISTED} more"] if len(targets) > SHAS_LISTED else []
        return [sha[:12] for sha in targets[:SHAS_LISTED]] + more

    rows = [(verdict, len(targets), shas(targets), "") for verdict, targets in summary.verdicts.items()]
    for group in summary.skipped:
        whose = "this runner" if group.cause.value == "environment" else "the claim"
        rows.append((f"not rerun ({whose})", len(group.targets), shas(group.targets), group.reason))
    if summary.left:
        rows.append(("left for the next run", summary.left, [], "budget spent"))
    return rows


def ci_summary_text(summary) -> str:
    """The summary a CI run ends with in the job log: counts, short shas, the exit code and its meaning."""
    verdicts = summary.verdicts
    verified = len(verdicts["confirmed"]) + len(verdicts["partial"])
    not_rerun = sum(len(group.targets) for group in summary.skipped)
    lines = [f"summary: {verified} verified, {len(verdicts['failed'])} failed, {not_rerun} not rerun"]
    for what, count, shas, why in ci_summary_rows(summary):
        if count:
            lines.append(f"  {what} {count}" + (f": {', '.join(shas)}" if shas else ""))
            lines += [f"    why: {visible(why)}"] if why else []
    return "\n".join([*lines, f"exit {summary.exit_code}: {summary.outcome.meaning}"])


def ci_summary_markdown(summary, site: str | None = None) -> str:
    """The same summary as Markdown, for the forge's step summary ($GITHUB_STEP_SUMMARY): a table."""
    lines = [f"### git agora ci: exit {summary.exit_code}", "", _markdown(summary.outcome.meaning), ""]
    lines += ["| claims | count | commits | why |", "| --- | ---: | --- | --- |"]
    for what, count, shas, why in ci_summary_rows(summary):
        commits = " ".join(_markdown(sha) if " " in sha else f"`{sha}`" for sha in shas)
        lines.append(f"| {what} | {count} | {commits} | {_markdown(why)} |")
    logs = summary.witnessed_logs
    witness = f"witnessed {logs} account log{'s' if logs != 1 else ''}" if summary.witness_records else "no witness"
    return "\n".join([*lines, "", _markdown(witness + (f"; site: {site}" if site else "")), "", ""])


def _markdown(value: str) -> str:
    """Text as literal Markdown in a table cell: one line, no markup, no HTML, no cell break."""
    import html

    escaped = html.escape(" ".join(visible(value).split()), quote=False)
    for char in "\\`*_[]|#!~":
        escaped = escaped.replace(char, "\\" + char)
    return escaped


def _print_reruns(report) -> None:
    """Each rerun's verdict (or why it could not run) and what the budget left."""
    for checked in report.checked:
        who = f"{checked.target[:12]} ({visible(checked.account)}: {visible(checked.title)})"
        if checked.verdict is None:
            click.echo(f"  not rerun: {who}: {visible(checked.reason)}")
        else:  # a verify-only run publishes nothing: its verdicts go into the bundle
            where = f"-> {checked.verification[:12]}" if checked.verification else "(in the bundle, not published)"
            click.echo(f"  {checked.verdict}: {who}: {visible(checked.reason)} {where}")
    if report.left:
        click.echo(f"  left for the next run (budget spent): {len(report.left)} claim(s)")


def print_pending_report(report) -> None:
    """`git agora verify --pending`: each rerun's verdict and what the budget left."""
    if not report.checked and not report.left:
        click.echo(
            f"{visible(report.account)}: nothing to verify: you have verified every claim of the current evaluator"
        )
        return
    reran = sum(checked.verdict is not None for checked in report.checked)
    missed = len(report.checked) - reran
    click.echo(f"{visible(report.account)}: reran {reran} claim(s)" + (f", could not rerun {missed}" if missed else ""))
    _print_reruns(report)


def finish_ci(report, step_summary: str | None) -> int:
    """A CI run's end: its summary appended, as Markdown, to the forge's step summary file when there
    is one (GitHub's and Gitea's $GITHUB_STEP_SUMMARY); one line on stderr saying why when claims were
    left unverified because of this runner; the exit code its outcome maps to."""
    from ..ops.ci_summary import why_line

    summary = report.summary
    if step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(ci_summary_markdown(summary, report.site))
        except OSError as exc:
            click.echo(f"git agora: note: could not write the step summary {step_summary}: {exc.strerror}", err=True)
    why = why_line(summary)
    if why is not None:
        click.echo(f"git agora: error: {visible(why)}", err=True)
    return summary.exit_code


def print_recipe(done, as_json: bool) -> int:
    """`git agora ci --init`: where the recipe went, and every step left, numbered (the key pin included)."""
    from .output import emit_json

    if as_json:
        emit_json(done.to_dict())
        return 0
    how = "a new orphan branch holding only CI files" if done.orphan else "on top of its tip"
    click.echo(f"committed {done.recipe.path} on {done.branch} ({done.commit[:12]}, {how}); the work tree is unchanged")
    if len(done.files) > 1:
        click.echo(f"  with {', '.join(done.files[1:])}")
    if done.pushed:
        click.echo(f"pushed {done.branch} to {done.remote}")
    click.echo("next:")
    for number, step in enumerate(done.steps, 1):
        click.echo(f"  {number}. {step}")
    return 0
