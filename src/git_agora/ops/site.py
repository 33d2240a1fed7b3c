"""`git agora site`: the project as a static site, built from the local index through the library.

`build_site(project, out_dir)` writes the pages of `git_agora.web.pages` (overview, ratchet plot,
cluster map, lineage views, one page per contribution, contributors, the list of contributions) and
the shared script and style sheet; nothing on a page reaches the network. `serve_site` previews the
site on 127.0.0.1 and renders, on demand, what a static build leaves out at large sizes (diffs of
contributions that are not scored results, lineage pages beyond the prebuilt ones).

Large projects stay within bounds (issue 12: 100,000 contributions in under a minute, no page over
5 MB): the ratchet plot samples beyond `MAX_POINTS` results (every new best first, then verified
results, then the others) and says so; the cluster map shows the analysis window (at most 5,000
vectors); a lineage graph draws at most `LINEAGE_NODES` ancestors; lineage pages are prebuilt for
every scored result up to `LINEAGE_ALL_UP_TO` of them, else for the `LINEAGE_PAGES` best-placed; a
patch is cut at `DIFF_BYTES`; the list of contributions is paginated.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..errors import AgoraError
from ..project import Project

MAX_POINTS = 20_000
LINEAGE_ALL_UP_TO = 2_000
LINEAGE_PAGES = 300
LINEAGE_NODES = 2_500
CHILDREN_SHOWN = 100
DIFF_BYTES = 200_000
TITLE_CHARS = 160
MARKER = ".agora-site"
ASSETS = ("site.css", "site.js")
WRITERS = 1  # the thread that creates the files (its calls release the GIL: a second core writes)
_SHA = re.compile(r"^[0-9a-f]{40}$")


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


def _build(project: Project, out_dir: Path) -> tuple[SiteReport, _Data]:
    started = time.perf_counter()
    out_dir = out_dir.resolve()
    _check_target(out_dir)
    data = _Data.collect(project)
    writer = _Writer(out_dir)
    try:
        counts = _write_pages(data, writer)
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


class _Writer:
    """Writes pages under a directory in place, keeps the counts the report gives, and leaves a page
    whose content did not change untouched (a rebuild rewrites only what changed: creating and
    deleting 100,000 files costs far more than reading them back). The file system calls run on a
    thread (they release the GIL), so a second core writes while the first renders."""

    def __init__(self, directory: Path):
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="agora-site-writer")
        self.pending: deque = deque()
        self.directory = directory
        self.pages = 0
        self.total = 0
        self.largest = ("", 0)
        self.written: set[str] = set()
        self.base = str(directory)
        self.fresh = not (directory / MARKER).exists()  # nothing to compare with: write straight away
        directory.mkdir(parents=True, exist_ok=True)
        (directory / MARKER).write_text("made by `git agora site`; the next build replaces what is here\n")
        # Git ignores the whole folder: a site built inside a clone never goes into a `git agora push`
        (directory / ".gitignore").write_text(
            "# made by `git agora site`: `git add -f` to commit the site on purpose\n*\n"
        )
        (directory / "assets").mkdir(exist_ok=True)
        static = files("git_agora.web") / "static"
        for name in ASSETS:
            self.put(f"assets/{name}", (static / name).read_bytes())

    def mkdir(self, relative: str) -> None:
        (self.directory / relative).mkdir(parents=True, exist_ok=True)

    def write(self, relative: str, text: str, track: bool = True) -> None:
        """`track`: remember the path for `remove_stale` (contribution pages are known by their sha)."""
        data = text.encode("utf-8")
        self.put(relative, data, track)
        self.pages += 1
        self.total += len(data)
        if len(data) > self.largest[1]:
            self.largest = (relative, len(data))

    def put(self, relative: str, data: bytes, track: bool = True) -> None:
        if track:
            self.written.add(relative)
        self.pending.append(self.pool.submit(self._store, os.path.join(self.base, relative), data))
        while len(self.pending) > 512:  # bounded: rendering never runs far ahead of the disk
            self.pending.popleft().result()

    def flush(self) -> None:
        """Wait for every write (raising the first error), then stop the writer thread."""
        try:
            while self.pending:
                self.pending.popleft().result()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _store(self, path: str, data: bytes) -> None:
        if not self.fresh:
            try:
                with open(path, "rb") as handle:
                    if handle.read(len(data) + 1) == data:
                        return
            except FileNotFoundError:
                pass
        with open(path, "wb") as handle:
            handle.write(data)

    def remove_stale(self, rows) -> None:
        """Delete the pages an earlier build wrote that this one did not (only inside the site's folders);
        `c/SH/SHA.html` is this build's when SHA is one of `rows` (an `ops.site_rows.Rows`)."""
        if self.fresh:
            return  # the folder was empty (`_check_target`): nothing is stale
        for folder in ("", "assets", "contributions", "lineage"):
            base = self.directory / folder
            if not base.is_dir():
                continue
            for path in base.glob("*.html" if folder != "assets" else "*"):
                if path.is_file() and path.relative_to(self.directory).as_posix() not in self.written:
                    path.unlink()
        pages = [p for p in (self.directory / "c").glob("*/*.html") if p.is_file()]
        shas = [p.name[:-5] for p in pages]
        known = rows.lookup(shas) >= 0
        for path, sha, keep in zip(pages, shas, known.tolist(), strict=True):
            if not keep or path.parent.name != sha[:2]:
                path.unlink()


# --------------------------------------------------------------------------- the data


@dataclass
class _Data:
    """Everything the pages show, gathered once (and kept by the preview server for on-demand pages)."""

    project: Project
    info: Any  # web.model.SiteInfo
    analysis: Any  # frontier.analyze.AnalyzeResult
    analysis_dict: dict[str, Any]
    stats: dict[str, Any]
    rows: Any  # ops.site_rows.Rows: every indexed commit (table order), as Arrow columns
    node_of_row: Any  # numpy int64 per row: node of the frame, -1 for a rejected commit
    row_of_node: Any  # numpy int64 per node
    cross_refs: dict[str, list[str]]
    ratchet: Any  # web.model.RatchetData
    cluster_map: Any  # web.model.ClusterMap
    lineage_nodes: list[int]  # the nodes with a prebuilt lineage page, best first
    notes: list[str]
    shared: Any = None  # frontier.lineage.Shared, made on first use

    @classmethod
    def collect(cls, project: Project) -> _Data:
        import numpy as np
        import pyarrow.compute as pc

        from ..frontier.views import compute_views
        from ..web.model import SiteInfo
        from .analyze import analyze
        from .history import stats as graph_stats
        from .indexing import load
        from .site_rows import Rows

        config = project.config
        stats = graph_stats(project).to_dict()  # first: its working set is gone before the analysis is made
        analysis = analyze(project, limit=10, embed=False)
        frame = analysis.frame
        analysis_dict = analysis.to_dict()
        analysis_dict["views"]["leaders"] = compute_views(frame, 100, ("leaders",))["leaders"].to_dict()
        index = load(project, columns=("valid",))  # for its cross references; descriptions come later
        table = frame.contributions
        rows = Rows(table, None)
        valid = pc.fill_null(table["valid"], False).to_numpy(zero_copy_only=False).astype(bool)
        row_of_node = np.flatnonzero(valid)
        node_of_row = np.full(len(valid), -1, dtype=np.int64)
        node_of_row[row_of_node] = np.arange(len(row_of_node))
        cross: dict[str, list[str]] = {}
        for sha, url, target in zip(
            index.cross_refs["sha"].to_pylist(),
            index.cross_refs["url"].to_pylist(),
            index.cross_refs["target"].to_pylist(),
        ):
            cross.setdefault(sha, []).append(f"{url}#{target}")
        del index
        notes: list[str] = []
        ratchet = _ratchet(frame, rows, row_of_node, notes)
        clusters = _cluster_map(analysis, rows, row_of_node)
        lineage_nodes, rule = _lineage_choice(frame, analysis_dict, notes)
        info = SiteInfo(
            name=config.name or project.repo.worktree.name,
            metric=config.metric,
            direction=config.direction,
            tolerance=float(config.tolerance or 0.0),
            generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            best_sha=stats.get("best_sha"),
            lineage_rule=rule,
        )
        return cls(
            project, info, analysis, analysis_dict, stats, rows, node_of_row, row_of_node, cross,
            ratchet, clusters, lineage_nodes, notes,
        )  # fmt: skip

    # ----------------------------------------------------------------- helpers

    def refs(self, shas: list[str]) -> list[Any]:
        """A link (`web.model.Ref`) to each sha, read in one go."""
        from ..web.model import Ref

        rows = self.rows.lookup(shas)
        found = self.rows.refs(rows)
        return [
            Ref(sha, None, None, known=False) if row < 0 else Ref(sha, _cut(found[row][1]), found[row][2])
            for sha, row in zip(shas, rows.tolist(), strict=True)
        ]

    def lineage_shared(self):
        from ..frontier.lineage import shared_parts

        if self.shared is None:
            self.shared = shared_parts(self.analysis.frame.graph)
        return self.shared

    def first_parent(self, row: int) -> str | None:
        parents = self.rows.pick("parents", [row])[0] or []
        return parents[0] if parents else None


def _descriptions(table, index_table):
    """The index's descriptions in the order of `table` (the analysis's rows): the same order in
    practice, else matched by sha (a sha the index lacks has none)."""
    import numpy as np
    import pyarrow as pa

    from .site_rows import find, sha_keys

    described = index_table["description"]
    if index_table.num_rows == table.num_rows and index_table["sha"].equals(table["sha"]):
        return described
    keys = sha_keys(index_table["sha"])
    order = np.argsort(keys, kind="stable")
    where = find(keys[order], order, sha_keys(table["sha"]))
    values = described.combine_chunks() if described.num_chunks else pa.array([], described.type)
    picked = values.take(pa.array(np.maximum(where, 0)))
    mask = pa.array(where < 0)
    return pa.chunked_array([pa.compute.if_else(mask, pa.nulls(len(where), picked.type), picked)])


def _cut(text: str | None, limit: int = TITLE_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _ratchet(frame, rows_: Any, row_of_node, notes: list[str]):
    """Scored results and failed-verified results in time order; new bests (noise-aware) marked."""
    import numpy as np

    from ..frontier.scored import in_time, new_best_mask
    from ..web.model import RatchetData

    failed = ~frame.verification & ~frame.wip & ~frame.endorsed & (frame.status == "failed") & ~np.isnan(frame.metric)
    scored_nodes = in_time(frame.table, np.flatnonzero(frame.scored))
    best = np.zeros(frame.n, dtype=bool)
    best[scored_nodes[new_best_mask(frame.metric[scored_nodes], frame.direction, frame.tolerance)]] = True
    shown = in_time(frame.table, np.flatnonzero(frame.scored | failed))
    total = int(frame.scored.sum())
    if len(shown) > MAX_POINTS:
        shown = _sample(shown, best[shown], frame.status[shown] != "unverified", MAX_POINTS)
        notes.append(
            f"ratchet plot: {len(shown)} of {total + int(failed.sum())} results drawn (every new best, then verified "
            "results and then the others, each sampled evenly over time)"
        )
    rows = row_of_node[shown]
    return RatchetData(
        times=frame.timestamp[shown].tolist(),
        values=frame.metric[shown].tolist(),
        status=frame.status[shown].tolist(),
        shas=rows_.pick("sha", rows),
        titles=[_cut(t, 100) for t in rows_.pick("title", rows)],
        accounts=[a or "" for a in rows_.accounts(rows)],
        new_best=best[shown].tolist(),
        scored_total=total,
        failed_total=int(failed.sum()),
        note=notes[-1] if notes and notes[-1].startswith("ratchet plot") else None,
    )


def _sample(nodes, first, second, size: int):
    """At most `size` of `nodes` (kept in order): every `first`, then `second` ones, then the rest, each
    group thinned evenly when it does not fit."""
    import numpy as np

    keep = np.zeros(len(nodes), dtype=bool)
    for group in (first, second & ~first, ~second & ~first):
        where = np.flatnonzero(group)
        room = size - int(keep.sum())
        if room <= 0:
            break
        if len(where) > room:
            where = where[np.linspace(0, len(where) - 1, room).round().astype(np.int64)]
        keep[where] = True
    return nodes[keep]


def _cluster_map(analysis, rows_: Any, row_of_node):
    import numpy as np

    from ..frontier.projection import pca_2d
    from ..web.model import ClusterMap

    diversity = analysis.diversity
    warning = diversity.warning.message if diversity.warning else analysis.summary.warning
    clustering = diversity.clustering
    if not diversity.available or clustering is None:
        return ClusterMap(False, diversity.note, warning, diversity.model, diversity.coverage, (0.0, 0.0))
    frame = analysis.frame
    nodes = clustering.nodes
    projection = pca_2d(clustering.vectors)
    rows = row_of_node[nodes]
    metric = frame.metric[nodes]
    summary = diversity.to_dict()
    return ClusterMap(
        available=True,
        why=None,
        warning=warning,
        model=diversity.model,
        coverage=diversity.coverage,
        explained=(round(projection.explained[0], 4), round(projection.explained[1], 4)),  # not LAPACK's last bits
        x=np.round(projection.coordinates[:, 0], 4).tolist(),
        y=np.round(projection.coordinates[:, 1], 4).tolist(),
        cluster=clustering.labels.tolist(),
        score=frame.score[nodes].tolist(),
        shas=rows_.pick("sha", rows),
        titles=[_cut(t, 100) for t in rows_.pick("title", rows)],
        accounts=[a or "" for a in rows_.accounts(rows)],
        metric=[None if np.isnan(v) else float(v) for v in metric],
        clusters=summary["clusters"],
        summary={k: summary[k] for k in ("count", "top_share", "effective_count", "evenness", "window", "threshold")},
    )


def _lineage_choice(frame, analysis_dict: dict[str, Any], notes: list[str]) -> tuple[list[int], str]:
    """The results with a prebuilt lineage page (best first) and the rule, in words."""
    import numpy as np

    from ..frontier.scored import best_node, new_best_nodes
    from ..frontier.views import ranked_by_metric

    scored = np.flatnonzero(frame.scored)
    ranked = ranked_by_metric(frame, scored).tolist()
    if len(scored) <= LINEAGE_ALL_UP_TO:
        return ranked, "every scored result has a lineage page."
    best = best_node(frame.table, frame.scored, frame.direction, frame.tolerance)
    bests = new_best_nodes(frame.table, frame.scored, frame.direction, frame.tolerance)[::-1].tolist()
    chosen: dict[int, None] = {}
    for node in [best, *bests, *ranked]:
        if len(chosen) >= LINEAGE_PAGES:
            break
        chosen.setdefault(int(node))
    notes.append(f"lineage pages: {len(chosen)} of {len(scored)} scored results (the best, the new bests, the leaders)")
    rule = (
        f"at this size ({len(scored)} scored results) lineage pages are built for {len(chosen)} of them: the best, "
        "the new bests and the leaders. For any other result run `git agora lineage SHA`, or open the site "
        "with `git agora site --serve`, which draws it on demand."
    )
    return list(chosen), rule


# --------------------------------------------------------------------------- the pages


def _write_pages(data: _Data, writer: _Writer) -> dict[str, int]:
    from ..web import pages

    for name in ("c", "lineage", "contributions"):
        writer.mkdir(name)
    writer.write("index.html", pages.overview(data.info, data.analysis_dict, data.stats))
    writer.write("ratchet.html", pages.ratchet(data.info, data.ratchet))
    writer.write("clusters.html", pages.cluster_map(data.info, data.cluster_map))
    contributors = _contributors(data)
    writer.write("contributors.html", pages.contributors(data.info, contributors))
    lineages = _write_lineages(data, writer)
    data.shared = None  # the lineage parts (made again on demand by the preview server)
    _write_list(data, writer)
    diffs = _write_contributions(data, writer, set(lineages))
    plotted = sum(1 for s in data.ratchet.status if s != "failed")
    return {"contributions": data.rows.n, "lineages": len(lineages), "diffs": diffs, "plotted": plotted}


def _contributors(data: _Data) -> list[dict[str, Any]]:
    from ..frontier.views import compute_views

    frame = data.analysis.frame
    return list(compute_views(frame, max(frame.n, 1), ("contributors",))["contributors"].rows)


def _write_lineages(data: _Data, writer: _Writer) -> list[str]:
    from ..web import pages

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


def lineage_view(data: _Data, node: int):
    """The lineage graph of one node (`frontier.lineage.lineage_of` over the analysed graph)."""
    import numpy as np

    from ..frontier.lineage import lineage_of
    from ..web.model import LineageView

    frame = data.analysis.frame
    rows = data.rows
    shared = data.lineage_shared()
    found = lineage_of(frame.graph, node, direction=frame.direction, tolerance=frame.tolerance, shared=shared)
    ancestry_rows = rows.lookup(found.ancestry)
    node_of_sha = dict(zip(found.ancestry, data.node_of_row[ancestry_rows].tolist(), strict=True))
    milestone = {m.sha for m in found.milestones}
    reproduced = set(found.reproduced)
    order = found.ancestry
    note = None
    if len(order) > LINEAGE_NODES:
        must = [s for s in order if s == found.sha or s in milestone or s in reproduced]
        scored = [s for s in order if frame.scored[node_of_sha[s]] and s not in milestone]
        keep = set(must[:LINEAGE_NODES])
        for s in reversed(scored):
            if len(keep) >= LINEAGE_NODES:
                break
            keep.add(s)
        for s in reversed(order):
            if len(keep) >= LINEAGE_NODES:
                break
            keep.add(s)
        order = tuple(s for s in order if s in keep)
        note = (
            f"{len(found.ancestry)} ancestors: the graph draws {len(order)} of them (the milestones, the "
            "reproduced and scored ancestors, then the most recent others); the counts above are complete."
        )
    drawn = [node_of_sha[sha] for sha in order]
    drawn_rows = data.row_of_node[np.asarray(drawn, dtype=np.int64)]
    titles = rows.pick("title", drawn_rows)
    accounts = rows.accounts(drawn_rows)
    nodes = []
    for sha, n, title, account in zip(order, drawn, titles, accounts, strict=True):
        value = frame.metric[n]
        nodes.append(
            {
                "sha": sha,
                "title": _cut(title, 100),
                "account": account or "",
                "t": int(frame.timestamp[n]),
                "metric": None if np.isnan(value) else float(value),
                "scored": bool(frame.scored[n]),
                "milestone": sha in milestone,
                "reproduced": sha in reproduced,
            }
        )
    position = {n: i for i, n in enumerate(drawn)}  # a node is a sha: one row per valid commit
    ptr, parents = shared.parents
    edges = []
    for i, (n, child_account) in enumerate(zip(drawn, accounts, strict=True)):
        for p in parents[ptr[n] : ptr[n + 1]]:
            if p in position:
                cross = rows.account(int(data.row_of_node[p])) != child_account
                edges.append((i, position[p], cross))
    refs = data.refs([m.sha for m in found.milestones])
    milestones = tuple((r, float(m.value), int(m.timestamp)) for r, m in zip(refs, found.milestones, strict=True))
    return LineageView(
        sha=found.sha,
        title=rows.pick("title", [rows.row(found.sha)])[0] or "",
        size=found.size,
        accounts=found.accounts,
        edges_total=found.edges,
        cross_account_edges=found.cross_account_edges,
        reproduced_total=len(found.reproduced),
        scored_ancestors=len(found.scored_ancestors),
        reproduced_scored_ancestors=len(found.reproduced_scored_ancestors),
        milestones=milestones,
        nodes=nodes,
        edges=edges,
        note=note,
    )


def _write_list(data: _Data, writer: _Writer) -> None:
    """The list of contributions, newest first (then by sha, descending), `pages.LIST_PAGE` a page."""
    import numpy as np
    import pyarrow.compute as pc

    from ..web import pages
    from ..web.model import ListRow

    rows = data.rows
    status = data.analysis.frame.status
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
                            _cut(titles[i], 120),
                            tuple(values["tags"][i] or ()),
                            values["primary_metric"][i],
                            None if node < 0 else str(status[node]),
                        )  # fmt: skip
                    )
                number = (first + start) // pages.LIST_PAGE + 1
                text = pages.contribution_list(data.info, listed, number, count, rows.n)
                writer.write(f"contributions/{number}.html", text)
                advance(number)


