"""`git agora launch`: N agents on a project, each with its own clone, account, key and logs; `status`, `stop`."""

from __future__ import annotations

from pathlib import Path

import click

from ..ops.launch import launch, launch_status, stop_launch
from .common import cli_feedback, emit_json, json_option, scheduler_options
from .render import print_launch_status

DIR = click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), help="The launch directory.")


class LaunchGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """`launch status`, `launch stop`; anything else starts agents (`launch -h` is its help)."""
        return super().parse_args(ctx, args if args[:1] and args[0] in self.commands else ["start", *args])


command = LaunchGroup("launch", help="Start agents (`launch -h`), see them (`launch status`), end them (`stop`).")


@command.command("start")
@click.argument("remote")
@click.option("--agents", "count", type=int, required=True, help="How many agents (each its own clone and account).")
@click.option("--command", "agent", metavar="CMD", help="The agent's command line; {prompt} becomes the prompt.")
@click.option("--scripted", is_flag=True, help="Run the built-in scripted worker (the demo's task) instead.")
@click.option("--budget-minutes", type=float, default=60.0, show_default=True, help="Wall-clock minutes per agent.")
@click.option("--rounds", type=int, help="Rounds of the scripted worker [default: 3]; external agents decide.")
@DIR
@click.option("--prefix", default="agent", show_default=True, help="Accounts are PREFIX-01, PREFIX-02, ...")
@click.option("--grace", type=float, default=10.0, show_default=True, help="Seconds between SIGTERM and SIGKILL.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the scripted workers' choices.")
@click.option("--wait", is_flag=True, help="Supervise in the foreground until every agent ended.")
@scheduler_options("local: a supervisor here; slurm: one sbatch job per agent, --time its budget.", True)
@json_option
def start(remote, count, agent, scripted, budget_minutes, rounds, directory, prefix, grace, seed, wait, as_json, **on):
    """Start agents on the Agora project at REMOTE, each with its own clone (--dir, default ./agora-agents),
    account, key and logs, stopped at its budget by a detached supervisor (--wait: by this one) or Slurm."""
    asked = (count, agent, scripted, rounds, budget_minutes, directory, prefix, grace, seed, wait)
    result = launch(remote, *asked, cli_feedback(), **on)  # type: ignore[misc]
    _show(result, as_json)
    return 1 if result.crashed else 0


@command.command("status")
@DIR
@json_option
def status(directory, as_json):
    """Who is running, how each agent ended, its budget and its last contribution."""
    _show(launch_status(directory), as_json)


@command.command("stop")
@DIR
@json_option
def stop(directory, as_json):
    """End every agent: SIGTERM to its process group, SIGKILL after the grace period (Slurm: scancel)."""
    _show(stop_launch(directory), as_json)


def _show(result, as_json: bool) -> None:
    emit_json(result.to_dict()) if as_json else print_launch_status(result)
