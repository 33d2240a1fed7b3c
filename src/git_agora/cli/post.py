"""`git agora post`: publish a light contribution (insight, hypothesis, verification, report). A plain
command line runs without click (`quick`); this declaration gives its help and its errors."""

from __future__ import annotations

import click

from ..contribution import Verdict
from .common import account_option, band_option, new_names_options, ref_option
from .quick import PostCall, run_post


@click.command("post")
@click.option("-m", "--message", "description", help="The insight, hypothesis, report...; the first line is the title.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable): insight, hypothesis, report, endorsed, ...")
@click.option("--parent", "parents", multiple=True, metavar="SHA", help="A contribution this builds on (repeatable).")
@click.option("--target", "targets", multiple=True, metavar="SHA", help="The contribution a verification checks.")
@click.option("--verdict", type=click.Choice([v.value for v in Verdict]), help="The verification verdict.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME=VALUE", help="A metric (repeatable).")
@new_names_options
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
def command(ctx, **params):
    """Publish an insight, hypothesis, verification or report on top of existing contributions
    (default: the checked-out one). `--json FILE` reads the paper's record from FILE (`-`: stdin)."""
    root = ctx.find_root().obj or {}
    return run_post(PostCall(**params, group_account=root.get("account"), directory=root.get("directory", ".")))
