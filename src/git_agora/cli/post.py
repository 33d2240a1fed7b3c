"""`git agora post`: publish a light contribution (insight, hypothesis, verification, report). A plain
command line runs without click (`quick`); this declaration gives its help and its errors."""

from __future__ import annotations

import click

from .common import post_option
from .quick import OPTIONS, PostCall, run_post


def _options(command):
    for option in reversed(OPTIONS):  # listed in their order
        command = post_option(option.name)(command)
    return command


@click.command("post")
@_options
@click.pass_context
def command(ctx, **params):
    """Publish an insight, hypothesis, verification or report on top of existing contributions
    (default: the checked-out one). `--json FILE` reads the paper's record from FILE (`-`: stdin)."""
    root = ctx.find_root().obj or {}
    return run_post(PostCall(**params, group_account=root.get("account"), directory=root.get("directory", ".")))
