"""The pages of a site, written one kind at a time (`write_pages`): overview, ratchet plot, cluster map,
the status badge (`badge.json`, a shields.io endpoint), contributors, lineage pages, the list of
contributions (paginated) and one page per contribution."""

from __future__ import annotations

import json
from typing import Any

from ..frontier.columns import OVERVIEW_COLUMNS, OVERVIEW_WHEN_ANY
from ..web import pages
from ..web.badge import badge
from ..web.model import ListRow
from .site_contributions import Chunk, ChunkDiffs, Verdicts, descriptions
from .site_data import SiteData, cut, lineage_view
from .site_writer import PageWriter

LIST_BLOCK = 50  # list pages made from one read of their rows
CHUNK_ROWS = 20_000  # contribution pages are made this many rows at a time: memory stays flat with size
_PAGE_COLUMNS = (
    "sha", "account", "timestamp", "title", "description", "tags", "metrics", "metadata", "parents",
    "code_bearing", "target", "verdict", "reasons",
)  # fmt: skip


def write_pages(data: SiteData, writer: PageWriter) -> dict[str, int]:
    for name in ("c", "lineage", "contributions"):
        writer.mkdir(name)
    writer.write("index.html", pages.overview(data.info, data.analysis_dict, data.stats, overview_views(data)))
    writer.write("ratchet.html", pages.ratchet(data.info, data.ratchet))
    writer.write("clusters.html", pages.cluster_map(data.info, data.cluster_map))
    writer.put("badge.json", json.dumps(site_badge(data), sort_keys=True).encode() + b"\n")
    contributors = _contributors(data)
    writer.write("contributors.html", pages.contributors(data.info, contributors))
    lineages = _write_lineages(data, writer)
    data.shared = None  # the lineage parts (made again on demand by the preview server)
    _write_list(data, writer)
    diffs = _write_contributions(data, writer, set(lineages))
    plotted = sum(1 for s in data.ratchet.status if s != "failed")
    return {"contributions": data.rows.n, "lineages": len(lineages), "diffs": diffs, "plotted": plotted}


def site_badge(data: SiteData) -> dict[str, Any]:
    """The status badge's endpoint JSON (`web.badge`): the best result and its status, how many results
    are verified (confirmed or partial), contested and failed, as this site's reader counts them."""
    import numpy as np

    frame = data.analysis.frame
    best = data.analysis.summary.best
    scored = frame.status[frame.scored]
    verified = int(np.isin(scored, ("confirmed", "partial")).sum())
    contested = int((scored == "contested").sum())
    failed = data.ratchet.failed_total
    if best is None:
        return badge(None, None, verified, failed, contested)
    return badge(best.metric, best.status, verified, failed, contested)


def _contributors(data: SiteData) -> list[dict[str, Any]]:
    from ..frontier.views import compute_views

    frame = data.analysis.frame
    return [row.to_dict() for row in compute_views(frame, max(frame.n, 1), ("contributors",))["contributors"].rows]


def overview_views(data: SiteData) -> dict[str, tuple[str, ...]]:
    """The overview's views and their columns, less those that only show when they hold a row (results
    scored under an earlier evaluator) and hold none."""
    views = data.analysis_dict["views"]
    return {
        name: columns
        for name, columns in OVERVIEW_COLUMNS.items()
        if name not in OVERVIEW_WHEN_ANY or views.get(name, {}).get("rows")
    }


def _write_lineages(data: SiteData, writer: PageWriter) -> list[str]:
    written = []
    entries = []
    rows = data.row_of_node[data.lineage_nodes] if data.lineage_nodes else []
    metrics = data.rows.pick("primary_metric", rows)
    with data.project.feedback.progress("site: lineage pages", len(data.lineage_nodes)) as advance:
        for i, (node, row, metric) in enumerate(zip(data.lineage_nodes, rows, metrics, strict=True)):
            view = lineage_view(data, int(node))
            writer.write(f"lineage/{view.sha}.html", pages.lineage(data.info, view))
            written.append(view.sha)
            entries.append((view.sha, view.title, data.rows.account(int(row)), metric))
            advance(i + 1)
    writer.write("lineage/index.html", pages.lineage_index(data.info, entries))
    return written


