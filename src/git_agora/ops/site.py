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
    writer.remove_stale()
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

        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agora-site-writer")
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

    def write(self, relative: str, text: str) -> None:
        data = text.encode("utf-8")
        self.put(relative, data)
        self.pages += 1
        self.total += len(data)
        if len(data) > self.largest[1]:
            self.largest = (relative, len(data))

    def put(self, relative: str, data: bytes) -> None:
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

    def remove_stale(self) -> None:
        """Delete the pages an earlier build wrote that this one did not (only inside the site's folders)."""
        for folder in ("", "assets", "contributions", "lineage", "c"):
            base = self.directory / folder
            if not base.is_dir():
                continue
            pattern = "*/*.html" if folder == "c" else "*.html" if folder != "assets" else "*"
            for path in base.glob(pattern):
                if path.is_file() and path.relative_to(self.directory).as_posix() not in self.written:
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
    columns: dict[str, list]  # every indexed commit, column by column (table order)
    row_of: dict[str, int]  # sha -> row
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

        import git_agora as agora

        from ..frontier.views import compute_views
        from ..web.model import SiteInfo
        from .indexing import load

        config = project.config
        analysis = agora.analyze(project, limit=10, embed=False)
        frame = analysis.frame
        analysis_dict = analysis.to_dict()
        analysis_dict["views"]["leaders"] = compute_views(frame, 100, ("leaders",))["leaders"].to_dict()
        stats = agora.stats(project).to_dict()
        index = load(project)
        table = frame.contributions
        names = ["sha", "account", "timestamp", "title", "tags", "metrics", "primary_metric"]
        names += ["metadata", "parents", "code_bearing", "target", "verdict", "valid", "reasons"]
        columns = {name: table[name].to_pylist() for name in names}
        described = dict(zip(index.contributions["sha"].to_pylist(), index.contributions["description"].to_pylist()))
        columns["description"] = [described.get(sha) for sha in columns["sha"]]  # analyze reads no descriptions
        row_of = {sha: i for i, sha in enumerate(columns["sha"])}
        valid = np.asarray([bool(v) for v in columns["valid"]], dtype=bool)
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
        notes: list[str] = []
        ratchet = _ratchet(frame, columns, row_of_node, notes)
        clusters = _cluster_map(analysis, columns, row_of_node)
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
            project, info, analysis, analysis_dict, stats, columns, row_of, node_of_row, row_of_node, cross,
            ratchet, clusters, lineage_nodes, notes,
        )  # fmt: skip

    # ----------------------------------------------------------------- helpers

    def ref(self, sha: str):
        from ..web.model import Ref

        row = self.row_of.get(sha)
        if row is None:
            return Ref(sha, None, None, known=False)
        return Ref(sha, _cut(self.columns["title"][row]), self.columns["account"][row])

    def lineage_shared(self):
        from ..frontier.lineage import shared_parts

        if self.shared is None:
            self.shared = shared_parts(self.analysis.frame.graph)
        return self.shared

    def first_parent(self, row: int) -> str | None:
        parents = self.columns["parents"][row] or []
        return parents[0] if parents else None


