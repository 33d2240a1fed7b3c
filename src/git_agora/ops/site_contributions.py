"""The data of the contribution pages, made a chunk of rows at a time (`Chunk`): each row's links to
its parents, children and verdicts (`Verdicts`), its diff against the first parent (`ChunkDiffs`: a
patch, cut at `DIFF_BYTES`, for scored results; the file list for other code-bearing commits), and
its Agora trailers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..contribution import Contribution, Verdict
from ..frontier.verdict_rows import unsettled, unsettled_note
from ..leaks import redact
from ..records import RunRecord
from ..web.model import ContributionView, Evidence, Ref, VerdictInfo
from .site_data import SiteData, cut

CHILDREN_SHOWN = 100
DIFF_BYTES = 200_000


def descriptions(table, index_table):
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


@dataclass
class Verdicts:
    """The usable verdicts (`evidence.verdicts_of`), one entry each; `by_target` gives a target row's
    verdicts newest first (CSR offsets into `order`), `by_verification` a verification row's verdict."""

    row: Any  # numpy int64: the verification's row
    target: Any  # numpy int64: the target's row
    verdict: list[str]
    timestamp: list[int]
    weight: list[str]  # "counts", or why the verdict does not count (`evidence.Verdicts.weightless`)
    claimed: list[float | None]
    reproduced: list[float | None]
    unsettled: Any  # numpy bool: a failed rerun that does not count yet (`verdict_rows.unsettled`)
    ptr: Any  # numpy int64 per row + 1
    order: Any  # numpy int64: verdict numbers grouped by target row, newest first
    by_verification: dict[int, int]

    def of_target(self, row: int) -> list[int]:
        return self.order[self.ptr[row] : self.ptr[row + 1]].tolist()

    def info(self, i: int, refs: dict[int, Any]) -> VerdictInfo:
        return VerdictInfo(
            refs[int(self.row[i])], refs[int(self.target[i])], self.verdict[i], self.timestamp[i], self.weight[i],
            self.claimed[i], self.reproduced[i], bool(self.unsettled[i]),
        )  # fmt: skip

    @classmethod
    def collect(cls, data: SiteData) -> Verdicts:
        import numpy as np

        from ..frontier.evidence import verdicts_of

        frame = data.analysis.frame
        rows = data.rows
        found = verdicts_of(frame.graph)
        row = data.row_of_node[np.asarray(found.node, dtype=np.int64)]
        target = data.row_of_node[np.asarray(found.target, dtype=np.int64)]
        metric = data.info.metric
        claimed_fallback = rows.pick("primary_metric", target)
        own = rows.pick("primary_metric", row)
        claimed, reproduced = [], []
        for text, fallback, value in zip(rows.pick("metadata", row), claimed_fallback, own, strict=True):
            record = RunRecord.read(_meta(text))
            claimed.append(_value(record.claimed if record else None, metric, fallback))
            reproduced.append(_value(record.reproduced if record else None, metric, value))
        timestamp = [t or 0 for t in rows.pick("timestamp", row)]
        times = np.asarray(timestamp, dtype=np.int64)
        order = np.lexsort((np.arange(len(row)), -times, target)) if len(row) else np.zeros(0, np.int64)
        ptr = np.zeros(rows.n + 1, np.int64)
        if len(row):
            np.cumsum(np.bincount(target, minlength=rows.n), out=ptr[1:])
        weight = ["counts" if w is None else f"does not count: {w}" for w in found.weightless()]
        return cls(
            row, target, list(found.verdict.tolist()), timestamp, weight, claimed, reproduced, unsettled(found),
            ptr, order, dict(zip(row.tolist(), range(len(row)))),
        )  # fmt: skip


def _meta(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _value(values: dict[str, float] | None, metric: str | None, fallback: float | None) -> float | None:
    return float(values[metric]) if values and metric in values else fallback


class ChunkDiffs:
    """The diffs of a chunk's code-bearing rows, read from two `git diff-tree` streams (patches of
    scored results, file lists of the others) as the pages ask for them, in row order."""

    def __init__(self, data: SiteData, start: int, c: dict[str, list], scored_rows):
        from ..refs.diffs import diffs

        cwd = data.project.repo.worktree_path
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

    def __enter__(self) -> ChunkDiffs:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in self.streams:
            stream.close()


def _first(parents: list[str] | None) -> str | None:
    return parents[0] if parents else None


class Chunk:
    """The rows start..stop of the table as Python values, with the titles and accounts of every row
    their pages link to (parents, children, verdicts) read in one go."""

    def __init__(self, data: SiteData, start: int, stop: int, c: dict[str, list], verdicts: Verdicts, ptr, kids):
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
        found = data.rows.refs(np.concatenate(linked))
        self.refs = {row: Ref(sha, cut(t), a) for row, (sha, t, a) in found.items()}
        self.infos = {v: verdicts.info(v, self.refs) for v in set(used)}
        self.frame = frame

    def ref(self, sha: str, row: int) -> Ref:
        return Ref(sha, None, None, known=False) if row < 0 else self.refs[row]

    def shown_status(self, i: int, node: int) -> str:
        """The node's status as readers show it: "unchecked" for a result without its run record."""
        import numpy as np

        from ..frontier.checked import run_backed, shown_status

        status, frame = str(self.frame.status[node]), self.frame
        result = not np.isnan(frame.metric[node]) and not frame.verification[node]
        return shown_status(status, run_backed(self.c["metadata"][i])) if result else status

    def view(self, i: int, diff, best: set[int]) -> ContributionView:
        c, frame = self.c, self.frame
        node = self.nodes[i]
        row = self.start + i
        evidence = None
        kids: list[Any] = []
        total_kids = 0
        if node >= 0:
            evidence = Evidence(
                float(frame.score[node]), int(frame.children[node]), int(frame.follow_ons[node]),
                self.shown_status(i, node), int(frame.confirmations[node]), int(frame.failures[node]),
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
            diff=None if diff is None or diff.patch is None else redact(diff.patch),  # the index redacted the rest
            diff_left_out=0 if diff is None else diff.truncated,
            cross_refs=cross,
            unsettled=unsettled_note(sum(v.unsettled for v in self.infos_of(i)), sha),
        )

    def infos_of(self, i: int) -> list[VerdictInfo]:
        return [self.infos[v] for v in self.verdicts_of.get(i, ())]


def _trailers(c: dict[str, list], i: int, cross: tuple[str, ...]) -> tuple[str, ...]:
    """The commit's Agora trailers, as `Contribution.trailers` writes them, from the indexed fields."""

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