@dataclass
class _Verdicts:
    """The usable verdicts (`evidence.current_verdicts`), one entry each; `by_target` gives a target row's
    verdicts newest first (CSR offsets into `order`), `by_verification` a verification row's verdict."""

    row: Any  # numpy int64: the verification's row
    target: Any  # numpy int64: the target's row
    verdict: list[str]
    timestamp: list[int]
    current: list[bool]
    claimed: list[float | None]
    reproduced: list[float | None]
    ptr: Any  # numpy int64 per row + 1
    order: Any  # numpy int64: verdict numbers grouped by target row, newest first
    by_verification: dict[int, int]

    def of_target(self, row: int) -> list[int]:
        return self.order[self.ptr[row] : self.ptr[row + 1]].tolist()

    def info(self, i: int, refs: dict[int, Any]):
        from ..web.model import VerdictInfo

        return VerdictInfo(
            refs[int(self.row[i])], refs[int(self.target[i])], self.verdict[i], self.timestamp[i], self.current[i],
            self.claimed[i], self.reproduced[i],
        )  # fmt: skip


def _verdicts(data: _Data) -> _Verdicts:
    import numpy as np

    from ..frontier.evidence import current_verdicts

    frame = data.analysis.frame
    rows = data.rows
    found = current_verdicts(frame.graph)
    row = data.row_of_node[np.asarray(found.node, dtype=np.int64)]
    target = data.row_of_node[np.asarray(found.target, dtype=np.int64)]
    metric = data.info.metric
    claimed_fallback = rows.pick("primary_metric", target)
    own = rows.pick("primary_metric", row)
    claimed, reproduced = [], []
    for text, fallback, value in zip(rows.pick("metadata", row), claimed_fallback, own, strict=True):
        meta = _meta(text)
        claimed.append(_value(meta.get("claimed"), metric, fallback))
        reproduced.append(_value(meta.get("reproduced"), metric, value))
    timestamp = [t or 0 for t in rows.pick("timestamp", row)]
    times = np.asarray(timestamp, dtype=np.int64)
    order = np.lexsort((np.arange(len(row)), -times, target)) if len(row) else np.zeros(0, np.int64)
    ptr = np.zeros(rows.n + 1, np.int64)
    if len(row):
        np.cumsum(np.bincount(target, minlength=rows.n), out=ptr[1:])
    return _Verdicts(
        row, target, list(found.verdict.tolist()), timestamp, [bool(c) for c in found.current.tolist()], claimed,
        reproduced, ptr, order, dict(zip(row.tolist(), range(len(row)))),
    )  # fmt: skip


