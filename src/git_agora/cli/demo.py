"""`git agora demo`: the whole loop on one machine, in about a minute, with nothing to configure."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import click


@click.command("demo")
@click.option("--workers", type=click.IntRange(1, 24), default=4, show_default=True, help="Concurrent worker processes.")
@click.option("--rounds", type=click.IntRange(1, 50), default=3, show_default=True, help="Rounds of the loop per worker.")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), help="Where to build the project (kept).")
@click.option("--keep", is_flag=True, help="Keep the project directory at the end to look around.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the workers' choices.")
def command(workers, rounds, directory, keep, seed):
    """Create a throwaway project (a bare repository as the remote, one clone per worker), run
    scripted workers that analyze, pick a slot, change the model, evaluate, publish, share insights
    and verify each other, then show the frontier, the statistics and the best result's lineage."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..demo.run import DemoPlan, default_directory, follow, found_project, prepare_directory, start_workers, summarize
    from .render import print_demo_summary

    console = Console(highlight=False)
    keep = keep or directory is not None
    directory = (directory or default_directory()).resolve()
    prepare_directory(directory)
    started = time.monotonic()
    plan = DemoPlan(directory, workers, rounds, seed)
    console.print(f"[bold]git agora demo[/]: {workers} workers x {rounds} rounds on a character n-gram model, in {directory}")
    founder = found_project(plan)
    problems = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        task = progress.add_task("workers publishing", total=workers * rounds)

        def on_event(event):
            if event["event"] == "error":
                problems.append(f"{event['account']}: {event['detail']}")
            progress.update(task, advance=1, description=f"{event['account']:>4} {event['detail'][:48]}")

        follow(start_workers(plan), on_event)
    summary = summarize(founder)
    print_demo_summary(summary)
    for problem in problems:
        console.print(f"[yellow]worker problem[/] {problem}")
    console.print(f"finished in {time.monotonic() - started:.0f} s")
    if keep:
        click.echo(f"\nLook around:  cd {founder} && git agora analyze   (also: git agora log, stats, lineage SHA)")
    else:
        shutil.rmtree(directory, ignore_errors=True)
        click.echo("(the project was deleted: run with --keep or --dir DIR to look around)")
    return 0 if not summary.index_differences else 1
