"""The frame carried between analyses (`frontier.incremental`, kept by `ops.frame_cache`) against the frame
built cold, after random appends of every kind: results, insights, hypotheses, wip and endorsements on
recent and old parents, merges, new accounts, verdicts, amendments (policies in force and the evaluator
epoch), identities (an account the trust root now names), rows that turn valid late, backdated rows
that sort among the old ones, and parents that arrive after their children. Each step reads the state
the previous one wrote (through the file format), and the restored frame, the state kept and the
whole analysis must equal a cold build's; plain appends must take the incremental path."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
from frontier_tables import node, sha, table, verify

from git_agora.frontier.analyze import AnalyzeConfig, analyze
from git_agora.frontier.evidence import follow_on_work, verdicts_of
from git_agora.frontier.frame import Frame, build_frame
from git_agora.frontier.incremental import capture, dangling_of, exact, restore, state_key
from git_agora.frontier.root import Root
from git_agora.ops.frame_cache import read_state, write_state

# not sums of powers of two: added in another order, their sums differ in the last bits
WEIGHTS = {"result": 0.7, "insight": 0.1, "hypothesis": 0.3, "report": 1.1}


def cold(contributions: pa.Table, root: Root, key: str, direction: str, tolerance: float):
    frame = build_frame(contributions, direction=direction, tolerance=tolerance, weights=WEIGHTS, root=root)
    qualifying = follow_on_work(frame.graph, verdicts_of(frame.graph))
    return frame, capture(frame, key, qualifying, dangling_of(frame.graph))


def with_policies(contributions: pa.Table, policies: dict[str, str]) -> pa.Table:
    """The table with the `policy` column set for the rows named (by sha) in `policies`."""
    column = [policies.get(s) for s in contributions["sha"].to_pylist()]
    at = contributions.schema.get_field_index("policy")
    return contributions.set_column(at, contributions.schema.field("policy"), pa.array(column, pa.string()))


def same_frames(a: Frame, b: Frame) -> None:
    for field in dataclasses.fields(Frame):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert x.dtype.kind == y.dtype.kind or x.dtype == object, field.name
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), field.name
    assert a.graph.table.equals(b.graph.table)
    for name in ("account", "child", "parent", "first_parent", "target"):
        assert np.array_equal(getattr(a.graph, name), getattr(b.graph, name)), name
    va, vb = verdicts_of(a.graph), verdicts_of(b.graph)
    for field in dataclasses.fields(va):
        x, y = getattr(va, field.name), getattr(vb, field.name)
        assert np.array_equal(np.asarray(x), np.asarray(y)), field.name


class History:
    """Random appends to a growing history of rows, in canonical order (timestamp, sha)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.rows = [node("n0", "a0", t=0, tags=("setup",), metric=2.0)]
        self.t = 1
        self.count = 1
        self.policies: dict[str, str] = {}
        self.accounts = 4
        self.late: list[str] = []  # rows published invalid (pending), made valid later

    def name(self) -> str:
        self.count += 1
        return f"n{self.count}"

    def parent(self, old: bool = False) -> str:
        pool = [r.name for r in self.rows if r.valid and r.verdict is None]
        if old or self.rng.random() < 0.2:
            return pool[int(self.rng.integers(0, len(pool)))]
        return pool[max(0, len(pool) - 1 - int(self.rng.geometric(0.3)))]

    def account(self) -> str:
        if self.rng.random() < 0.1:
            self.accounts += 1
        return f"a{int(self.rng.integers(0, self.accounts))}"

    def plain(self, k: int) -> None:
        for _ in range(k):
            kind = str(self.rng.choice(["result", "result", "insight", "hypothesis", "wip", "endorsed", "report"]))
            parents = [self.parent()]
            if self.rng.random() < 0.15:
                parents.append(self.parent(old=True))
            metric = round(float(self.rng.normal(1.5, 0.3)), 3) if kind == "result" else None
            self.t += int(self.rng.integers(1, 4))
            self.rows.append(
                node(self.name(), self.account(), *dict.fromkeys(parents), t=self.t, tags=(kind,), metric=metric)
            )

    def verdict(self) -> None:
        targets = [r for r in self.rows if r.valid and r.metric is not None and r.verdict is None]
        target = targets[int(self.rng.integers(0, len(targets)))]
        who = self.account()
        who = who if who != target.account else "a0"
        if who == target.account:
            return
        self.t += 1
        verdict = str(self.rng.choice(["confirmed", "partial", "failed"]))
        self.rows.append(verify(self.name(), who, target.name, verdict, t=self.t, run=bool(self.rng.random() < 0.8)))

    def amendment(self) -> None:
        """A policy amendment by the setup's account; the rows after it are judged by it."""
        self.t += 1
        name = self.name()
        self.rows.append(node(name, "a0", self.parent(), t=self.t, tags=("policy",)))
        self.policies["__current__"] = sha(name)

    def backdated(self) -> None:
        """Rows dated before the latest rows (they sort among the old ones: a clock behind, a log pushed
        late): results and insights, of known and new accounts, on a parent with later children."""
        for _ in range(int(self.rng.choice([1, 1, 3]))):
            when = int(self.rng.integers(1, max(2, self.t)))
            earlier = [r.name for r in self.rows if r.timestamp < when and r.valid and r.verdict is None]
            parent = earlier[int(self.rng.integers(max(0, len(earlier) - 3), len(earlier)))]
            kind = str(self.rng.choice(["insight", "result", "report"]))
            metric = round(float(self.rng.normal(1.5, 0.3)), 3) if kind == "result" else None
            self.rows.append(node(self.name(), self.account(), parent, t=when, tags=(kind,), metric=metric))

    def pending(self) -> None:
        """A row indexed invalid now, valid from a later step."""
        self.t += 1
        name = self.name()
        self.rows.append(node(name, self.account(), self.parent(), t=self.t, tags=("result",), metric=1.0, valid=False))
        self.late.append(name)

    def settle(self) -> None:
        self.rows = [dataclasses.replace(r, valid=True) if r.name in self.late else r for r in self.rows]
        self.late = []

    def orphan(self) -> None:
        """A child that names a parent not here yet; the parent arrives at a later step, dated after
        everything (its child's clock was ahead): it sorts last, so only `dangling` tells."""
        self.t += 1
        self.held = f"m{self.count}"
        self.held_parent = self.parent()
        self.rows.append(node(self.name(), self.account(), self.held, t=self.t, tags=("insight",)))

    def release(self) -> None:
        if getattr(self, "held", None) is not None:
            self.t += 1
            self.rows.append(node(self.held, self.account(), self.held_parent, t=self.t, tags=("result",), metric=1.2))
            self.held = None

    def table(self) -> pa.Table:
        rows = sorted(self.rows, key=lambda r: (r.timestamp, sha(r.name)))
        contributions = table(rows)
        current = self.policies.get("__current__")
        if current is None:
            return contributions
        first = next(i for i, r in enumerate(rows) if sha(r.name) == current)
        judged = {sha(r.name): current for r in rows[first + 1 :] if r.account != "a0" or "policy" not in r.tags}
        return with_policies(contributions, judged)


