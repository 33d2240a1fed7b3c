"""The index as workflows use it: quarantine tips a plain `git fetch` rewrote, update, load, check, export."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import AgoraError
from ..feedback import on_demand
from ..index.state import FORMAT_VERSION, ManifestHead, current, index_dir, read_state
from ..project import Project
from ..refs.names import ROOT
from ..refs.quarantine import quarantine_rewritten_logs
from ..trust import record_tampering, trusted_keys

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from ..index.store import Index, UpdateReport


@dataclass(frozen=True)
class IndexSummary:
    """What `update_index` did: where the index is, how many rows, and what was exported."""

    directory: Path
    contributions: int
    valid: int
    new_rows: int
    rebuilt: bool
    exported: tuple[Path, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "directory": str(self.directory),
            "exported": [str(p) for p in self.exported],
            "new_rows": self.new_rows,
            "rebuilt": self.rebuilt,
            "contributions": self.contributions,
            "valid": self.valid,
            "warnings": list(self.warnings),
        }


# What the commands read of the contributions table (the descriptions, the largest column, only analyze,
# search and the site read; the index reads just these columns from disk)
GRAPH_COLUMNS = (
    "sha",
    "account",
    "timestamp",
    "log_seq",
    "parents",
    "tags",
    "valid",
    "target",
    "verdict",
    "primary_metric",
    "policy",
    "run_backed",
)
FRAME_COLUMNS = (*GRAPH_COLUMNS, "title", "metrics", "metadata")
LOG_COLUMNS = (
    "sha",
    "account",
    "timestamp",
    "title",
    "tags",
    "metrics",
    "parents",
    "target",
    "verdict",
    "reasons",
    "valid",
)


def refresh(
    project: Project, rebuild: bool = False, seen: ManifestHead | None = None, refs: dict[str, str] | None = None
) -> UpdateReport:
    """Bring the index up to date with the refs (quarantining rewritten remote logs first). The refs are
    read once, after the manifest (`store.update_index` says why); `seen` and `refs`: the manifest and
    the refs as the caller just read them, in that order (`refresh_if_stale`)."""
    from ..index.store import UpdateReport, stored_tips
    from ..index.store import update_index as update

    directory = index_dir(project.repo)
    if refs is None:
        seen = read_state(directory)
        refs = project.repo.refs_under(ROOT)
    if not rebuild and _current(seen, refs):
        confirm_setup(project, seen)
        return UpdateReport(0, False)
    kept = quarantine_rewritten_logs(project.repo, stored_tips(directory, seen), refs)
    record_tampering(project.repo, kept)
    for rewritten in kept:
        project.feedback.notice(rewritten.describe())
    if kept:
        refs = project.repo.refs_under(ROOT)  # the quarantine moved refs
    with on_demand(project.feedback, "indexing commits") as advance:
        rules = _rules(project, refs)
        report = update(project.repo, rules, rebuild=rebuild, progress=advance, tips=refs, seen=seen)
    for warning in report.warnings:
        project.feedback.notice(warning)
    confirm_setup(project)
    return _with_the_policies_pins(project, rules, report, refs)


def _with_the_policies_pins(project: Project, rules, report: UpdateReport, refs: dict[str, str]) -> UpdateReport:
    """The index judged signatures with the keys the policies pinned as far as this clone knew them
    (`ops.standing.pins_in_force`); when the policies in force now pin others (an amendment arrived), it is
    rebuilt under those, so that a rebuild and an incremental update agree. The policies in force are
    those remembered for the index the update started from plus those of the rows it wrote
    (`UpdateReport.policies`); only when that is not known is the policy column read."""
    from ..index.store import UpdateReport, load_index
    from ..index.store import update_index as update
    from .standing import pins_in_force, policies_in_force, remember_pins, remembered_in_force

    if not (report.new_rows or report.rebuilt):
        return report
    known = remembered_in_force(project, report.since) if report.policies is not None else None
    if known is not None and report.policies is not None:
        in_force = known | report.policies | {project.setup}
    else:
        table = load_index(project.repo, rules, update=False, columns=("valid", "policy")).contributions
        in_force = policies_in_force(project, table)
    pins = pins_in_force(project, in_force)
    remember_pins(project, pins, in_force, report.digest)
    if pins == dict(rules.pinned):
        return report
    seen = read_state(index_dir(project.repo))
    with on_demand(project.feedback, "indexing commits") as advance:
        again = update(project.repo, _rules(project, refs), rebuild=True, progress=advance, tips=refs, seen=seen)
    remember_pins(project, pins)  # the rebuild may judge rows otherwise: the next update reads the column
    return UpdateReport(max(report.new_rows, again.new_rows), True, (*report.warnings, *again.warnings))


def _current(state: ManifestHead | None, refs: dict[str, str]) -> bool:

    return current(state, refs, time.time(), FORMAT_VERSION)


def use_setup(project: Project) -> None:
    """Know the setup before indexing: the pinned one, else the root of the logs, confirmed by the index
    (`confirm_setup`) rather than by a walk of the whole graph. Raises when there is no project."""
    if not project.assume_setup():
        _ = project.setup  # the error that says there is no project here


def confirm_setup(project: Project, state: ManifestHead | None = None) -> None:
    """Pin the setup once the index, which has read every commit, names every root setup; several,
    none pinned: `CompetingSetups`. `state`: the manifest as just read (`state.read_state`)."""

    if project.pinned_setup:
        return
    state = state if state is not None else read_state(index_dir(project.repo))
    if state is None or state.format_version != FORMAT_VERSION or not state.intact:
        return
    roots = [s for s in state.setups if (c := project.repo.contribution(s)) is not None and not c.parents]
    project.pin_setup(roots)


def load(project: Project, columns: Sequence[str] | None = None) -> Index:
    """The current index (updated first; an unchanged project costs one for-each-ref). `columns`: read
    only these columns of the contributions (sha and timestamp come along). On a read-only
    `.git/agora/index`, new commits are indexed into a temporary copy and the stored index is left as is."""
    from ..index.segments import WriteFailed
    from ..index.store import load_index

    use_setup(project)
    try:
        refresh(project)
        stale = False
    except WriteFailed as exc:
        if not exc.read_only:
            raise
        stale = True
    index = load_index(project.repo, _rules(project), update=stale, columns=columns)
    for warning in index.warnings:
        project.feedback.notice(warning)
    return index


def load_rows(
    project: Project, columns: Sequence[str], shas: Sequence[str], timestamps: Sequence[int] | None = None
) -> pa.Table:
    """`columns` (plus sha and timestamp) of the contributions among `shas`, read row group by row
    group, after `load` brought the index up to date; with their `timestamps`, only the row groups
    dated so (`index.store.read_rows`). On a read-only index whose new rows live only in `load`'s
    temporary copy, some are not stored: then the whole columns are read and filtered."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..index.store import read_rows

    wanted = set(shas)
    table = read_rows(project.repo, columns, wanted, timestamps)
    if table.num_rows >= len(wanted):
        return table
    whole = load(project, columns).contributions
    return whole.filter(pc.is_in(whole["sha"], value_set=pa.array(sorted(wanted), pa.string())))