def _cut(text: str | None, limit: int = TITLE_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _ratchet(frame, columns: dict[str, list], row_of_node, notes: list[str]):
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
    titles = columns["title"]
    accounts = columns["account"]
    shas = columns["sha"]
    return RatchetData(
        times=frame.timestamp[shown].tolist(),
        values=frame.metric[shown].tolist(),
        status=frame.status[shown].tolist(),
        shas=[shas[r] for r in rows],
        titles=[_cut(titles[r], 100) for r in rows],
        accounts=[accounts[r] or "" for r in rows],
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


def _cluster_map(analysis, columns: dict[str, list], row_of_node):
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
        explained=projection.explained,
        x=np.round(projection.coordinates[:, 0], 4).tolist(),
        y=np.round(projection.coordinates[:, 1], 4).tolist(),
        cluster=clustering.labels.tolist(),
        score=frame.score[nodes].tolist(),
        shas=[columns["sha"][r] for r in rows],
        titles=[_cut(columns["title"][r], 100) for r in rows],
        accounts=[columns["account"][r] or "" for r in rows],
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
    _write_list(data, writer)
    diffs = _write_contributions(data, writer, set(lineages))
    plotted = sum(1 for s in data.ratchet.status if s != "failed")
    return {"contributions": len(data.columns["sha"]), "lineages": len(lineages), "diffs": diffs, "plotted": plotted}


def _contributors(data: _Data) -> list[dict[str, Any]]:
    from ..frontier.views import compute_views

    frame = data.analysis.frame
    return list(compute_views(frame, max(frame.n, 1), ("contributors",))["contributors"].rows)


def _write_lineages(data: _Data, writer: _Writer) -> list[str]:
    from ..web import pages

    written = []
    entries = []
    for node in data.lineage_nodes:
        view = lineage_view(data, int(node))
        writer.write(f"lineage/{view.sha}.html", pages.lineage(data.info, view))
        written.append(view.sha)
        row = int(data.row_of_node[node])
        entries.append((view.sha, view.title, data.columns["account"][row], data.columns["primary_metric"][row]))
    writer.write("lineage/index.html", pages.lineage_index(data.info, entries))
    return written


def lineage_view(data: _Data, node: int):
    """The lineage graph of one node (`frontier.lineage.lineage_of` over the analysed graph)."""
    import numpy as np

    from ..frontier.lineage import lineage_of
    from ..web.model import LineageView

    frame = data.analysis.frame
    shared = data.lineage_shared()
    found = lineage_of(frame.graph, node, direction=frame.direction, tolerance=frame.tolerance, shared=shared)
    node_of_sha = {sha: int(data.node_of_row[data.row_of[sha]]) for sha in found.ancestry}
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
    position = {sha: i for i, sha in enumerate(order)}
    columns = data.columns
    nodes = []
    for sha in order:
        n = node_of_sha[sha]
        row = data.row_of[sha]
        value = frame.metric[n]
        nodes.append(
            {
                "sha": sha,
                "title": _cut(columns["title"][row], 100),
                "account": columns["account"][row] or "",
                "t": int(frame.timestamp[n]),
                "metric": None if np.isnan(value) else float(value),
                "scored": bool(frame.scored[n]),
                "milestone": sha in milestone,
                "reproduced": sha in reproduced,
            }
        )
    ptr, parents = shared.parents
    edges = []
    for sha in order:
        n = node_of_sha[sha]
        child_account = columns["account"][data.row_of[sha]]
        for p in parents[ptr[n] : ptr[n + 1]]:
            parent_sha = columns["sha"][int(data.row_of_node[p])]
            if parent_sha in position:
                cross = columns["account"][int(data.row_of_node[p])] != child_account
                edges.append((position[sha], position[parent_sha], cross))
    milestones = tuple((data.ref(m.sha), float(m.value), int(m.timestamp)) for m in found.milestones)
    return LineageView(
        sha=found.sha,
        title=columns["title"][data.row_of[found.sha]] or "",
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
    from ..web import pages
    from ..web.model import ListRow

    c = data.columns
    status = data.analysis.frame.status
    order = sorted(range(len(c["sha"])), key=lambda r: (c["timestamp"][r] or 0, c["sha"][r]), reverse=True)
    count = max(1, -(-len(order) // pages.LIST_PAGE))
    for number in range(1, count + 1):
        rows = []
        for r in order[(number - 1) * pages.LIST_PAGE : number * pages.LIST_PAGE]:
            node = int(data.node_of_row[r])
            rows.append(
                ListRow(
                    c["sha"][r],
                    c["account"][r],
                    c["timestamp"][r],
                    _cut(c["title"][r], 120),
                    tuple(c["tags"][r] or ()),
                    c["primary_metric"][r],
                    None if node < 0 else str(status[node]),
                )  # fmt: skip
            )
        writer.write(
            f"contributions/{number}.html", pages.contribution_list(data.info, rows, number, count, len(order))
        )


def _verdicts(data: _Data):
    """The usable verdicts (`evidence.current_verdicts`) as VerdictInfo, by target row and by verification row."""
    from ..frontier.evidence import current_verdicts
    from ..web.model import VerdictInfo

    frame = data.analysis.frame
    verdicts = current_verdicts(frame.graph)
    metric = data.info.metric
    c = data.columns
    by_target: dict[int, list] = {}
    by_verification: dict[int, Any] = {}
    for node, target, verdict, current in zip(
        verdicts.node.tolist(), verdicts.target.tolist(), verdicts.verdict.tolist(), verdicts.current.tolist()
    ):
        row, target_row = int(data.row_of_node[node]), int(data.row_of_node[target])
        meta = _meta(c["metadata"][row])
        claimed = _value(meta.get("claimed"), metric, c["primary_metric"][target_row])
        reproduced = _value(meta.get("reproduced"), metric, c["primary_metric"][row])
        info = VerdictInfo(
            data.ref(c["sha"][row]), data.ref(c["sha"][target_row]), verdict, c["timestamp"][row] or 0,
            bool(current), claimed, reproduced,
        )  # fmt: skip
        by_target.setdefault(target_row, []).append(info)
        by_verification[row] = info
    for infos in by_target.values():
        infos.sort(key=lambda v: v.timestamp, reverse=True)
    return by_target, by_verification


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


def _write_contributions(data: _Data, writer: _Writer, lineages: set[str]) -> int:
    """One page per indexed commit; patches for scored results, file lists for other code-bearing ones."""
    from ..refs.diffs import diffs
    from ..web import pages

    c = data.columns
    frame = data.analysis.frame
    n_rows = len(c["sha"])
    scored_rows = set(data.row_of_node[frame.scored].tolist())
    code_rows = [r for r in range(n_rows) if c["code_bearing"][r]]
    cwd = data.project.repo.git.cwd
    patched = {
        d.sha: d
        for d in diffs(
            cwd, [(c["sha"][r], data.first_parent(r)) for r in code_rows if r in scored_rows], max_bytes=DIFF_BYTES
        )
    }
    listed = {
        d.sha: d
        for d in diffs(
            cwd, [(c["sha"][r], data.first_parent(r)) for r in code_rows if r not in scored_rows], patch=False
        )
    }
    by_target, by_verification = _verdicts(data)
    best = _new_best_rows(data)
    children_ptr, children = frame.graph.children_lists()
    for prefix in {sha[:2] for sha in c["sha"]}:
        writer.mkdir(f"c/{prefix}")
    for row in range(n_rows):
        sha = c["sha"][row]
        view = _contribution_view(
            data, row, patched.get(sha) or listed.get(sha), by_target, by_verification, best, children_ptr, children
        )
        view.lineage = sha in lineages
        writer.write(f"c/{sha[:2]}/{sha}.html", pages.contribution(data.info, view))
    return len(patched)


def _new_best_rows(data: _Data) -> set[int]:
    ratchet = data.ratchet
    return {data.row_of[sha] for sha, b in zip(ratchet.shas, ratchet.new_best) if b}


def _contribution_view(data: _Data, row: int, diff, by_target, by_verification, best, children_ptr, children):
    from ..web.model import ContributionView, Evidence

    c = data.columns
    frame = data.analysis.frame
    node = int(data.node_of_row[row])
    evidence = None
    kids: list[Any] = []
    total_kids = 0
    if node >= 0:
        evidence = Evidence(
            float(frame.score[node]), int(frame.children[node]), int(frame.follow_ons[node]), str(frame.status[node]),
            int(frame.confirmations[node]), int(frame.failures[node]),
        )  # fmt: skip
        kid_nodes = children[children_ptr[node] : children_ptr[node + 1]]
        total_kids = len(kid_nodes)
        kids = [data.ref(c["sha"][int(data.row_of_node[k])]) for k in kid_nodes[-CHILDREN_SHOWN:][::-1]]
    parents = c["parents"][row] or []
    files = None if diff is None else tuple((f.word, f.path) for f in diff.files)
    return ContributionView(
        sha=c["sha"][row],
        account=c["account"][row],
        timestamp=c["timestamp"][row],
        title=c["title"][row] or "",
        description=c["description"][row] or "",
        tags=tuple(c["tags"][row] or ()),
        metrics=tuple(c["metrics"][row] or ()),
        trailers=_trailers(data, row),
        valid=node >= 0,
        reasons=tuple(c["reasons"][row] or ()),
        parents=tuple(data.ref(p) for p in parents),
        children=tuple(kids),
        children_total=total_kids,
        evidence=evidence,
        scored=node >= 0 and bool(frame.scored[node]),
        new_best=row in best,
        verdicts=tuple(by_target.get(row, ())),
        verifies=by_verification.get(row),
        code_bearing=bool(c["code_bearing"][row]),
        first_parent=parents[0] if parents else None,
        files=files,
        diff=None if diff is None else diff.patch,
        diff_left_out=0 if diff is None else diff.truncated,
        cross_refs=tuple(data.cross_refs.get(c["sha"][row], ())),
    )


def _trailers(data: _Data, row: int) -> tuple[str, ...]:
    """The commit's Agora trailers, as `Contribution.trailers` writes them, from the indexed fields."""
    from ..contribution import Contribution, Verdict

    c = data.columns
    try:
        verdict = Verdict(c["verdict"][row]) if c["verdict"][row] else None
        contribution = Contribution(
            account=c["account"][row] or "",
            tags=tuple(c["tags"][row] or ()),
            description=c["description"][row] or "",
            metrics=dict(c["metrics"][row] or ()),
            metadata=_meta(c["metadata"][row]),
            target=c["target"][row],
            verdict=verdict,
            cross_refs=tuple(data.cross_refs.get(c["sha"][row], ())),
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

    row = data.row_of.get(sha)
    if row is None:
        return None
    parent = data.first_parent(row)
    diff = diff_one(data.project.repo.git.cwd, sha, parent)
    files = [(f.word, f.path) for f in diff.files]
    patch = diff.patch or ""
    if diff.truncated:
        patch += f"\n[{diff.truncated} more bytes left out]"
    return pages.diff_page(data.info, sha, parent, files, patch)


def _lineage_page(data: _Data, sha: str) -> str | None:
    from ..web import pages

    row = data.row_of.get(sha)
    node = -1 if row is None else int(data.node_of_row[row])
    if node < 0:
        return None
    return pages.lineage(data.info, lineage_view(data, node))
