"""What the pages of a site show, gathered once (`SiteData.collect`), and each lineage graph (`lineage_view`).

Large projects stay within bounds (issue 12: 100,000 contributions in under a minute, no page over
5 MB): the ratchet plot samples beyond `MAX_POINTS` results (every new best first, then verified
results, then the others) and says so; the cluster map shows the analysis window (at most 5,000
vectors); a lineage graph draws at most `LINEAGE_NODES` ancestors; lineage pages are prebuilt for
every scored result up to `LINEAGE_ALL_UP_TO` of them, else for the `LINEAGE_PAGES` best-placed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from ..project import Project
from ..web.model import ClusterMap, LineageView, RatchetData, Ref, SiteInfo
from .analyze import analyze

MAX_POINTS = 20_000
LINEAGE_ALL_UP_TO = 2_000
LINEAGE_PAGES = 300
LINEAGE_NODES = 2_500
TITLE_CHARS = 160


@dataclass
class SiteData:
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
    def collect(cls, project: Project) -> SiteData:
        import numpy as np
        import pyarrow.compute as pc

        from ..frontier.checked import mark_rows, shown_shas, unchecked_shas
        from ..frontier.views import compute_views
        from .history import stats as graph_stats
        from .indexing import load
        from .site_rows import Rows

        config = project.config
        stats = graph_stats(project).to_dict()  # first: its working set is gone before the analysis is made
        analysis = analyze(project, limit=10, embed=False)
        frame = analysis.frame
        analysis_dict = analysis.to_dict()
        leaders = compute_views(frame, 100, ("leaders",))["leaders"]
        unchecked = unchecked_shas(frame.graph.table, frame.scored, shown_shas(leaders.rows))
        leaders = mark_rows(leaders, unchecked)  # `frontier.checked`
        analysis_dict["views"]["leaders"] = leaders.to_dict()
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
            name=config.name or os.path.basename(project.repo.worktree_path),
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

    def refs(self, shas: list[str]) -> list[Ref]:
        """A link (`web.model.Ref`) to each sha, read in one go."""
        rows = self.rows.lookup(shas)
        found = self.rows.refs(rows)
        return [
            Ref(sha, None, None, known=False) if row < 0 else Ref(sha, cut(found[row][1]), found[row][2])
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


def cut(text: str | None, limit: int = TITLE_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _ratchet(frame, rows_: Any, row_of_node, notes: list[str]):
    """Scored results and failed-verified results in time order; new bests (noise-aware) marked."""
    import numpy as np

    from ..frontier.scored import in_time, new_best_mask

    failed = frame.buildable_kind & (frame.status == "failed") & ~np.isnan(frame.metric)
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
        titles=[cut(t, 100) for t in rows_.pick("title", rows)],
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
        titles=[cut(t, 100) for t in rows_.pick("title", rows)],
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


def lineage_view(data: SiteData, node: int) -> LineageView:
    """The lineage graph of one node (`frontier.lineage.lineage_of` over the analysed graph)."""
    import numpy as np

    from ..frontier.lineage import lineage_of

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
                "title": cut(title, 100),
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
