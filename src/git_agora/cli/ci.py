"""`git agora ci`: the CI job's one command, its split halves (`--verify-only --out DIR`, `--publish DIR`), `--init`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .common import account_option, emit_json, json_option, open_project, scheduled, scheduler_options

KEY_HELP = "The CI account's private key (else the AGORA_CI_KEY environment variable holds its text)."
DIR = click.Path(file_okay=False, path_type=Path)


@click.command("ci")
@click.option("--remote", help="The project's remote (default: git config agora.remote, else origin).")
@click.option("--key-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=KEY_HELP)
@click.option("--max-evaluations", type=click.IntRange(0), default=10, show_default=True, help="Reruns per run.")
@click.option("--max-minutes", type=click.FloatRange(0), default=30.0, show_default=True, help="Minutes of reruns.")
@click.option("--site", "site_dir", type=DIR, default=Path("agora-site"), show_default=True, help="The site's folder.")
@click.option("--no-site", is_flag=True, help="Build no site.")
@click.option("--verify-only", is_flag=True, help="Rerun with no key; write the verdicts into --out.")
@click.option("--out", type=DIR, help="With --verify-only: the bundle's folder (new or empty).")
@click.option("--publish", "bundle", type=DIR, help="Check and publish the bundle in this folder; rerun nothing.")
@click.option("--init", "forge", type=click.Choice(["github", "gitea", "gitlab"]), help="Write this forge's CI job.")
@click.option("--branch", default="main", show_default=True, help="With --init: the default branch it runs from.")
@click.option("--force", is_flag=True, help="With --init: replace an existing configuration.")
@click.option("--push", is_flag=True, help="With --init: push the branch to the remote.")
@scheduler_options("Each rerun a job of this scheduler, --jobs at once; the key stays in this process.")
@account_option
@json_option
@click.pass_context
def command(ctx, remote, key_file, max_evaluations, max_minutes, site_dir, no_site, verify_only, out, bundle, **rest):
    """Run the project's CI once, as a CI account the policy names ([ci] accounts): fetch, check the scorer
    environment against the policy's lock, rerun in the sandbox the claims it has not verified yet (leaders,
    contested, most built-on first, within --max-evaluations and --max-minutes), publish the verdicts and a
    witness record of the log tips it saw, build the site, print a summary (also to $GITHUB_STEP_SUMMARY).
    The key (--key-file or AGORA_CI_KEY) is held in memory only. --verify-only --out DIR reruns with no key
    and writes the verdicts as data; --publish DIR, with the key, checks and publishes them, running nothing.
    --scheduler slurm --jobs N: each rerun a Slurm job handing back its verdict as data (no key in a job).
    Exits 0 when the job was done, whatever the verdicts; 4: claims left unverified because of this runner;
    5: readers would not count its verdicts; 1: it could not start. docs/ci.md."""
    forge, account, as_json = rest.pop("forge"), rest.pop("account"), rest.pop("as_json")
    on = scheduled(rest, reruns=not (bundle or forge))
    from ..ops.ci import KEY_VARIABLE, Budget, ci
    from .render import finish_ci, print_ci_report, print_recipe

    secret = os.environ.pop(KEY_VARIABLE, None)  # not passed on to anything this process starts
    project = open_project(ctx, None if forge else account, remote, as_json=as_json)
    if forge:
        from ..ops.ci_init import init_ci

        return print_recipe(init_ci(project, forge, rest["branch"], rest["force"], rest["push"]), as_json)
    budget, site = Budget(max_evaluations, max_minutes), None if no_site else site_dir
    split = {"verify_only": verify_only, "out": out, "bundle": bundle}
    report = ci(project, budget, site, key_file=key_file, secret=secret, **split, **on)
    (emit_json if as_json else print_ci_report)(report.to_dict() if as_json else report)
    return finish_ci(report, os.environ.get("GITHUB_STEP_SUMMARY"))
