"""What every command shares: the project, options, output for people and for agents, errors."""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..errors import AgoraError, ExitCode

# a full disk or a missing permission: one line naming the path, never a traceback
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS)


def run_cli(group: click.Group, argv: list[str] | None) -> int:
    """Run the group; every known failure becomes one line on stderr and a non-zero exit."""
    from ..config import ConfigError
    from ..contribution import ContributionError
    from ..refs.git import GitError
    from ..refs.names import RefNameError
    from ..refs.store import RefBusy

    try:
        result = group.main(args=argv, prog_name="git agora", standalone_mode=False)
        return int(result or 0)
    except click.exceptions.Abort:
        click.echo("git agora: aborted", err=True)
        return 130
    except click.UsageError as exc:
        if exc.ctx is not None and exc.ctx.parent is None and not isinstance(exc, click.exceptions.NoArgsIsHelpError):
            # one line: click's hint names `git agora --help`, which git turns into `git help agora`
            message = exc.format_message()
            hint = "" if "git agora -h" in message else " See 'git agora -h'."
            click.echo(f"git agora: error: {message}{hint}", err=True)
        else:
            exc.show()
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except AgoraError as exc:
        click.echo(f"git agora: error: {exc}", err=True)
        return exc.exit_code
    except (ContributionError, ConfigError, RefNameError, GitError, RefBusy) as exc:
        click.echo(f"git agora: error: {exc}", err=True)
        return ExitCode.ERROR
    except BrokenPipeError:
        return ExitCode.OK
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        where = f": {exc.filename}" if exc.filename else ""
        click.echo(f"git agora: error: {exc.strerror or exc}{where}", err=True)
        return ExitCode.ERROR
    except KeyboardInterrupt:
        click.echo("git agora: interrupted", err=True)
        return 130


def open_project(ctx: click.Context, account: str | None = None, remote: str | None = None, as_json: bool = False):
    """The project, with the command line's feedback (`cli_feedback`)."""
    from ..project import Project

    obj = ctx.find_root().obj or {}
    account = account if account is not None else obj.get("account")  # an empty --account "" is refused
    return Project.open(obj.get("directory", "."), account, remote, cli_feedback(as_json))


def cli_feedback(as_json: bool = False):
    """Notices on stderr; on a terminal (never under --json) progress bars and a running evaluator's
    stderr as it comes."""
    from ..feedback import Feedback

    terminal = not as_json and sys.stderr.isatty()
    return Feedback(
        on_notice=lambda m: click.echo(f"git agora: note: {m}", err=True),
        on_progress=_progress_bar if terminal else None,
        on_output=_evaluator_line if terminal else None,
    )


def _evaluator_line(line: str) -> None:
    sys.stderr.write(f"  | {line}\n")
    sys.stderr.flush()


@contextmanager
def _progress_bar(what: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """What, how many (of how many), the rate and the time left (elapsed when the total is unknown)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task) -> Text:
            return Text(f"{task.speed:,.0f}/s" if task.speed else "")

    timing = TimeRemainingColumn() if total else TimeElapsedColumn()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), Rate(), timing)
    with Progress(*columns, transient=True, console=Console(stderr=True)) as progress:
        task = progress.add_task(what, total=total)
        yield lambda done: progress.update(task, completed=done)


def account_option(f: Callable) -> Callable:
    return click.option("--account", help="Publish as this account (else AGORA_ACCOUNT or git config agora.account).")(
        f
    )


def json_option(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for programs instead of text.")(f)


def ref_option(f: Callable) -> Callable:
    return click.option(
        "--ref",
        "cross_refs",
        multiple=True,
        metavar="URL#SHA",
        help="Cite a commit of another Agora project (repeatable).",
    )(f)


def band_option(f: Callable) -> Callable:
    return click.option(
        "--predict",
        "prediction",
        metavar="LOW..HIGH",
        help="The band you predict the primary metric in, e.g. 2.6..3.0 (recorded; analyze's calibration view).",
    )(f)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def parse_metrics(items: Iterable[str]) -> dict[str, float]:
    from ..contribution import ContributionError, parse_metric

    metrics = {}
    for item in items:
        try:
            name, value = parse_metric(item)
        except ContributionError as exc:
            raise AgoraError(f"--metric: {exc}") from None
        metrics[name] = value
    return metrics


def parse_meta(items: Iterable[str]) -> dict[str, Any]:
    from ..contribution import ContributionError, parse_meta_option

    try:
        return parse_meta_option(items)
    except ContributionError as exc:
        raise AgoraError(str(exc)) from None


def report_published(published, as_json: bool, what: str) -> int:
    """Say what happened to a publish; exit QUEUED when the remote does not have it yet."""
    from ..refs.sync import PushOutcome

    outcome = published.push.outcome
    if as_json:
        emit_json(published.to_dict())
        return published.exit_code
    click.echo(f"{what} {published.sha}")
    for parent in published.parents:
        click.echo(f"  on {parent}")
    if outcome in (PushOutcome.PUSHED, PushOutcome.UP_TO_DATE):
        click.echo("pushed")
    elif outcome is PushOutcome.NO_REMOTE:
        click.echo(f"no remote configured: kept locally ({published.push.queued} queued)", err=True)
    elif outcome.queued:
        click.echo(
            f"git agora: push failed ({published.push.detail or outcome.value}); "
            f"{published.push.queued} contribution(s) queued locally, `git agora sync` sends them",
            err=True,
        )
    return published.exit_code
