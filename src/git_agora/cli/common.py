"""What every command shares: the project, options, output for people and for agents, errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..contribution import Verdict
from .output import (  # noqa: F401 (what every command imports from here)
    cli_feedback,
    emit_json,
    parse_meta,
    parse_metrics,
    report_failure,
    report_published,
)
from .output import open_project as open_project_at
from .quick import OPTIONS, RECORD


def run_cli(group: click.Group, argv: list[str] | None) -> int:
    """Run the group; every known failure becomes one line on stderr and a non-zero exit."""
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
    except (Exception, KeyboardInterrupt) as exc:
        return report_failure(exc)


def open_project(ctx: click.Context, account: str | None = None, remote: str | None = None, as_json: bool = False):
    """The project, with the command line's feedback (`cli_feedback`)."""
    obj = ctx.find_root().obj or {}
    account = account if account is not None else obj.get("account")  # an empty --account "" is refused
    return open_project_at(obj.get("directory", "."), account, remote, as_json)


def sandbox_option(f: Callable) -> Callable:
    return click.option(
        "--sandbox/--no-sandbox",
        "sandbox",
        default=None,
        help="Run contribution code in the sandbox (the default; git config agora.sandbox off turns it off "
        "for this clone) or, with --no-sandbox, on this machine as you, said on every use and recorded.",
    )(f)


def json_option(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for programs instead of text.")(f)


def post_option(name: str) -> Callable[[Callable], Callable]:
    """The click option of `git agora post`'s parameter `name` as `quick.OPTIONS` declares it: post's
    own, and those other commands share with it (`account_option`, `band_option`, ...)."""
    option = next(o for o in OPTIONS if o.name == name)
    extra: dict[str, Any] = {"type": click.Choice([v.value for v in Verdict])} if name == "verdict" else {}
    if option.flags == (RECORD,):  # a flag, or a FILE (`quick.RECORD`)
        extra = {"is_flag": False, "flag_value": "", "default": None}
    return click.option(
        *option.flags, name, multiple=option.multiple, metavar=option.metavar, help=option.help, **extra
    )


account_option, band_option, ref_option = post_option("account"), post_option("prediction"), post_option("cross_refs")


def new_names_options(f: Callable) -> Callable:
    """--new-tag and --new-metric: a name meant, though it is close to a known one (else refused as a typo)."""
    return post_option("new_tags")(post_option("new_metrics")(f))


SCHEDULED = ("scheduler", "jobs", "scheduler_options", "node_local_ok")


def scheduled(options: dict, reruns: bool) -> dict:
    """The options of `scheduler_options` taken out of `options`; a usage error where one is given without
    --scheduler, or --scheduler where nothing is rerun (`reruns` False)."""
    on = {k: options.pop(k) for k in SCHEDULED}
    if not on["scheduler"] and (on["jobs"] != 1 or on["scheduler_options"] or on["node_local_ok"]):
        raise click.UsageError("--jobs, --slurm-arg and --node-local-ok go with --scheduler")
    if on["scheduler"] and not reruns:
        raise click.UsageError("--scheduler goes with reruns (verify --pending, ci, ci --verify-only)")
    return on


def scheduler_options(what: str, restart: bool = False) -> Callable[[Callable], Callable]:
    """--scheduler, --slurm-arg (as `scheduler_options`), --node-local-ok and, for launch (`restart`),
    --restart, else --jobs: the keyword arguments of `ops.launch.launch` and `ops.ci.verify_pending`."""

    def decorate(f: Callable) -> Callable:
        where = "--dir" if restart else "a clone"
        for option in [
            click.option("--node-local-ok", is_flag=True, help=f"Slurm: allow {where} under /tmp (a single node)."),
            click.option("--restart", is_flag=True, help="Slurm: the job script starts a new session when one ends.")
            if restart
            else None,
            click.option("--slurm-arg", "scheduler_options", multiple=True, metavar="ARG", help="Passed to sbatch."),
            click.option(
                "--scheduler", type=click.Choice(["local", "slurm"]), default="local" if restart else None, help=what
            ),
            None
            if restart
            else click.option("--jobs", type=click.IntRange(1), default=1, show_default=True, help="Reruns at once."),
        ]:
            f = option(f) if option is not None else f
        return f

    return decorate
