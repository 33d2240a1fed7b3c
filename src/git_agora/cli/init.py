"""`git agora init`: create the setup contribution and publish it."""

from __future__ import annotations

from pathlib import Path

import click

from ..config import BRIEF_FILE, CONFIG_FILE, ConfigError, ProjectConfig
from ..contribution import Contribution
from ..errors import AgoraError
from .common import account_option, json_option, open_project, report_published


@click.command("init")
@click.option("--name", help="Project name (default: the directory name).")
@click.option("--metric", help="Name of the primary metric, e.g. bpb.")
@click.option("--direction", type=click.Choice(["min", "max"]), help="Whether the metric is minimised or maximised.")
@click.option("--eval", "eval_command", help="Command that evaluates a checkout and prints a JSON object with the metric.")
@click.option("--tolerance", type=float, help="Reproduction tolerance of the metric (differences below it are noise).")
@click.option("--brief", type=click.Path(exists=True, dir_okay=False), help="File to publish as program.md, the brief.")
@click.option("--remote", help="Git remote to publish to (default: origin if it exists).")
@account_option
@json_option
@click.pass_context
def command(ctx, name, metric, direction, eval_command, tolerance, brief, remote, account, as_json):
    """Create the setup contribution: the current files plus agora.toml and program.md."""
    from ..publish import publish
    from ..workspace import adopt_if_unborn, check_size, snapshot

    project = open_project(ctx, account, remote)
    repo = project.repo
    if repo.bare:
        raise AgoraError("git agora init needs a work tree, not a bare repository")
    existing = project.find_setup()
    if existing:
        raise AgoraError(f"this repository already has an Agora project (setup {existing[:12]})")
    account = project.account
    _ = project.remote  # validate before writing anything
    config = _project_config(repo.worktree, name, metric, direction, eval_command, tolerance)
    (repo.worktree / CONFIG_FILE).write_text(config.dump())
    brief_path = repo.worktree / BRIEF_FILE
    if brief:
        brief_path.write_text(Path(brief).read_text())
    elif not brief_path.exists():
        brief_path.write_text(_default_brief(config))
    if remote:
        repo.git.config_set("agora.remote", remote)
    with snapshot(repo) as snap:
        check_size(repo, snap.tree, config.max_file_bytes)
        setup = Contribution(
            account=account,
            tags=("setup",),
            description=f"Setup: {config.name}\n\n" + _setup_summary(config),
            metadata={"metric": config.metric, "direction": config.direction, "tolerance": config.tolerance},
        )
        published = publish(project, setup, snap.tree)
        adopt_if_unborn(repo, published.sha, snap)
    repo.git.config_set("agora.setup", published.sha)
    project.set_base(published.sha)
    return report_published(published, as_json, "setup")


def _project_config(root: Path, name, metric, direction, eval_command, tolerance) -> ProjectConfig:
    path = root / CONFIG_FILE
    try:
        base = ProjectConfig.parse(path.read_text()) if path.exists() else ProjectConfig(name=root.name)
        overrides = {
            "name": name,
            "metric": metric,
            "direction": direction,
            "eval_command": eval_command,
            "tolerance": tolerance,
        }
        values = {**base.__dict__, **{k: v for k, v in overrides.items() if v is not None}}
        if "ucb" not in values["sections"]:
            from ..frontier.ucb import UcbParams

            values["sections"] = {**values["sections"], "ucb": UcbParams().to_dict()}
        return ProjectConfig(**values)
    except ConfigError as exc:
        raise AgoraError(str(exc)) from None


def _setup_summary(config: ProjectConfig) -> str:
    if not config.metric:
        return "No primary metric."
    arrow = "lower" if config.direction == "min" else "higher"
    line = f"Primary metric: {config.metric} ({arrow} is better, tolerance {config.tolerance:g})."
    if config.eval_command:
        line += f"\nEvaluation: {config.eval_command}"
    return line


def _default_brief(config: ProjectConfig) -> str:
    from importlib.resources import files

    template = files("git_agora").joinpath("templates/program.md").read_text()
    metric_line = ""
    if config.metric:
        metric_line = f"\n\nThe primary metric is `{config.metric}` ({config.direction}imise)."
    return template.format(name=config.name, metric_line=metric_line)
