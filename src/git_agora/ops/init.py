"""`init_project`: create the setup contribution (the current files plus agora.toml and program.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..config import BRIEF_FILE, CONFIG_FILE, ConfigError, ProjectConfig
from ..contribution import Contribution
from ..errors import AgoraError
from ..project import Project
from .publish import Published, publish


def init_project(
    project: Project,
    name: str | None = None,
    metric: str | None = None,
    direction: str | None = None,
    eval_command: str | None = None,
    tolerance: float | None = None,
    brief: Path | None = None,
    remote: str | None = None,
) -> Published:
    """Write agora.toml (from the one in the work tree, if any, with these overrides) and program.md,
    then publish the work tree as the project's setup."""
    from ..policy import protected_entries
    from ..workspace import adopt_if_unborn, check_size, snapshot

    repo = project.repo
    if repo.bare:
        raise AgoraError("git agora init needs a work tree, not a bare repository")
    existing = project.find_setup()
    if existing:
        raise AgoraError(f"this repository already has an Agora project (setup {existing[:12]})")
    account = project.account
    _ = project.remote  # validate before writing anything
    config = _config(repo.worktree, eval_command, name=name, metric=metric, direction=direction, tolerance=tolerance)
    (repo.worktree / CONFIG_FILE).write_text(config.dump())
    brief_path = repo.worktree / BRIEF_FILE
    if brief:
        brief_path.write_text(Path(brief).read_text())
    elif not brief_path.exists():
        brief_path.write_text(_default_brief(config))
    if remote:
        repo.git.config_set("agora.remote", remote)
    repo.git.config_set("agora.account", account)
    with snapshot(repo) as snap:
        check_size(repo, snap.tree, config.max_file_bytes)
        try:
            protected_entries(repo, snap.tree, config.evaluation.files)
        except ConfigError as exc:
            raise AgoraError(str(exc)) from None
        setup = Contribution(
            account=account,
            tags=("setup",),
            description=f"Setup: {config.name}\n\n" + _summary(config),
            metadata={"metric": config.metric, "direction": config.direction, "tolerance": config.tolerance},
        )
        published = publish(project, setup, snap.tree)
        adopt_if_unborn(repo, published.sha, snap)
    repo.git.config_set("agora.setup", published.sha)
    project.set_base(published.sha)
    return published


def _config(root: Path, eval_command: str | None, **overrides) -> ProjectConfig:
    path = root / CONFIG_FILE
    try:
        base = ProjectConfig.parse(path.read_text()) if path.exists() else ProjectConfig(name=root.name)
        config = replace(base, **{k: v for k, v in overrides.items() if v is not None})
        evaluation = replace(config.evaluation, command=eval_command) if eval_command else config.evaluation
        if evaluation.configured and not evaluation.files:
            evaluation = replace(evaluation, files=_files_named_by(evaluation.score or evaluation.command or "", root))
        config = replace(config, evaluation=evaluation)
    except ConfigError as exc:
        raise AgoraError(str(exc)) from None
    sections = {"identity": {"signatures": "required"}, **config.sections}  # new projects: signed work only
    if "ucb" not in sections:
        from ..frontier.ucb import UcbParams

        sections["ucb"] = UcbParams().to_dict()
    return replace(config, sections=sections)


def _files_named_by(command: str, root: Path) -> tuple[str, ...]:
    """The evaluator files a command names (`python3 score.py` -> score.py): frozen by default."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return ()
    inside = [w for w in words if not w.startswith("-") and not Path(w).is_absolute() and ".." not in Path(w).parts]
    return tuple(dict.fromkeys(w for w in inside if (root / w).is_file()))


def _summary(config: ProjectConfig) -> str:
    if not config.metric:
        return "No primary metric."
    arrow = "lower" if config.direction == "min" else "higher"
    line = f"Primary metric: {config.metric} ({arrow} is better, tolerance {config.tolerance:g})."
    spec = config.evaluation
    if spec.two_phase:
        line += f"\nEvaluation: build `{spec.build}`, then score `{spec.score}`"
    elif spec.command:
        line += f"\nEvaluation: {spec.command}"
    if spec.files:
        line += f"\nEvaluator files (fixed by this setup): {', '.join(spec.files)}"
    return line


def _default_brief(config: ProjectConfig) -> str:
    from importlib.resources import files

    template = files("git_agora").joinpath("templates/program.md").read_text()
    metric_line = f"\n\nThe primary metric is `{config.metric}` ({config.direction}imise)." if config.metric else ""
    return template.format(name=config.name, metric_line=metric_line)
