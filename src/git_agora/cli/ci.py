"""`git agora ci`: the one command a CI job runs (verify what is new, witness, build the site), and
`--init FORGE`, which writes that job's configuration."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .common import account_option, emit_json, json_option, open_project

KEY_HELP = "The CI account's private key (else the AGORA_CI_KEY environment variable holds its text)."
SITE = click.Path(file_okay=False, path_type=Path)


@click.command("ci")
@click.option("--remote", help="The project's remote (default: git config agora.remote, else origin).")
@click.option("--key-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=KEY_HELP)
@click.option("--max-evaluations", type=click.IntRange(0), default=10, show_default=True, help="Reruns per run.")
@click.option("--max-minutes", type=click.FloatRange(0), default=30.0, show_default=True, help="Minutes of reruns.")
@click.option("--site", "site_dir", type=SITE, default=Path("agora-site"), show_default=True, help="The site's folder.")
@click.option("--no-site", is_flag=True, help="Build no site.")
@click.option("--init", "forge", type=click.Choice(["github", "gitea", "gitlab"]), help="Write this forge's CI job.")
@click.option("--branch", default="main", show_default=True, help="With --init: the default branch it runs from.")
@click.option("--force", is_flag=True, help="With --init: replace an existing configuration.")
@account_option
@json_option
@click.pass_context
def command(
    ctx, remote, key_file, max_evaluations, max_minutes, site_dir, no_site, forge, branch, force, account, as_json
):
    """Run the project's CI once, as a CI account the policy names ([ci] accounts): fetch, rerun in the
    sandbox the claims this account has not verified yet (the leaders, contested and most built-on
    first, within --max-evaluations and --max-minutes), publish the verdicts and a witness record of the
    log tips it saw, build the site, and print a summary (as Markdown also to $GITHUB_STEP_SUMMARY when
    set). The key comes from --key-file or AGORA_CI_KEY and is held in memory only. Exits 0 when the job
    was done, whatever the verdicts; 4 when claims were left unverified because of this runner (a scorer
    that differs from the project's pins, no sandbox, a tool or mount missing), after publishing what it
    did; 1 when it could not start (no key, not a CI account, a failed fetch or push). docs/ci.md."""
    if forge:
        return _init(ctx, forge, branch, force, as_json)
    from ..ops.ci import KEY_VARIABLE, Budget, ci_key, run_ci
    from .render import finish_ci, print_ci_report

    secret = os.environ.pop(KEY_VARIABLE, None)  # not passed on to anything this process starts
    project = open_project(ctx, account, remote, as_json=as_json)
    key = ci_key(project, key_file, secret)
    budget = Budget(max_evaluations, max_minutes)
    report = run_ci(project, budget, None if no_site else site_dir, key)
    (emit_json if as_json else print_ci_report)(report.to_dict() if as_json else report)
    return finish_ci(report, os.environ.get("GITHUB_STEP_SUMMARY"))


def _init(ctx, forge: str, branch: str, force: bool, as_json: bool) -> int:
    from ..ops.ci_recipes import write_recipe

    project = open_project(ctx, as_json=as_json)
    root = Path(project.repo.worktree_path or ".")
    recipe = write_recipe(root, forge, branch=branch, force=force)
    if as_json:
        emit_json({"forge": recipe.forge, "path": recipe.path, "notes": list(recipe.notes)})
        return 0
    click.echo(f"wrote {recipe.path}\n" + "".join(f"  - {note}\n" for note in recipe.notes), nl=False)
    return 0
