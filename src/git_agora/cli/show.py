"""`git agora show`: one contribution, whole."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from ..visible import cut, visible
from .common import emit_json, json_option, open_project
from .log import TITLE_CHARS  # a parent's or a cited title is cut there; the description is shown whole
from .render import shown_status, verdict_line


@click.command("show")
@click.argument("sha")
@json_option
@click.pass_context
def command(ctx, sha, as_json):
    """Show contribution SHA: account, tags, metrics, parents, evidence, metadata, description, and
    every verdict on it, counting or not."""
    from ..contribution import encode_metadata
    from ..ops.history import show

    shown = show(open_project(ctx, as_json=as_json), sha)
    if as_json:
        emit_json(shown.to_dict())
        return 0
    c, ev = shown.contribution, shown.evidence
    try:
        when = datetime.fromtimestamp(c.timestamp or 0, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, ValueError, OSError):
        when = f"{c.timestamp} (not a date)"
    lines = [
        f"contribution {c.sha}",
        f"account      {c.account}",
        f"date         {when}",
        f"tags         {', '.join(c.tags)}",
    ]
    lines += [f"metric       {name} = {value:g}" for name, value in c.metrics.items()]
    if c.target and c.verdict:
        lines.append(f"verifies     {c.target} ({c.verdict.value})")
    none, unfetched = "(not a contribution)", "(not fetched: git agora fetch --refs)"
    lines += [f"parent       {p.sha[:12]} {p.account}: {cut(p.title or '', TITLE_CHARS)}" if p.account else
              f"parent       {p.sha[:12]} {none}" for p in shown.parents]  # fmt: skip
    lines += [f"cites        {r.url}#{r.sha[:12]} {cut(r.title, TITLE_CHARS) if r.title else unfetched}"
              for r in shown.cross_refs]  # fmt: skip
    if ev:
        lines.append(
            f"evidence     score {ev.score:g}, {ev.children} children, {ev.descendants} descendants, "
            f"{shown_status({'status': ev.status, 'checked': ev.checked})}"
        )
    else:
        lines.append("evidence     none: this commit is rejected (see `git agora log --rejected`)")
    lines += [f"verdict      {verdict_line(v)}" for v in shown.verdicts]  # every one, counting or not
    lines += [f"note         {note}" for note in (shown.evaluator_note, *shown.run_notes) if note]
    if shown.comparability_warning:
        lines.append(f"WARNING      {shown.comparability_warning}")
    if c.metadata:
        lines.append(f"metadata     {encode_metadata(c.metadata)}")
    body = [f"    {line}" for line in visible(c.description, keep_newlines=True).split("\n")]
    click.echo("\n".join([*map(visible, lines), "", *body]))
    return 0
