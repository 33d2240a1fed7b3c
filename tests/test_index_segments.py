"""The segmented index: the compaction policy, the logical table, and updates that equal a rebuild
whatever arrives late, out of order or dated in the future, with a crash injected at every step."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from agora_testing import agora, forge, git
from git_agora.contribution import Contribution
from git_agora.index import segments, state, store
from git_agora.index.schema import CONTRIBUTIONS
from git_agora.index.state import FORMAT_VERSION, index_dir
from git_agora.ops.indexing import _rules
from git_agora.project import Project
from git_agora.refs.git import Git
from git_agora.refs.quarantine import quarantine_rewritten_logs

# --- the compaction policy ------------------------------------------------------------------------


def run_policy(sizes: list[int], arrivals: list[int]) -> tuple[list[int], int, int]:
    """Apply the policy after each arrival; return the final sizes, the most segments seen, rows written."""
    most, written = len(sizes), 0
    for n in arrivals:
        sizes.append(n)
        written += n
        while (run := segments.plan_merge(sizes)) is not None:
            start, stop = run
            assert stop - start >= 2
            merged = sum(sizes[start:stop])
            sizes[start:stop] = [merged]
            written += merged
        most = max(most, len(sizes))
    return sizes, most, written


def test_one_row_updates_keep_the_segment_count_logarithmic():
    sizes, most, written = run_policy([100_000], [1] * 20_000)
    assert sum(sizes) == 120_000
    assert most <= 3 * 10  # (fanout - 1) per level
    assert written < 20_000 * 12  # each row rewritten about log_4(n) times


def test_the_cap_holds_for_any_arrival_sizes():
    import random

    rng = random.Random(7)
    sizes, most, _ = run_policy([], [rng.choice([1, 1, 1, 5, 300, 70_000]) for _ in range(3000)])
    assert most <= segments.MAX_SEGMENTS + 1


def test_no_merge_below_the_fanout():
    assert segments.plan_merge([1_000_000, 1, 1, 1]) is None
    assert segments.plan_merge([1_000_000, 1, 1, 1, 1]) == (1, 5)
    assert segments.plan_merge([500, 3, 20, 20, 20, 20]) == (1, 6)  # a smaller neighbour rides along


# --- the logical table ----------------------------------------------------------------------------


def rows(*items: tuple[int, str, str]) -> pa.Table:
    base = {name: None for name in CONTRIBUTIONS.names}
    return pa.Table.from_pylist(
        [{**base, "timestamp": ts, "sha": sha, "title": title, "tags": [], "reasons": []} for ts, sha, title in items],
        schema=CONTRIBUTIONS,
    )


def segment(table: pa.Table, replaces: int = 0) -> segments.Segment:
    first, last = segments.key_range(table)
    return segments.Segment(0, table.num_rows, replaces, first, last, segments.FileRef("x", 0, 0))


def test_the_logical_table_is_canonical_and_keeps_the_newest_version():
    a = rows((1, "a", "one"), (5, "e", "five"))
    b = rows((3, "c", "three"), (9, "i", "nine"))  # overlaps a
    c = rows((10, "j", "ten"))
    table = segments.logical([a, b, c], [segment(a), segment(b), segment(c)])
    assert table.column("sha").to_pylist() == ["a", "c", "e", "i", "j"]
    patch = rows((5, "e", "five, revised"))
    table = segments.logical([a, b, patch], [segment(a), segment(b), segment(patch, replaces=1)])
    assert table.column("title").to_pylist() == ["one", "three", "five, revised", "nine"]


@pytest.mark.parametrize("seed", range(30))
def test_accounts_of_counts_each_account_and_keeps_its_last_row(seed):
    """Per account of a table in canonical order: its rows and its last row's key, as reading the rows one
    by one gives, with null accounts left out and the rows in several chunks (fails when the first row
    of an account is taken for its last)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    accounts = [None if rng.random() < 0.1 else f"a{int(rng.integers(0, 1 + n // 5))}" for _ in range(n)]
    times = np.sort(rng.integers(0, 50, size=n)).tolist()
    shas = [f"{i:040x}" for i in range(n)]
    cut = int(rng.integers(0, n + 1))
    table = pa.table(
        {
            "account": pa.chunked_array([accounts[:cut], accounts[cut:]], pa.string()),
            "timestamp": pa.chunked_array([times[:cut], times[cut:]], pa.int64()),
            "sha": pa.chunked_array([shas[:cut], shas[cut:]], pa.string()),
        }
    )
    expected: dict[str, tuple[int, int, str]] = {}
    for account, ts, sha in zip(accounts, times, shas):
        if account is not None:
            expected[account] = (expected.get(account, (0,))[0] + 1, ts, sha)
    assert segments.accounts_of(table) == expected


