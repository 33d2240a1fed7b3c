"""`init_project`: create the setup contribution (the current files plus agora.toml and program.md)."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from importlib.resources import files
from pathlib import Path

from ..config import BRIEF_FILE, CI_FORMAT, CONFIG_FILE, VERDICTS_FORMAT, ConfigError, ProjectConfig
from ..contribution import SETUP, Contribution
from ..errors import AgoraError
from ..project import Project
from .publish import Published, publish
from .templates import Copied, copy_template, template_files


@dataclass(frozen=True)
class Evaluation:
    """How `init` sets up the evaluation (`[eval]`): one command, or a build and a trusted score."""

    command: str | None = None
    build: str | None = None
    score: str | None = None
    files: tuple[str, ...] = ()  # evaluator files to fix (two phases: and those the score command names)
    quick: str | None = None
    output: tuple[str, ...] = ()
    scorer: tuple[str, ...] = ()


def init_project(
    project: Project,
    name: str | None = None,
    metric: str | None = None,
    direction: str | None = None,
    eval_command: str | None = None,
    tolerance: float | None = None,
    brief: Path | None = None,
    remote: str | None = None,
    evaluation: Evaluation | None = None,
    template: str | None = None,
    ci: tuple[tuple[str, str], ...] = (),
) -> Published:
    """Write agora.toml (from the one in the work tree, if any, with these overrides) and program.md,
    then publish the work tree as the project's setup. `evaluation` (or `eval_command`, one command)
    sets `[eval]`. A one-command evaluation fixes no file unless told to (its results are self-scored);
    a two-phase one fixes the files its score command names. Each fixed file is said, with how to
    change it later. `ci`: (account, public key line) pairs, written to `[ci] accounts` and `[ci] keys`;
    a CI account without its key is refused (`ProjectConfig.unpinned_ci_problem`), and a new setup's
    `[ci] format` is 2 (an unpinned CI account is no CI). `template` first copies one of
    `ops.templates.template_names()` into the work tree (refused, writing nothing, when one of its
    files is already there); a failure before the setup is published takes the copy back."""
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
    if eval_command and evaluation and (evaluation.build or evaluation.score or evaluation.command):
        raise AgoraError("--eval is one command; --build and --score are the two phases: choose one form")
    if eval_command:
        evaluation = replace(evaluation or Evaluation(), command=eval_command)
    worktree = Path(repo.worktree_path)
    copied = _copy_template_keeping_ci(template, worktree) if template else None
    with _taken_back_on_failure(copied):
        config = _write_config(
            worktree, evaluation, brief, ci, name=name, metric=metric, direction=direction, tolerance=tolerance
        )
    _warn_of_the_scorer_environment(project, config, worktree)
    if copied:
        project.feedback.notice(
            f"copied the {template} template: {', '.join(sorted(copied.written + list(copied.merged)))}"
        )
    if remote:
        repo.git.config_set("agora.remote", remote)
    repo.git.config_set("agora.account", account)
    with snapshot(repo) as snap:
        with _taken_back_on_failure(copied):
            check_size(repo, snap.tree, config.max_file_bytes)
            try:
                protected_entries(repo, snap.tree, config.evaluation.files)
            except ConfigError as exc:
                raise AgoraError(str(exc)) from None
        setup = Contribution(
            account=account,
            tags=(SETUP,),
            description=f"Setup: {config.name}\n\n" + _summary(config),
            metadata={"metric": config.metric, "direction": config.direction, "tolerance": config.tolerance},
        )
        published = publish(project, setup, snap.tree)
        adopt_if_unborn(repo, published.sha, snap)
    _say_what_is_fixed(project, config)
    repo.git.config_set("agora.setup", published.sha)
    project.set_base(published.sha)
    return published


def _copy_template_keeping_ci(template: str, worktree: Path) -> Copied:
    """`copy_template`, where an agora.toml that holds a `[ci]` table alone (written first, as docs/ci.md
    says) is not a clash: its table is appended to the template's agora.toml (and put back on failure)."""
    import tomllib

    path = worktree / CONFIG_FILE
    before = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    if before is None:
        return copy_template(template, worktree)
    template_files(template)  # an unknown template is said first
    keep = f"keep only a [ci] table in it (the template's {CONFIG_FILE} takes it in), or move it away"
    try:
        tables = tomllib.loads(before.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AgoraError(f"the {CONFIG_FILE} here is not valid TOML ({exc}): {keep}") from None
    others = sorted(set(tables) - {"ci"})
    if others or not isinstance(tables.get("ci"), dict):
        held = f"more than a [ci] table ({', '.join(others)})" if others else "no [ci] table"
        raise AgoraError(f"the template {template} would overwrite {CONFIG_FILE}, which holds {held}: {keep}")
    path.unlink()
    try:
        copied = copy_template(template, worktree)
    except BaseException:
        path.write_bytes(before)
        raise
    text = path.read_text()
    path.write_text(text + ("" if text.endswith("\n") else "\n") + "\n" + before.decode())
    copied.written.remove(CONFIG_FILE)
    copied.merged[CONFIG_FILE] = before  # a failed init puts the [ci] file back as it was
    return copied


def _warn_of_the_scorer_environment(project: Project, config: ProjectConfig, root: Path) -> None:
    """Say so when this machine's scorer is not the one the lock records (`[eval] lock`): the pins are of
    what is installed here, and the CI, which installs the lock, would refuse to rerun anything."""
    from .scorer_env import environment_problem

    spec = config.evaluation
    lock = root / spec.lock if spec.lock else None
    try:
        problem = environment_problem(spec, lock.read_text() if lock and lock.is_file() else None)
    except AgoraError as exc:
        problem = str(exc)
    if problem:
        how = f"python -m pip install --require-hashes -r {spec.lock}" if spec.lock else "the policy's Python"
        project.feedback.notice(
            f"warning: the scorer environment here is not the policy's ({problem}): the CI will refuse to rerun "
            f"under it; install it ({how}) before publishing results"
        )


@contextmanager
def _taken_back_on_failure(copied: Copied | None) -> Iterator[None]:
    """What the template copied is removed again when the setup fails before it is published."""
    try:
        yield
    except BaseException:
        if copied:
            copied.undo()
        raise


def _write_config(
    root: Path, wanted: Evaluation | None, brief: Path | None, ci: tuple[tuple[str, str], ...], **overrides
) -> ProjectConfig:
    """The config (`_config`, `with_ci`), checked (`_check_programs`), written to agora.toml; and the brief."""
    config = with_ci(_config(root, wanted, **overrides), ci)
    _check_programs(config, root)
    (root / CONFIG_FILE).write_text(config.dump())
    brief_path = root / BRIEF_FILE
    if brief:
        brief_path.write_text(Path(brief).read_text())
    elif not brief_path.exists():
        brief_path.write_text(_default_brief(config))
    return config


def _config(root: Path, wanted: Evaluation | None, **overrides) -> ProjectConfig:
    path = root / CONFIG_FILE
    try:
        base = ProjectConfig.parse(path.read_text()) if path.exists() else ProjectConfig(name=root.name)
        config = replace(base, **{k: v for k, v in overrides.items() if v is not None})
        evaluation = config.evaluation
        if wanted is not None:
            given = {k: v for k, v in vars(wanted).items() if v not in (None, ())}
            if wanted.command or wanted.build or wanted.score:  # a new form replaces the file's
                given = {"build": None, "score": None, "command": None, **given}
            evaluation = replace(evaluation, **given)
        if evaluation.two_phase:  # the score runs the fixed files alone: what its command names is one of them
            named = _files_named_by(evaluation.score or "", root)
            evaluation = replace(evaluation, files=tuple(dict.fromkeys((*evaluation.files, *named))))
        if evaluation.uses_format_2() and evaluation.format < 2:
            evaluation = replace(evaluation, format=2)
        config = replace(config, evaluation=evaluation)
    except ConfigError as exc:
        raise AgoraError(str(exc)) from None
    from ..frontier.ucb_params import NEW_SETUPS, UcbParams

    sections = {"identity": {"signatures": "required"}, **config.sections}  # new projects: signed work only
    sections.setdefault("ucb", NEW_SETUPS.to_dict())
    sections.setdefault("verdicts", {"format": VERDICTS_FORMAT})  # new projects: ranked standing (section 6)
    try:  # a setup whose [ucb] no reader accepts would leave the project without analyze
        UcbParams.from_mapping(sections["ucb"])
    except ValueError as exc:
        raise AgoraError(f"{CONFIG_FILE} {exc}") from None
    return replace(config, sections=sections)


def with_ci(config: ProjectConfig, pairs: tuple[tuple[str, str], ...]) -> ProjectConfig:
    """`config` with these CI accounts and their keys added to `[ci]`, in `[ci] format` 2; refused when a
    CI account has no key (`ProjectConfig.unpinned_ci_problem`)."""
    ci = dict(config.sections.get("ci", {}))
    accounts = list(ci.get("accounts", []))
    keys = dict(ci.get("keys", {}))
    for account, key in pairs:
        accounts += [] if account in accounts else [account]
        keys[account] = key
    ci = {"format": ci.get("format", CI_FORMAT), **ci} | ({"accounts": accounts, "keys": keys} if pairs else {})
    try:
        config = replace(config, sections={**config.sections, "ci": ci})
    except ConfigError as exc:
        raise AgoraError(str(exc)) from None
    problem = config.unpinned_ci_problem()
    if problem:
        raise AgoraError(problem)
    return config


def ci_pairs(accounts: tuple[str, ...], keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """`--ci-account` / `--ci-key` as (account, public key line) pairs, in order; a key is the text of a
    `.pub` file or the path of one. Refused unless they pair up."""
    if len(accounts) != len(keys):
        raise AgoraError(
            f"--ci-account and --ci-key go in pairs, one key for each CI account ({len(accounts)} accounts, "
            f"{len(keys)} keys)"
        )
    pairs = []
    for account, key in zip(accounts, keys):
        text = key if key.startswith("ssh-") else _read_public(key)
        parts = text.split()
        if len(parts) < 2 or not parts[0].startswith("ssh-"):
            raise AgoraError(f"--ci-key {key}: not an OpenSSH public key (the line of a .pub file)")
        pairs.append((account, " ".join(parts[:3])))
    return tuple(pairs)


def _read_public(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace").strip()
    except OSError as exc:
        raise AgoraError(f"--ci-key {path}: {exc.strerror or exc}") from None


_SHELL_WORDS = {"cd", "export", "exec", "source", ".", "set", "eval", "test", "[", "if", "for", "while", "(", "{"}


def _check_programs(config: ProjectConfig, root: Path) -> None:
    """Each evaluation command's program exists: on PATH, or a file of the tree."""

    spec = config.evaluation
    for what, command in (("command", spec.command), ("build", spec.build), ("score", spec.score)):
        if not command:
            continue
        try:
            words = [w for w in shlex.split(command) if "=" not in w.split("/")[0]]  # past VAR=value
        except ValueError as exc:
            raise AgoraError(f"[eval] {what}: {exc}: {command!r}") from None
        program = words[0] if words else ""
        if program in _SHELL_WORDS:
            continue  # bash's own (`cd sub && ...`): the program that follows is bash's to find
        if program and not shutil.which(program) and not (root / program).is_file():
            raise AgoraError(f"[eval] {what} runs {program!r}, which is neither on PATH nor a file of this tree")


def _say_what_is_fixed(project: Project, config: ProjectConfig) -> None:
    """Which files the setup fixes and how to change them; a self-scored evaluation says so."""
    spec = config.evaluation
    if spec.configured and not spec.two_phase and not spec.files:
        project.feedback.notice(
            "results are self-scored: a contribution can change how it is measured; use --build/--score for "
            "a trusted scorer, or --eval-files to fix files"
        )
    for path in (CONFIG_FILE, *spec.files):
        project.feedback.notice(
            f"fixed: {path} (a contribution that changes it is invalid; the setup's account changes it with "
            "a policy amendment: git agora push --tag policy)"
        )
    for package, digest in spec.pins.items():
        project.feedback.notice(
            f"pinned: {package} (sha256 {digest[:12]}...): an installation whose {package} differs refuses to score"
        )


def _files_named_by(command: str, root: Path) -> tuple[str, ...]:
    """The evaluator files a command names (`python3 score.py` -> score.py): frozen by default."""

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

    template = files("git_agora").joinpath("templates/program.md").read_text()
    metric_line = f"\n\nThe primary metric is `{config.metric}` ({config.direction}imise)." if config.metric else ""
    return template.format(name=config.name, metric_line=metric_line)