@pytest.mark.parametrize("seed", range(10))
def test_incremental_frames_equal_cold_ones_after_random_appends_of_every_kind(seed, tmp_path):
    history = History(seed)
    history.plain(40)
    direction, tolerance = ("min", 0.01) if seed % 2 else ("max", 0.0)
    root = Root(ranks=bool(seed % 3 == 0))
    path = tmp_path / "frame.state"
    key = state_key(direction, tolerance, WEIGHTS, root)
    _, state = cold(history.table(), root, key, direction, tolerance)
    write_state(path, state)
    paths = {"incremental": 0, "cold": 0}
    for step in range(30):
        kind = str(
            history.rng.choice(
                ["plain", "plain", "plain", "verdict", "amendment", "identity", "backdated", "pending", "orphan"]
            )
        )
        held = getattr(history, "held", None)
        expect_incremental = kind in ("plain", "backdated") and not history.late and held is None
        if kind == "plain":
            history.plain(int(history.rng.choice([1, 1, 2, 7])))
        elif kind == "verdict":
            history.verdict()
        elif kind == "amendment":
            history.amendment()
            root = dataclasses.replace(root, epoch=frozenset({sha("n0"), history.policies["__current__"]}))
        elif kind == "identity":
            root = dataclasses.replace(root, accounts=root.accounts | {f"a{int(history.rng.integers(0, 6))}"})
        elif kind == "backdated":
            history.backdated()
        elif kind == "pending":
            history.pending()
        else:
            history.orphan()
        if kind != "pending" and history.late and history.rng.random() < 0.5:
            history.settle()
            expect_incremental = False
        if kind != "orphan" and history.rng.random() < 0.5 and getattr(history, "held", None) is not None:
            history.release()
            expect_incremental = False
        contributions = history.table()
        key = state_key(direction, tolerance, WEIGHTS, root)
        kept = read_state(path)
        assert kept is not None
        found = restore(kept, contributions, key, direction=direction, tolerance=tolerance, weights=WEIGHTS, root=root)
        frame, state = cold(contributions, root, key, direction, tolerance)
        if expect_incremental:
            assert found is not None, f"step {step}: a plain append took the cold path"
        if found is not None:
            paths["incremental"] += 1
            same_frames(found[0], frame)
            assert exact(found[1], state), f"step {step} ({kind}): the kept state differs from a cold one"
            config = AnalyzeConfig(direction=direction, tolerance=tolerance, weights=WEIGHTS, root=root, limit=5)
            warm = analyze(contributions, config=config, frame=found[0]).to_dict()
            assert warm == analyze(contributions, config=config, frame=frame).to_dict()
            state = found[1]
        else:
            paths["cold"] += 1
        write_state(path, state)
    assert paths["incremental"] and paths["cold"], paths