@pytest.mark.parametrize("seed", range(40))
def test_a_few_rows_merged_into_a_large_segment_equal_a_full_sort(seed):
    """Rows among and after those of a large segment, some in the same second, some replacing its rows
    (a later version of the same sha), across several later segments: the slices `logical` merges
    are the table sorting everything gives, chunk layout aside."""
    rng = np.random.default_rng(seed)
    times = np.sort(rng.integers(0, 60, size=int(rng.integers(150, 300))))  # many in the same second
    names = [f"{i:04x}" for i in rng.permutation(5000)[: len(times) + 40]]
    big = sorted(zip(times.tolist(), names[: len(times)], ["old"] * len(times)))
    later, pending = [], names[len(times) :]
    for _ in range(int(rng.integers(1, 4))):
        new = [(int(rng.integers(0, 70)), pending.pop(), "new") for _ in range(int(rng.integers(0, 4)))]
        again = [(t, sha, "revised") for t, sha, _ in (big[int(i)] for i in rng.integers(0, len(big), size=2))]
        later.append(sorted(set(new + again if rng.random() < 0.6 else new)))
    tables = [rows(*big)] + [rows(*part) for part in later]
    for replacing in (True, False):
        if not replacing:
            tables = [rows(*big)] + [rows(*[r for r in part if r[2] == "new"]) for part in later]
        parts = [segment(t, replaces=int(replacing)) for t in tables]
        merged = segments.logical(tables, parts)
        expected = segments.newest_versions(pa.concat_tables(tables))[0].sort_by(segments.KEY)
        assert merged.equals(expected), (seed, replacing)
        later_rows = sum(t.num_rows for t in tables[1:])
        assert segments._merged(tables[0], tables[1:], replacing) is not None or not later_rows  # merged, not sorted


def test_a_damaged_manifest_is_noticed():
    manifest = segments.Manifest(FORMAT_VERSION, {"refs/agora/log/a": "1" * 40}, {"root": None})
    text = manifest.to_json()
    assert segments.Manifest.from_json(text) == manifest
    with pytest.raises(segments.Damaged):
        segments.Manifest.from_json(text.replace("1111", "1112"))


def many(n: int, moved: int = 0) -> tuple[dict[str, str], dict[str, tuple[int, int, str]]]:
    """Tips and accounts of n accounts; the first `moved` of them one entry further."""
    tips = {f"refs/agora/log/a{i}": f"{i + (i < moved):040x}" for i in range(n)}
    accounts = {f"a{i}": (10 + (i < moved), 100 + i, f"{i:040x}") for i in range(n)}
    return tips, accounts


def test_the_manifest_stays_small_and_carries_only_what_changed_since_its_side_file(tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "INLINE", 8)
    tips, accounts = many(100)
    first = segments.commit(tmp_path, segments.Manifest(FORMAT_VERSION, tips, {"root": None}, accounts=accounts))
    assert first.tables is not None and first.next_id == 2  # more changed than INLINE: a side file
    small = (tmp_path / "manifest.json").read_text()
    assert len(small) < 1000 and segments.read_manifest(tmp_path) == first

    tips, accounts = many(100, moved=3)
    del tips["refs/agora/log/a99"]  # a log deleted: recorded as gone
    second = segments.commit(tmp_path, replace(first, tips=tips, accounts=accounts))
    assert second.tables == first.tables  # 7 changes: carried in the manifest, the side file kept
    body = json.loads((tmp_path / "manifest.json").read_text())
    assert body["tips"] == {**{f"refs/agora/log/a{i}": f"{i + 1:040x}" for i in range(3)}, "refs/agora/log/a99": None}
    assert len(body["accounts"]) == 3
    segments._TABLES_CACHE.clear()  # as a new process reads it
    assert segments.read_manifest(tmp_path) == second
    head = state.ManifestHead(body)
    assert state.current(head, tips, 0) and not state.current(head, many(100)[0], 0)

    tips, accounts = many(100, moved=10)
    third = segments.commit(tmp_path, replace(second, tips=tips, accounts=accounts))
    assert third.tables != first.tables  # past INLINE: a new side file, the old one collected
    assert {p.name for p in (tmp_path / "segments").iterdir()} == {third.tables.name}
    assert segments.read_manifest(tmp_path) == third


