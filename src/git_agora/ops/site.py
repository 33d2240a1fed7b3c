"""`git agora site`: the project as a static site, built from the local index through the library.

`build_site(project, out_dir)` writes the pages of `git_agora.web.pages` (overview, ratchet plot,
cluster map, lineage views, one page per contribution, contributors, the list of contributions) and
the shared script and style sheet; nothing on a page reaches the network. `serve_site` previews the
site on 127.0.0.1 and renders, on demand, what a static build leaves out at large sizes (diffs of
contributions that are not scored results, lineage pages beyond the prebuilt ones). What the pages
show: `site_data`, `site_contributions`; which page in which file: `site_pages`, `site_writer`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AgoraError
from ..project import Project
from .site_data import SiteData
from .site_pages import write_pages
from .site_server import site_server
from .site_writer import MARKER, PageWriter


@dataclass(frozen=True)
class SiteReport:
    """What `build_site` wrote: page counts, what was sampled or left out (`notes`), the largest page
    (shared scripts and style sheets not counted) and how long it took."""

    directory: Path
    pages: int
    contribution_pages: int
    lineage_pages: int
    scored_results: int
    plotted_results: int
    mapped_contributions: int
    diffs: int
    largest_page: str
    largest_page_bytes: int
    total_bytes: int
    seconds: float
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "directory": str(self.directory), "notes": list(self.notes)}


def build_site(project: Project, out_dir: Path | str) -> SiteReport:
    """Write the static site of `project` into `out_dir` (made or replaced: a directory that is not
    empty must hold an earlier site, so nothing else is ever deleted)."""
    return _build(project, Path(out_dir))[0]


site = build_site  # the command's name, for `agora.site(project, "public")`


def _build(project: Project, out_dir: Path) -> tuple[SiteReport, SiteData]:
    started = time.perf_counter()
    out_dir = out_dir.resolve()
    _check_target(out_dir)
    data = SiteData.collect(project)
    writer = PageWriter(out_dir)
    try:
        counts = write_pages(data, writer)
    finally:
        writer.flush()
    writer.remove_stale(data.rows)
    report = SiteReport(
        directory=out_dir,
        pages=writer.pages,
        contribution_pages=counts["contributions"],
        lineage_pages=counts["lineages"],
        scored_results=data.ratchet.scored_total,
        plotted_results=counts["plotted"],
        mapped_contributions=len(data.cluster_map.x),
        diffs=counts["diffs"],
        largest_page=writer.largest[0],
        largest_page_bytes=writer.largest[1],
        total_bytes=writer.total,
        seconds=time.perf_counter() - started,
        notes=tuple(data.notes),
    )
    return report, data


def _check_target(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise AgoraError(f"{out_dir} is a file, not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / MARKER).exists():
        raise AgoraError(f"{out_dir} is not empty and holds no earlier site: choose another directory")


def serve_site(
    project: Project,
    out_dir: Path | str,
    port: int = 8000,
    *,
    on_built: Callable[[SiteReport], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Build the site, then serve it on 127.0.0.1:`port` until interrupted, with on-demand diffs and
    lineage pages (`site_server`)."""
    report, data = _build(project, Path(out_dir))
    if on_built is not None:
        on_built(report)
    server = site_server(project, report.directory, port, data)
    if on_ready is not None:
        on_ready(f"http://127.0.0.1:{server.server_address[1]}/")
    with server, contextlib.suppress(KeyboardInterrupt):  # closed either way
        server.serve_forever()