def refresh_if_stale(project: Project) -> None:
    """After a fetch: update only when the tips moved (a no-op fetch never imports pyarrow)."""

    seen = read_state(index_dir(project.repo))  # the manifest first, then the refs, as `refresh` reads them
    refs = project.repo.refs_under(ROOT)
    if not _current(seen, refs):
        refresh(project, seen=seen, refs=refs)
    else:
        confirm_setup(project, seen)


def update_index(project: Project, rebuild: bool = False, export_to: Path | None = None) -> IndexSummary:
    """Update (or rebuild) the index in `.git/agora/index/`; optionally export every table as Parquet."""
    from ..index.store import load_index

    use_setup(project)
    report = refresh(project, rebuild=rebuild)
    index = load_index(project.repo, _rules(project), update=False, columns=None if export_to else ("valid",))
    exported = export_index(index, export_to) if export_to else ()
    valid = int(sum(index.contributions["valid"].to_pylist()))
    return IndexSummary(
        index_dir(project.repo),
        index.contributions.num_rows,
        valid,
        report.new_rows,
        report.rebuilt,
        exported,
        (*report.warnings, *index.warnings),
    )


def check_index(project: Project) -> list[str]:
    """How the index differs from a rebuild from scratch, one line per differing row (empty: the index
    is right)."""
    from ..index.store import check_index as check

    use_setup(project)
    refresh(project)
    return check(project.repo, _rules(project))


def index_table(project: Project, columns: Sequence[str] | None = None) -> pa.Table:
    """The index's contributions, one row per commit under refs/agora/ (valid or not: `valid`, `reasons`),
    in canonical order (timestamp, sha), brought up to date first: an Arrow table of the columns
    `index.schema.CONTRIBUTIONS` defines (docs/index.md), all of them or `columns` (sha and timestamp
    come along)."""
    from ..index.schema import CONTRIBUTIONS

    unknown = sorted(set(columns or ()) - set(CONTRIBUTIONS.names))
    if unknown:
        raise AgoraError(f"no index column {', '.join(unknown)}: the columns are {', '.join(CONTRIBUTIONS.names)}")
    return load(project, columns).contributions


def index_dataframe(project: Project, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """`index_table` as a pandas DataFrame (pandas must be installed; git-agora does not need it)."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise AgoraError("index_dataframe needs pandas (pip install pandas); index_table gives Arrow") from None
    return index_table(project, columns).to_pandas()


def export_index(index, directory: Path) -> tuple[Path, ...]:
    """Every table as a Parquet file, for DuckDB, pandas or polars."""
    import pyarrow.parquet as pq

    from ..index.osfiles import writing
    from ..index.schema import TABLES

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TABLES:
        path = directory / f"{name}.parquet"
        with writing(path) as sink:
            pq.write_table(index.table(name), sink)
        written.append(path)
    return tuple(written)


def _rules(project: Project, refs: dict[str, str] | None = None):
    from ..index.store import IndexRules
    from .standing import pinned_keys

    pinned = pinned_keys(project)
    keys = _trusted_keys(project, refs, pinned)
    return IndexRules(project.config.metric, project.setup, keys, project.signatures_required, pinned)


def _trusted_keys(
    project: Project, refs: dict[str, str] | None = None, pinned: dict[str, tuple[str, ...]] | None = None
) -> dict[str, tuple[str, ...]]:
    """The keys trusted for every account with an identity here: those the policies pin (`pinned`), else
    pinned on first sight; `refs`: the refs under refs/agora/ when the caller has just read them."""

    return trusted_keys(project.repo, refs if refs is not None else project.repo.refs_under(ROOT), pinned)