def test_a_damaged_side_file_is_noticed(tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "INLINE", 0)
    tips, accounts = many(5)
    written = segments.commit(tmp_path, segments.Manifest(FORMAT_VERSION, tips, {"root": None}, accounts=accounts))
    assert written.tables is not None
    side = tmp_path / "segments" / written.tables.name
    text = side.read_text()
    side.write_text(text.replace('"a1"', '"b1"'))  # same size, another account
    segments._TABLES_CACHE.clear()
    with pytest.raises(segments.Damaged):
        segments.read_manifest(tmp_path)
    side.unlink()
    with pytest.raises(segments.Damaged):
        segments.read_manifest(tmp_path)
    with pytest.raises(segments.Damaged):  # a manifest naming a side file is no manifest without it
        segments.Manifest.from_json((tmp_path / "manifest.json").read_text())


# --- updates against a rebuild --------------------------------------------------------------------

DAY = 86_400


class Forger:
    """Contributions written by hand with chosen committer times, listed by local account logs."""

    def __init__(self, clone: Path):
        self.clone = clone
        self.setup = agora(clone, "whoami", "--json").json()["setup"]
        self.logs: dict[str, list[str]] = {}
        self.n = 0

    def contribution(self, account: str, ts: int, parents: list[str] | None = None) -> str:
        self.n += 1
        c = Contribution(account=account, tags=("insight",), description=f"note {self.n}")
        return self._commit(c.to_message(), parents or [self.setup], ts)

    def second_setup(self, account: str, ts: int) -> str:
        empty = subprocess.run(["git", "mktree"], cwd=self.clone, input="", capture_output=True, text=True)
        message = Contribution(account=account, tags=("setup",), description=f"another root {ts}").to_message()
        env = {**os.environ, "GIT_COMMITTER_DATE": f"{ts} +0000"}
        return subprocess.run(
            ["git", "commit-tree", empty.stdout.strip()],
            cwd=self.clone,
            input=message,
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout.strip()

    def _commit(self, message: str, parents: list[str], ts: int) -> str:
        old = os.environ.get("GIT_COMMITTER_DATE")
        os.environ["GIT_COMMITTER_DATE"] = f"{ts} +0000"
        try:
            return forge(self.clone, message, parents)
        finally:
            if old is None:
                del os.environ["GIT_COMMITTER_DATE"]
            else:
                os.environ["GIT_COMMITTER_DATE"] = old

    def list(self, account: str, *entries: str) -> None:
        """Append entries to the local log of `account` (no push: the index reads local logs too)."""
        empty = subprocess.run(["git", "mktree"], cwd=self.clone, input="", capture_output=True, text=True)
        tip = git_quiet(self.clone, "rev-parse", "-q", "--verify", f"refs/agora/log/{account}").strip() or None
        for entry in entries:
            message = f"agora log: {account}\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {entry}\n"
            tip = forge(self.clone, message, [tip, entry] if tip else [entry], tree=empty.stdout.strip())
        git(self.clone, "update-ref", f"refs/agora/log/{account}", tip)


def git_quiet(clone: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True).stdout


def index_state(clone: Path, now: int) -> tuple[Project, store.IndexRules]:
    project = Project.open(clone)
    return project, _rules(project)


def update(clone: Path, now: int) -> store.UpdateReport:
    project, rules = index_state(clone, now)
    return store.update_index(project.repo, rules, now=now)


def check(clone: Path, now: int) -> list[str]:
    project, rules = index_state(clone, now)
    return store.check_index(project.repo, rules, now=now)


def manifest_of(clone: Path) -> segments.Manifest:
    manifest = segments.read_manifest(index_dir(Project.open(clone).repo))
    assert manifest is not None
    return manifest


def logical(clone: Path) -> pa.Table:
    project, rules = index_state(clone, 0)
    return store.load_index(project.repo, rules, update=False).contributions


@pytest.fixture
def forged(project):
    forger = Forger(project)
    forger.t0 = int(git(project, "log", "-1", "--format=%ct", forger.setup).strip())
    return forger


def test_updates_equal_a_rebuild_through_late_out_of_order_and_future_rows(forged):
    clone, t0 = forged.clone, forged.t0
    now = t0 + 1000
    assert update(clone, now).rebuilt
    for i in range(9):  # one update each: compaction runs along the way
        forged.list("mallory", forged.contribution("mallory", t0 + 10 * (i + 1)))
        assert update(clone, now).new_rows == 1
        assert check(clone, now) == []
    assert len(manifest_of(clone).segments) < 9

    early = forged.contribution("mallory", t0 + 15)  # sorts before six stored rows of its account
    forged.list("mallory", early)
    update(clone, now)
    assert manifest_of(clone).segments[-1].replaces == 8  # mallory's rows after it moved one place
    assert check(clone, now) == []
    seqs = dict(zip(*(logical(clone).column(c).to_pylist() for c in ("sha", "log_seq"))))
    assert seqs[early] == 1

    future = forged.contribution("mallory", now + 3 * DAY)
    carried = forged.contribution("bob", t0 + 500)  # bob's work, listed only by mallory's log so far
    forged.list("mallory", future, carried)
    update(clone, now)
    watch = manifest_of(clone).watch
    assert future in watch.pending and carried in watch.not_listed
    assert check(clone, now) == []

    forged.list("bob", carried)
    update(clone, now)
    assert carried not in manifest_of(clone).watch.not_listed
    assert check(clone, now) == []

    whole = logical(clone)  # a few rows read row group by row group are the same rows, newest versions
    some = [early, carried, future, whole.column("sha")[0].as_py(), "0" * 40]
    columns = ["sha", "timestamp", "log_seq", "title", "valid"]
    rows = store.read_rows(Project.open(clone).repo, ["log_seq", "title", "valid"], some).select(columns)
    expected = whole.filter(pc.is_in(whole.column("sha"), value_set=pa.array(some))).select(columns)
    assert rows.num_rows == 4 and rows.equals(expected)

    later = now + 5 * DAY  # the clock passes the future row: it stops being pending
    update(clone, later)
    assert manifest_of(clone).watch.pending == {}
    assert check(clone, later) == []

    other = forged.second_setup("mallory", t0 - 50)  # an earlier setup: still not this clone's root
    forged.list("mallory", other)
    update(clone, later)
    assert check(clone, later) == []
    table = logical(clone)
    valid = dict(zip(table.column("sha").to_pylist(), table.column("valid").to_pylist()))
    assert valid[forged.setup] and not valid[other]
    assert table.num_rows == len(set(table.column("sha").to_pylist())) == 14


def test_check_names_the_rows_that_differ(forged):
    clone, t0 = forged.clone, forged.t0
    update(clone, t0 + 100)
    forged.list("mallory", forged.contribution("mallory", t0 + 10))
    update(clone, t0 + 100)
    manifest = manifest_of(clone)
    directory = index_dir(Project.open(clone).repo)
    last = manifest.segments[-1]
    table = segments.read_segment(directory, last)
    wrong = table.set_column(table.schema.get_field_index("log_seq"), "log_seq", pa.array([7] * table.num_rows))
    forged_segment = segments.write_segment(directory, manifest.next_id, wrong, segments.read_refs(directory, last), 0)
    bad = replace(manifest, segments=(*manifest.segments[:-1], forged_segment), next_id=manifest.next_id + 1)
    segments.commit(directory, bad)
    differences = check(clone, t0 + 100)
    sha = table.column("sha")[0].as_py()
    assert differences == [f"contributions: {sha} log_seq: 7 in the index, 0 in a rebuild"]


def test_the_refs_read_before_the_lock_stand_unless_another_update_came_between(forged, monkeypatch):
    clone, t0 = forged.clone, forged.t0
    now = t0 + 1000
    update(clone, now)
    project, rules = index_state(clone, now)
    directory = index_dir(project.repo)
    seen = state.read_state(directory)
    forged.list("mallory", forged.contribution("mallory", t0 + 10))
    read_first = store.current_tips(project.repo)  # this update's view: one new row

    forged.list("mallory", forged.contribution("mallory", t0 + 20))
    update(clone, now)  # another update indexes two meanwhile
    assert store.update_index(project.repo, rules, now=now, tips=read_first, seen=seen).new_rows == 0
    assert manifest_of(clone).tips == store.current_tips(project.repo)  # not taken back to `read_first`

    seen = state.read_state(directory)
    forged.list("mallory", forged.contribution("mallory", t0 + 30))
    tips = store.current_tips(project.repo)
    forged.list("mallory", forged.contribution("mallory", t0 + 40))  # after this update read the refs

    def refused(repo):
        raise AssertionError("the refs were read again")

    monkeypatch.setattr(store, "current_tips", refused)
    assert store.update_index(project.repo, rules, now=now, tips=tips, seen=seen).new_rows == 1
    assert manifest_of(clone).tips == tips
    monkeypatch.undo()
    assert update(clone, now).new_rows == 1
    assert check(clone, now) == []


def test_a_remote_log_moved_forward_is_told_in_process_and_a_rewound_one_is_quarantined(forged, monkeypatch):
    clone, t0 = forged.clone, forged.t0
    forged.list("mallory", *(forged.contribution("mallory", t0 + i) for i in range(20)))
    chain = git(clone, "rev-list", "--first-parent", "refs/agora/log/mallory").split()  # newest first
    repo = Project.open(clone).repo
    ref = "refs/agora/remotes/origin/log/mallory"
    asked: list[str] = []
    original = Git.is_ancestor
    monkeypatch.setattr(Git, "is_ancestor", lambda self, a, d: asked.append(a) or original(self, a, d))
    assert quarantine_rewritten_logs(repo, {ref: chain[1]}, {ref: chain[0]}) == [] and asked == []
    assert quarantine_rewritten_logs(repo, {ref: chain[19]}, {ref: chain[0]}) == [] and asked == [chain[19]]
    [kept] = quarantine_rewritten_logs(repo, {ref: chain[0]}, {ref: chain[5]})
    assert kept.old_tip == chain[0] and repo.ref(kept.quarantine_ref) == chain[0]


# --- crashes at every step ------------------------------------------------------------------------

STEPS = ("_mkdir", "_write_parquet", "_fsync", "_replace", "_sync_dir", "_unlink")


def prepared(forged) -> tuple[Path, int, set[str], set[str]]:
    """An index of three small segments, and refs that add two rows (one moves a stored row) in a fourth
    small one: the update also compacts the four."""
    clone, t0 = forged.clone, forged.t0
    now = t0 + 1000
    update(clone, now)
    for i in range(2):
        forged.list("mallory", *(forged.contribution("mallory", t0 + 10 * (3 * i + j + 1)) for j in range(3)))
        update(clone, now)
    assert len(manifest_of(clone).segments) == 3
    before = set(logical(clone).column("sha").to_pylist())
    new = [forged.contribution("mallory", t0 + 55), forged.contribution("mallory", t0 + 95)]
    forged.list("mallory", *new)
    return clone, now, before, before | set(new)


def count_steps(monkeypatch, fail_at: int | None, calls: list[str]) -> None:
    for name in STEPS:
        original = getattr(segments, name)

        def step(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            if len(calls) == fail_at:
                raise OSError(errno.EIO, f"injected failure at {_name}")
            return _original(*args, **kwargs)

        monkeypatch.setattr(segments, name, step)


@pytest.mark.parametrize("inline", [segments.INLINE, 0], ids=["tables-inline", "tables-written"])
def test_a_failure_at_any_write_step_leaves_the_old_or_the_new_index(forged, monkeypatch, tmp_path, inline):
    monkeypatch.setattr(segments, "INLINE", inline)  # 0: every update writes a new side file of tables
    clone, now, before, after = prepared(forged)
    directory = index_dir(Project.open(clone).repo)
    snapshot = tmp_path / "snapshot"
    shutil.copytree(directory, snapshot)
    calls: list[str] = []
    with monkeypatch.context() as m:
        count_steps(m, None, calls)
        update(clone, now)
    steps = len(calls)
    assert calls.count("_write_parquet") == 2  # the update compacted
    assert calls.count("_unlink") == 4 + (inline == 0)  # the old side file too
    for fail_at in range(1, steps + 1):
        shutil.rmtree(directory)
        shutil.copytree(snapshot, directory)
        calls.clear()
        with monkeypatch.context() as m:
            count_steps(m, fail_at, calls)
            try:
                update(clone, now)
            except segments.WriteFailed as exc:
                assert "injected failure" in str(exc)
        shas = logical(clone).column("sha").to_pylist()
        assert len(shas) == len(set(shas)) and set(shas) in (before, after), f"step {fail_at}: {calls[-1]}"
        update(clone, now)
        assert check(clone, now) == [], f"step {fail_at}: {calls[-1]}"
        named = segments.named_files(manifest_of(clone))
        present = {p.name for p in (directory / "segments").iterdir()}
        assert named <= present  # what a failed delete leaves, the next writing update collects
        assert present == named or calls[-1] == "_unlink", f"step {fail_at}: {calls[-1]}"


KILLER = """
import json, os, sys, traceback
from git_agora.index import segments
from git_agora.cli import main

def run(job):
    if job["inline"] is not None:  # the update to kill: count the write steps, end the process at one
        target, calls = job["target"], [0]
        segments.INLINE = job["inline"]
        for name in {steps!r}:
            def step(*args, _original=getattr(segments, name), **kwargs):
                calls[0] += 1
                if calls[0] == target:
                    os._exit(9)
                return _original(*args, **kwargs)
            setattr(segments, name, step)
    try:
        main(job["argv"])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

for line in sys.stdin:  # one command a line, each in a new process forked from this one (imports done once)
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        run(job)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


class Processes:
    """Runs `git agora` commands in the clone, each in its own process, forked from one that imported the
    command once (a fresh interpreter per command would import pyarrow and the package again, twice per
    kill). A process can be ended (`os._exit(9)`) at the `target`-th write step of the index."""

    def __init__(self, clone: Path, log_dir: Path):
        self.log_dir, self.n = log_dir, 0
        script = KILLER.format(steps=STEPS)
        self.server = subprocess.Popen(
            [sys.executable, "-c", script], cwd=clone, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, *argv: str, target: int = 0, inline: int | None = None) -> tuple[int, str]:
        """(exit status, its output) of `git agora ARGV`; killed at write step `target` when `inline` is
        given (the INLINE size that process uses)."""
        self.n += 1
        log = self.log_dir / f"process-{self.n}.log"
        job = {"argv": list(argv), "target": target, "inline": inline, "log": str(log)}
        self.server.stdin.write(json.dumps(job) + "\n")
        self.server.stdin.flush()
        status = self.server.stdout.readline()
        assert status, "the process server ended"
        return int(status), log.read_text(errors="replace")

    def close(self) -> None:
        self.server.stdin.close()
        self.server.wait(timeout=30)


@pytest.mark.parametrize("inline", [segments.INLINE, 0], ids=["tables-inline", "tables-written"])
def test_a_kill_at_any_write_step_never_duplicates_or_loses_a_contribution(forged, tmp_path, monkeypatch, inline):
    monkeypatch.setattr(segments, "INLINE", inline)
    clone, now, before, after = prepared(forged)
    directory = index_dir(Project.open(clone).repo)
    snapshot = tmp_path / "snapshot"
    shutil.copytree(directory, snapshot)
    (tmp_path / "logs").mkdir()
    processes = Processes(clone, tmp_path / "logs")
    killed = 0
    try:
        for target in range(1, 40):
            shutil.rmtree(directory)
            shutil.copytree(snapshot, directory)
            code, output = processes.run("index", target=target, inline=inline)
            if code == 0:
                break
            assert code == 9, output
            killed += 1
            shas = logical(clone).column("sha").to_pylist()  # what the manifest names after the kill
            assert len(shas) == len(set(shas)) and set(shas) in (before, after), f"kill {target}"
            code, output = processes.run("index", "--check")  # the next reader, in a process of its own
            assert code == 0, output
            shas = logical(clone).column("sha").to_pylist()
            assert len(shas) == len(set(shas)) and set(shas) == after
    finally:
        processes.close()
    # every step of the update, compaction included, was killed once; a new side file adds four
    assert killed == 16 + 4 * (inline == 0)


def test_rows_in_a_crowded_second_are_sorted_not_merged(monkeypatch):
    """A publisher can date any number of commits in one second: merging a row among them would read
    them all once per merged row, so past `MERGE_TIES` the run is sorted whole (the same table)."""
    monkeypatch.setattr(segments, "MERGE_TIES", 50)
    big = rows(*[(7, f"{i:04x}", "old") for i in range(200)])
    later = rows((7, "0100x", "new"), (7, "zzzz", "new"))
    assert segments._merged(big, [later], replacing=False) is None
    merged = segments.logical([big, later], [segment(big), segment(later)])
    assert merged.equals(pa.concat_tables([big, later]).sort_by(segments.KEY))
    monkeypatch.setattr(segments, "MERGE_TIES", 10**6)
    assert segments._merged(big, [later], replacing=False).equals(merged)
