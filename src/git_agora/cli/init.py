"""`git agora init`: create the setup contribution and publish it."""

from __future__ import annotations

from pathlib import Path

import click

from ..ops.templates import template_names
from .common import account_option, json_option, open_project, report_published


@click.command("init")
@click.option("--name", help="Project name (default: the directory name).")
@click.option("--metric", help="Name of the primary metric, e.g. bpb.")
@click.option("--direction", type=click.Choice(["min", "max"]), help="Whether the metric is minimised or maximised.")
@click.option("--tolerance", type=float, help="Reproduction tolerance of the metric (differences below it are noise).")
@click.option("--eval", "eval_command", help="One command that evaluates a tree and prints the metric (self-scored).")
@click.option("--build", help="Two phases: the contribution's command that writes {artifact}.")
@click.option("--score", help="Two phases: the trusted command that scores {artifact} and prints the metric.")
@click.option("--eval-files", multiple=True, metavar="PATH", help="An evaluator file to fix (repeatable).")
@click.option("--quick", help="Extra arguments for `git agora run --quick` (not comparable).")
@click.option("--output", multiple=True, metavar="FIELD", help="An output field results record (repeatable).")
@click.option("--scorer", multiple=True, metavar="PACKAGE", help="An installed package that scores (repeatable).")
@click.option(
    "--template",
    metavar="NAME",
    help=f"Start from a ready project, copied into the work tree first: {' or '.join(template_names())}.",
)
@click.option("--brief", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="The brief (program.md).")
@click.option("--remote", help="Git remote to publish to (default: origin if it exists).")
@click.option("--ci-account", "ci_accounts", multiple=True, metavar="NAME", help="The CI account (repeatable).")
@click.option("--ci-key", "ci_keys", multiple=True, metavar="PUB", help="Its public key (.pub file), in order.")
@account_option
@json_option
@click.pass_context
def command(ctx, account, as_json, **o):
    """Create the setup contribution: the current files plus agora.toml and program.md. The evaluation
    is one command (--eval: results are self-scored) or two phases (--build writes {artifact}, --score
    reads it with the evaluator files alone). --template NAME starts from a ready project (its files,
    agora.toml and program.md; the options above override its agora.toml). Each file it fixes is said;
    the account is remembered. --ci-account NAME --ci-key PUB names the project's CI account with its
    key ([ci] accounts and keys); a CI account without its key is refused."""
    from ..ops.init import Evaluation, ci_pairs, init_project

    ci = ci_pairs(o["ci_accounts"], o["ci_keys"])
    wanted = Evaluation(None, o["build"], o["score"], o["eval_files"], o["quick"], o["output"], o["scorer"])
    project = open_project(ctx, account, o["remote"], as_json=as_json)
    names = ("name", "metric", "direction", "eval_command", "tolerance", "brief", "remote")
    published = init_project(project, **{k: o[k] for k in names}, evaluation=wanted, template=o["template"], ci=ci)
    return report_published(published, as_json, "setup")
