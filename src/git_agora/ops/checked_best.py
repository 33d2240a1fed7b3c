"""What `clone` and `checkout --best` say about the result they check out: its status as readers show
it (`frontier.checked`: "unchecked" when it carries no run record, else its verification status), and,
when the best is unchecked, the best run-backed result beside it (what `--checked` checks out). Which
result is the best is `frontier.views.best`'s rule, not this module's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..project import Project


@dataclass(frozen=True)
class Pick:
    """One result: sha, title, value of the project's metric, shown status, whether it is run-backed."""

    sha: str
    title: str
    metric: float | None
    status: str
    checked: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def describe(self, name: str | None) -> str:
        value = f"{name} = {self.metric:.6g}, " if name and self.metric is not None else ""
        return f"{self.sha[:12]} {self.title} ({value}{self.status})"


@dataclass(frozen=True)
class BestPicks:
    """The best result and, when it is unchecked, the best run-backed one (None when there is none)."""

    best: Pick
    run_backed: Pick | None

    def chosen(self, checked: bool) -> Pick:
        """What to check out: the best, or with `checked` the best run-backed result when the best is
        unchecked and one exists."""
        return self.run_backed if checked and not self.best.checked and self.run_backed else self.best


def best_picks(project: Project, contributions) -> BestPicks | None:
    """The best result of `contributions` (the index's FRAME_COLUMNS) by the rule of what may lead
    (`frontier.views.best`), and its run-backed alternative; None when nothing may lead. One frame."""
    import pyarrow as pa

    from ..frontier.checked import best_run_backed, run_backed, shown_status
    from ..frontier.frame import build_frame
    from ..frontier.views import best
    from .standing import reader_root

    config = project.config
    frame = build_frame(
        contributions,
        direction=config.direction,
        tolerance=config.tolerance,
        weights=dict(config.tag_weights),
        root=reader_root(project, contributions),
    )

    def pick(node: int) -> Pick:
        row = frame.rows([node])[0]
        backed = run_backed(frame.graph.table["metadata"][node].as_py())
        return Pick(row["sha"], row["title"], row["metric"], shown_status(str(frame.status[node]), backed), backed)

    found = best(frame)
    if found is None:
        return None
    top = pick(int(frame.graph.lookup(pa.array([found.sha], pa.string()))[0]))
    other = best_run_backed(frame) if not top.checked else -1
    return BestPicks(top, pick(other) if other >= 0 else None)


def unchecked_note(picks: BestPicks, checked_out: Pick, metric: str | None) -> str | None:
    """The line that tells a newcomer the best is unchecked, naming the best run-backed result (or that
    there is none), and how to take it (`checkout --best --checked`). None when the best is run-backed."""
    if picks.best.checked:
        return None
    if checked_out is not picks.best:
        best = picks.best.describe(metric)
        return f"the best, {best}, has no run record: checked out the best run-backed result instead"
    if picks.run_backed is None:
        return "the best is unchecked (no run record: published without `push --check`); no result is run-backed"
    return (
        "the best is unchecked (no run record: published without `push --check`); the best run-backed result is "
        f"{picks.run_backed.describe(metric)}: `git agora checkout --best --checked` checks it out"
    )