def _meta(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _value(values: Any, metric: str | None, fallback: float | None) -> float | None:
    if isinstance(values, dict) and metric in values and isinstance(values[metric], int | float):
        return float(values[metric])
    return fallback


LIST_BLOCK = 50  # list pages made from one read of their rows
CHUNK_ROWS = 20_000  # contribution pages are made this many rows at a time: memory stays flat with size
_PAGE_COLUMNS = (
    "sha", "account", "timestamp", "title", "description", "tags", "metrics", "metadata", "parents",
    "code_bearing", "target", "verdict", "reasons",
)  # fmt: skip


def _write_contributions(data: _Data, writer: _Writer, lineages: set[str]) -> int:
    """One page per indexed commit; patches for scored results, file lists for other code-bearing ones.
    Rows are turned into Python values `CHUNK_ROWS` at a time; the diffs of a chunk stream from git
    in row order while its pages are made."""
    import numpy as np

    from ..web import pages
    from .indexing import load
    from .site_rows import csr

    frame = data.analysis.frame
    rows = data.rows
    described = load(data.project, columns=("description",)).contributions  # analyze reads no descriptions
    rows.descriptions = _descriptions(rows.table, described)  # read now: the lineage pages did without
    del described
    scored_rows = np.zeros(rows.n, dtype=bool)
    scored_rows[data.row_of_node[frame.scored]] = True
    verdicts = _verdicts(data)
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
            chunk = _Chunk(data, start, stop, c, verdicts, children_ptr, children)
            with _ChunkDiffs(data, start, c, scored_rows) as diffs:
                for i in range(stop - start):
                    view = chunk.view(i, diffs.take(c["sha"][i]), best)
                    view.lineage = view.sha in lineages
                    writer.write(f"c/{view.sha[:2]}/{view.sha}.html", pages.contribution(data.info, view), track=False)
                    if i % 500 == 499:
                        advance(start + i + 1)
                patched += diffs.patched
            advance(stop)
    return patched


def _new_best_rows(data: _Data) -> set[int]:
    ratchet = data.ratchet
    shas = [sha for sha, b in zip(ratchet.shas, ratchet.new_best, strict=True) if b]
    return set(data.rows.lookup(shas).tolist())


class _ChunkDiffs:
    """The diffs of a chunk's code-bearing rows, read from two `git diff-tree` streams (patches of
    scored results, file lists of the others) as the pages ask for them, in row order."""

    def __init__(self, data: _Data, start: int, c: dict[str, list], scored_rows):
        from ..refs.diffs import diffs

        cwd = data.project.repo.worktree
        code = [i for i, bearing in enumerate(c["code_bearing"]) if bearing]
        pairs = [(c["sha"][i], _first(c["parents"][i]), bool(scored_rows[start + i])) for i in code]
        self.streams: list[Any] = [  # generators: closed (git waited for) on exit
            diffs(cwd, [(s, p) for s, p, scored in pairs if scored], max_bytes=DIFF_BYTES),
            diffs(cwd, [(s, p) for s, p, scored in pairs if not scored], patch=False),
        ]
        self.next = [next(stream, None) for stream in self.streams]
        self.patched = 0

    def take(self, sha: str):
        for k, ahead in enumerate(self.next):
            if ahead is not None and ahead.sha == sha:
                self.next[k] = next(self.streams[k], None)
                self.patched += k == 0
                return ahead
        return None

    def __enter__(self) -> _ChunkDiffs:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in self.streams:
            stream.close()


def _first(parents: list[str] | None) -> str | None:
    return parents[0] if parents else None


class _Chunk:
    """The rows start..stop of the table as Python values, with the titles and accounts of every row
    their pages link to (parents, children, verdicts) read in one go."""

    def __init__(self, data: _Data, start: int, stop: int, c: dict[str, list], verdicts: _Verdicts, ptr, kids):
        import numpy as np

        self.data, self.start, self.c, self.verdicts = data, start, c, verdicts
        frame = data.analysis.frame
        self.nodes = data.node_of_row[start:stop].tolist()
        flat = [p for parents in c["parents"] for p in parents or ()]
        self.parent_rows = dict(zip(flat, data.rows.lookup(flat).tolist(), strict=True))
        self.kids: dict[int, tuple[int, list[int]]] = {}
        linked = [np.asarray(list(self.parent_rows.values()), dtype=np.int64)]
        for node in self.nodes:
            if node >= 0:
                shown = kids[ptr[node] : ptr[node + 1]]
                rows_ = data.row_of_node[shown[-CHILDREN_SHOWN:][::-1]]
                self.kids[node] = (len(shown), rows_.tolist())
                linked.append(rows_)
        self.verdicts_of: dict[int, list[int]] = {}
        self.verifies: dict[int, int] = {}
        for i in range(stop - start):
            row = start + i
            mine = verdicts.of_target(row) if verdicts.ptr[row + 1] > verdicts.ptr[row] else []
            if mine:
                self.verdicts_of[i] = mine
            if row in verdicts.by_verification:
                self.verifies[i] = verdicts.by_verification[row]
        used = [v for vs in self.verdicts_of.values() for v in vs] + list(self.verifies.values())
        if used:
            at = np.asarray(used, dtype=np.int64)
            linked += [verdicts.row[at], verdicts.target[at]]
        from ..web.model import Ref

        found = data.rows.refs(np.concatenate(linked))
        self.refs = {row: Ref(sha, _cut(t), a) for row, (sha, t, a) in found.items()}
        self.infos = {v: verdicts.info(v, self.refs) for v in set(used)}
        self.frame = frame

    def ref(self, sha: str, row: int):
        from ..web.model import Ref

        return Ref(sha, None, None, known=False) if row < 0 else self.refs[row]

    def view(self, i: int, diff, best: set[int]):
        from ..web.model import ContributionView, Evidence

        c, frame = self.c, self.frame
        node = self.nodes[i]
        row = self.start + i
        evidence = None
        kids: list[Any] = []
        total_kids = 0
        if node >= 0:
            evidence = Evidence(
                float(frame.score[node]), int(frame.children[node]), int(frame.follow_ons[node]),
                str(frame.status[node]), int(frame.confirmations[node]), int(frame.failures[node]),
            )  # fmt: skip
            total_kids, kid_rows = self.kids[node]
            kids = [self.refs[r] for r in kid_rows]
        parents = c["parents"][i] or []
        files = None if diff is None else tuple((f.word, f.path) for f in diff.files)
        sha = c["sha"][i]
        cross = tuple(self.data.cross_refs.get(sha, ()))
        verifies = self.verifies.get(i)
        return ContributionView(
            sha=sha,
            account=c["account"][i],
            timestamp=c["timestamp"][i],
            title=c["title"][i] or "",
            description=c["description"][i] or "",
            tags=tuple(c["tags"][i] or ()),
            metrics=tuple(c["metrics"][i] or ()),
            trailers=_trailers(c, i, cross),
            valid=node >= 0,
            reasons=tuple(c["reasons"][i] or ()),
            parents=tuple(self.ref(p, self.parent_rows[p]) for p in parents),
            children=tuple(kids),
            children_total=total_kids,
            evidence=evidence,
            scored=node >= 0 and bool(frame.scored[node]),
            new_best=row in best,
            verdicts=tuple(self.infos[v] for v in self.verdicts_of.get(i, ())),
            verifies=None if verifies is None else self.infos[verifies],
            code_bearing=bool(c["code_bearing"][i]),
            first_parent=parents[0] if parents else None,
            files=files,
            diff=None if diff is None else diff.patch,
            diff_left_out=0 if diff is None else diff.truncated,
            cross_refs=cross,
        )


def _trailers(c: dict[str, list], i: int, cross: tuple[str, ...]) -> tuple[str, ...]:
    """The commit's Agora trailers, as `Contribution.trailers` writes them, from the indexed fields."""
    from ..contribution import Contribution, Verdict

    try:
        verdict = Verdict(c["verdict"][i]) if c["verdict"][i] else None
        contribution = Contribution(
            account=c["account"][i] or "",
            tags=tuple(c["tags"][i] or ()),
            description=c["description"][i] or "",
            metrics=dict(c["metrics"][i] or ()),
            metadata=_meta(c["metadata"][i]),
            target=c["target"][i],
            verdict=verdict,
            cross_refs=cross,
        )
        return tuple(contribution.trailers())
    except (ValueError, TypeError):
        return ()


# --------------------------------------------------------------------------- preview server


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
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def site_server(project: Project, out_dir: Path | str, port: int = 0, data: _Data | None = None) -> ThreadingHTTPServer:
    """An HTTP server (standard library) for a built site on 127.0.0.1: the files as they are, plus
    `/_diff/SHA.html` (any contribution's diff against its first parent) and `/lineage/SHA.html` for a
    result without a prebuilt page. The caller runs `serve_forever()`; port 0 picks a free port."""
    directory = str(Path(out_dir).resolve())
    state: dict[str, _Data] = {} if data is None else {"data": data}
    lock = threading.Lock()

    def loaded() -> _Data:
        with lock:
            if "data" not in state:
                state["data"] = _Data.collect(project)
            return state["data"]

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            path = self.path.split("?", 1)[0].split("#", 1)[0]
            diff = re.fullmatch(r"/_diff/([0-9a-f]{40})\.html", path)
            lineage = re.fullmatch(r"/lineage/([0-9a-f]{40})\.html", path)
            if diff:
                return self._page(lambda: _diff_page(loaded(), diff.group(1)))
            if lineage and not (Path(directory) / "lineage" / f"{lineage.group(1)}.html").exists():
                return self._page(lambda: _lineage_page(loaded(), lineage.group(1)))
            return super().do_GET()

        def _page(self, render: Callable[[], str | None]) -> None:
            try:
                text = render()
            except Exception as exc:  # a preview server answers every request
                self.send_error(500, f"{type(exc).__name__}: {exc}")
                return
            if text is None:
                self.send_error(404, "not a contribution of this project")
                return
            body = text.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def _diff_page(data: _Data, sha: str) -> str | None:
    from ..refs.diffs import diff_one
    from ..web import pages

    row = data.rows.row(sha)
    if row is None:
        return None
    parent = data.first_parent(row)
    diff = diff_one(data.project.repo.worktree, sha, parent)
    files = [(f.word, f.path) for f in diff.files]
    patch = diff.patch or ""
    if diff.truncated:
        patch += f"\n[{diff.truncated} more bytes left out]"
    return pages.diff_page(data.info, sha, parent, files, patch)


def _lineage_page(data: _Data, sha: str) -> str | None:
    from ..web import pages

    row = data.rows.row(sha)
    node = -1 if row is None else int(data.node_of_row[row])
    if node < 0:
        return None
    return pages.lineage(data.info, lineage_view(data, node))
