"""What commands print and how they fail, without click: notices, progress and output for people and
for agents, published contributions, and the one line a known failure becomes. Shared by the click
commands (`common`) and by the quick entry (`quick`), which starts without click."""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import AgoraError, ExitCode
from ..visible import visible

# a full disk or a missing permission: one line naming the path, never a traceback
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS)


def say(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def report_failure(exc: BaseException) -> int:
    """Print the one line a known failure becomes and return its exit status; a bug (anything else) is
    raised again, with its traceback."""
    known = _known_failure(exc)
    if known is None:
        raise exc
    line, code = known
    if line:
        say(visible(line), err=True)  # one line, whatever the message quotes
    return code


def _known_failure(exc: BaseException) -> tuple[str | None, int] | None:
    """(the line to print, the exit status) for a failure a command may end with; None for a bug."""
    from ..config import ConfigError
    from ..contribution import ContributionError
    from ..refs.git import GitError
    from ..refs.names import RefNameError
    from ..refs.store import RefBusy

    if isinstance(exc, AgoraError):
        return f"git agora: error: {exc}", exc.exit_code
    if isinstance(exc, (ContributionError, ConfigError, RefNameError, GitError, RefBusy)):
        return f"git agora: error: {exc}", ExitCode.ERROR
    if isinstance(exc, BrokenPipeError):
        return None, ExitCode.OK
    if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
        where = f": {exc.filename}" if exc.filename else ""
        return f"git agora: error: {exc.strerror or exc}{where}", ExitCode.ERROR
    if isinstance(exc, KeyboardInterrupt):
        return "git agora: interrupted", 130
    return None


def open_project(
    directory: str,
    account: str | None,
    remote: str | None = None,
    as_json: bool = False,
):
    """The project in `directory`, with the command line's feedback (`cli_feedback`)."""
    from ..project import Project

    return Project.open(directory, account, remote, cli_feedback(as_json))


def cli_feedback(as_json: bool = False):
    """Notices on stderr; on a terminal (never under --json) progress bars and a running evaluator's
    stderr as it comes."""
    from ..feedback import Feedback

    terminal = not as_json and sys.stderr.isatty()
    return Feedback(
        on_notice=lambda m: say(f"git agora: note: {visible(m)}", err=True),
        on_progress=_progress_bar if terminal else None,
        on_output=(lambda line: say(f"  | {line}", err=True)) if terminal else None,
    )


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


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def parse_metrics(items: Iterable[str]) -> dict[str, float]:
    from ..contribution import ContributionError, parse_metric

    try:
        return dict(parse_metric(item) for item in items)
    except ContributionError as exc:
        raise AgoraError(f"--metric: {exc}") from None


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
    lines = [f"{what} {published.sha}", *(f"  on {parent}" for parent in published.parents)]
    if published.measured:
        name, value, claimed = published.measured
        beside = "no claim: the measured value is published" if claimed is None else f"you claimed {claimed:.6g}"
        lines.insert(0, f"measured {name} = {value:.6g} ({beside})")
    if outcome in (PushOutcome.PUSHED, PushOutcome.UP_TO_DATE):
        lines.append("pushed")
    say("\n".join(lines))
    if outcome is PushOutcome.NO_REMOTE:
        say(
            f"no remote configured: kept locally ({published.push.queued} contribution(s) to send once a remote "
            "is added: `git remote add origin URL && git agora sync`)",
            err=True,
        )
    elif outcome.queued:
        say(
            f"git agora: push failed ({published.push.detail or outcome.value}); "
            f"{published.push.queued} contribution(s) queued locally, `git agora sync` sends them",
            err=True,
        )
    return published.exit_code