def test_a_state_file_that_is_cut_short_or_foreign_counts_as_missing(tmp_path):
    history = History(1)
    history.plain(10)
    root = Root()
    key = state_key("min", 0.0, WEIGHTS, root)
    _, state = cold(history.table(), root, key, "min", 0.0)
    path = tmp_path / "frame.state"
    write_state(path, state)
    assert read_state(path) is not None and exact(read_state(path), state)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert read_state(path) is None
    path.write_bytes(b"not a frame state")
    assert read_state(path) is None
    assert read_state(tmp_path / "missing") is None


@pytest.mark.parametrize("chunk", [1, 3, 1 << 16])
def test_the_earlier_nodes_are_found_among_the_new_ones_or_said_to_be_gone(chunk, monkeypatch):
    """`_merged_places` against the places a search gives, on random sets: new keys among and after the
    earlier ones, and earlier ones that are gone (then None)."""
    from git_agora.frontier import incremental

    monkeypatch.setattr(incremental, "MERGE_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    for _ in range(400):
        pool = np.sort(rng.choice(1000, size=int(rng.integers(10, 60)), replace=False))
        before = np.sort(rng.choice(pool, size=int(rng.integers(0, len(pool) - 5)), replace=False))
        now = np.union1d(before, rng.choice(pool, size=int(rng.integers(0, 6))))
        if rng.random() < 0.25 and len(before):
            now = np.setdiff1d(now, rng.choice(before, size=1))
        keys = lambda values: np.array([f"{v:040d}".encode() for v in values], dtype="S40")  # noqa: E731
        found = incremental._merged_places(keys(now), keys(before)) if len(now) >= len(before) else None
        if np.isin(before, now).all():
            assert found is not None and np.array_equal(found, np.searchsorted(now, before))
        else:
            assert found is None


@pytest.mark.parametrize("ranks", [False, True])
def test_an_older_first_post_that_reorders_the_accounts_reorders_their_verdicts(ranks):
    """b's contribution dated before a's first moves b's account code before a's: the verdicts, held in
    (verifier, target) order, change places, as in a cold build."""
    rows = [
        node("s", "root", t=0, tags=("setup",), metric=2.0),
        node("ra", "a", "s", t=10, tags=("result",), metric=1.5),
        node("rb", "b", "s", t=20, tags=("result",), metric=1.4),
        verify("va", "a", "rb", "confirmed", t=30, run=True),
        verify("vb", "b", "ra", "failed", t=31, run=True),
        node("later", "c", "rb", t=40, tags=("insight",)),
    ]
    root = Root(ranks=ranks)
    key = state_key("min", 0.0, WEIGHTS, root)
    _, state = cold(table(rows), root, key, "min", 0.0)
    grown = table(sorted([*rows, node("early", "b", "s", t=5, tags=("insight",))], key=lambda r: r.timestamp))
    found = restore(state, grown, key, direction="min", tolerance=0.0, weights=WEIGHTS, root=root)
    frame, expected = cold(grown, root, key, "min", 0.0)
    assert found is not None
    assert expected.accounts.to_pylist()[:3] == ["root", "b", "a"]
    same_frames(found[0], frame)
    assert exact(found[1], expected)


@pytest.mark.parametrize("damage", ["child", "account", "order", "v_verifier", "short"])
def test_a_state_whose_references_point_outside_it_counts_as_missing(damage, tmp_path):
    """A kept state damaged in place (right sizes, wrong values: a disk error, an edit by hand) would make
    the next analysis index out of range: it reads as missing, and the frame is built cold."""
    history = History(2)
    history.plain(20)
    history.verdict()
    history.verdict()
    root = Root()
    _, state = cold(history.table(), root, state_key("min", 0.0, WEIGHTS, root), "min", 0.0)
    path = tmp_path / "frame.state"
    write_state(path, state)
    assert read_state(path) is not None and len(state.arrays["v_verifier"])
    arrays = dict(state.arrays)
    if damage == "short":
        arrays["score"] = arrays["score"][:-1]
    else:
        arrays[damage] = arrays[damage].copy()
        arrays[damage][-1] = 10**6
    write_state(path, dataclasses.replace(state, arrays=arrays))
    assert read_state(path) is None
