"""`git agora post`: publish a light contribution (insight, hypothesis, verification, report)."""

from __future__ import annotations

from pathlib import Path

import click

from ..contribution import Verdict
from ..errors import AgoraError
from .common import account_option, band_option, open_project, parse_meta, parse_metrics, ref_option, report_published


@click.command("post")
@click.option("-m", "--message", "description", help="The insight, hypothesis, report...; the first line is the title.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable): insight, hypothesis, report, endorsed, ...")
@click.option("--parent", "parents", multiple=True, metavar="SHA", help="A contribution this builds on (repeatable).")
@click.option("--target", "targets", multiple=True, metavar="SHA", help="The contribution a verification checks.")
@click.option("--verdict", type=click.Choice([v.value for v in Verdict]), help="The verification verdict.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME=VALUE", help="A metric (repeatable).")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Structured metadata (VALUE may be JSON).")
@band_option
@click.option(
    "--json",
    "record",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[FILE]",
    help="Print JSON; with FILE ('-': stdin), publish the minimal contribution record in it "
    "(agent_id, parent_hashes, tags, description, value with metric_value and free keys).",
)
@ref_option
@account_option
@click.pass_context
def command(ctx, description, tags, parents, targets, verdict, metrics, meta, prediction, record, cross_refs, account):
    """Publish an insight, hypothesis, verification or report on top of existing contributions
    (default: the checked-out one). `--json FILE` reads the paper's record from FILE (`-`: stdin)."""
    from ..ops.publish import post, read_record, record_fields

    project = open_project(ctx, account, as_json=record is not None)
    fields = record_fields(project, read_record(record, _text(record))) if record else {}
    description = description or fields.get("description")
    if not description or not description.strip():
        raise AgoraError("empty description: say what this contribution is (-m)")
    published = post(
        project,
        description,
        tags or fields.get("tags", ()),
        parents or fields.get("parents", ()),
        targets or fields.get("targets", ()),
        verdict or fields.get("verdict"),
        {**fields.get("metrics", {}), **parse_metrics(metrics)},
        {**fields.get("meta", {}), **parse_meta(meta)},
        cross_refs,
        prediction,
    )
    return report_published(published, record is not None, "published")


def _text(path: str) -> str:
    return click.open_file(path).read() if path == "-" else Path(path).read_text()
