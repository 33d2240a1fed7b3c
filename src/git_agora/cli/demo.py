"""`git agora demo`: the whole loop on one machine, in about a minute, with nothing to configure."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import click


@click.command("demo")
@click.option(
    "--workers", type=click.IntRange(1, 24), default=4, show_default=True, help="Concurrent worker processes."
)
@click.option(
    "--rounds", type=click.IntRange(1, 50), default=3, show_default=True, help="Rounds of the loop per worker."
)
@click.option(
    "--dir", "directory", type=click.Path(file_okay=False, path_type=Path), help="Where to build the project (kept)."
)
@click.option("--keep", is_flag=True, help="Keep the project directory at the end to look around.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the workers' choices.")
@click.option(
    "--no-sandbox", is_flag=True, help="Run the evaluations unsandboxed (where bubblewrap cannot run), as you."
)
def command(workers, rounds, directory, keep, seed, no_sandbox):
    """Create a throwaway project (a bare repository as the remote, one clone per worker), run
    scripted workers that analyze, pick a slot, change the model, evaluate, publish, share insights
    and verify each other, then show the frontier, the statistics and the best result's lineage."""
    from ..demo.run import DemoPlan, run_demo
    from .render import demo_progress, print_demo_summary

    started = time.monotonic()
    plan = DemoPlan.create(directory, workers, rounds, seed, sandbox=not no_sandbox)
    click.secho(
        f"git agora demo: {workers} workers x {rounds} rounds on a character n-gram model, in {plan.directory}",
        bold=True,
    )
    with demo_progress(workers * rounds) as on_event:
        summary = run_demo(plan, on_event)
    print_demo_summary(summary)
    click.echo(f"finished in {time.monotonic() - started:.0f} s")
    if keep or directory is not None:
        click.echo(
            f"\nLook around:  cd {summary.founder} && git agora analyze   (also: git agora log, stats, lineage SHA)"
        )
        click.echo(f"See the map:  git agora -C {summary.founder} site {plan.directory / 'site'} --open   (or --serve)")
    else:
        shutil.rmtree(plan.directory, ignore_errors=True)
        click.echo("(the project was deleted: run with --keep or --dir DIR to look around)")
    return 0 if not summary.index_differences and summary.holds.all_hold else 1