def _write_list(data: SiteData, writer: PageWriter) -> None:
    """The list of contributions, newest first (then by sha, descending), `pages.LIST_PAGE` a page."""
    import numpy as np
    import pyarrow.compute as pc

    from ..frontier.checked import shown_statuses

    rows = data.rows
    status = shown_statuses(data.analysis.frame)  # "unchecked" for a result without its run record
    times = pc.fill_null(rows.table["timestamp"], 0).to_numpy(zero_copy_only=False)
    rank = np.empty(rows.n, dtype=np.int64)
    rank[rows.order] = np.arange(rows.n)
    order = np.lexsort((rank, times))[::-1]
    count = max(1, -(-rows.n // pages.LIST_PAGE))
    names = ("sha", "timestamp", "tags", "primary_metric")
    block = pages.LIST_PAGE * LIST_BLOCK
    with data.project.feedback.progress("site: list pages", count) as advance:
        for first in range(0, max(rows.n, 1), block):
            chosen = order[first : first + block]
            values = {name: rows.pick(name, chosen) for name in names}
            titles = rows.pick("title", chosen)
            accounts = rows.accounts(chosen)
            nodes = data.node_of_row[chosen].tolist()
            for start in range(0, max(len(chosen), 1), pages.LIST_PAGE):
                listed = []
                for i in range(start, min(start + pages.LIST_PAGE, len(chosen))):
                    node = nodes[i]
                    listed.append(
                        ListRow(
                            values["sha"][i],
                            accounts[i],
                            values["timestamp"][i],
                            cut(titles[i], 120),
                            tuple(values["tags"][i] or ()),
                            values["primary_metric"][i],
                            None if node < 0 else str(status[node]),
                        )  # fmt: skip
                    )
                number = (first + start) // pages.LIST_PAGE + 1
                text = pages.contribution_list(data.info, listed, number, count, rows.n)
                writer.write(f"contributions/{number}.html", text)
                advance(number)


def _write_contributions(data: SiteData, writer: PageWriter, lineages: set[str]) -> int:
    """One page per indexed commit; patches for scored results, file lists for other code-bearing ones.
    Rows are turned into Python values `CHUNK_ROWS` at a time; the diffs of a chunk stream from git
    in row order while its pages are made."""
    import numpy as np

    from .indexing import load
    from .site_rows import csr

    frame = data.analysis.frame
    rows = data.rows
    described = load(data.project, columns=("description",)).contributions  # analyze reads no descriptions
    rows.descriptions = descriptions(rows.table, described)  # read now: the lineage pages did without
    del described
    scored_rows = np.zeros(rows.n, dtype=bool)
    scored_rows[data.row_of_node[frame.scored]] = True
    verdicts = Verdicts.collect(data)
    best = _new_best_rows(data)
    children_ptr, children = csr(frame.graph.parent, frame.graph.child, frame.graph.n)
    made: set[str] = set()
    patched = 0
    with data.project.feedback.progress("site: contribution pages", rows.n) as advance:
        for start in range(0, rows.n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, rows.n)
            c = rows.chunk(start, stop, _PAGE_COLUMNS)
            for prefix in sorted({sha[:2] for sha in c["sha"]} - made):
                writer.mkdir(f"c/{prefix}")
                made.add(prefix)
            chunk = Chunk(data, start, stop, c, verdicts, children_ptr, children)
            with ChunkDiffs(data, start, c, scored_rows) as diffs:
                for i in range(stop - start):
                    view = chunk.view(i, diffs.take(c["sha"][i]), best)
                    view.lineage = view.sha in lineages
                    writer.write(f"c/{view.sha[:2]}/{view.sha}.html", pages.contribution(data.info, view), track=False)
                    if i % 500 == 499:
                        advance(start + i + 1)
                patched += diffs.patched
            advance(stop)
    return patched


def _new_best_rows(data: SiteData) -> set[int]:
    ratchet = data.ratchet
    shas = [sha for sha, b in zip(ratchet.shas, ratchet.new_best, strict=True) if b]
    return set(data.rows.lookup(shas).tolist())
