"""The parallel rebuild (worker processes, graph rules over columns) equals the serial path row by row,
also when a worker dies."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import hostile
import pytest

from agora_testing import agora, forge, git, make_clone, publish_forged_log
from git_agora.index import compare, discover, listing, packed, parallel, reader, store
from git_agora.ops.indexing import _rules
from git_agora.project import Project
from git_agora.refs.store import Repository

NOW = 1_900_000_000  # after every corpus commit: nothing is pending


@pytest.fixture
def corpus(tmp_path, remote, project):
    """A project with valid work, a verification, 400 hostile commits (bad parents, formats, times) and
    forged logs."""
    setup = agora(project, "whoami", "--json").json()["setup"]
    (project / "model.py").write_text("order = 4\n")
    work = agora(project, "push", "-m", "order 4", "--tag", "result", "--metric", "bpc=1.5", "--json").json()["sha"]
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    agora(b, "post", "-m", "checked", "--tag", "verification", "--target", work, "--verdict", "confirmed")
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    hostile.write(m, setup, 400)
    git(m, "push", "-q", "origin", "refs/agora/log/mallory")
    forge_tree_breaches(m, setup)
    agora(project, "fetch")
    forged_logs(project, work, git(project, "rev-parse", f"{work}^{{tree}}").strip())
    return project


BREACHES = ("the tree holds '.GIT'", "changes agora.toml")


def forge_tree_breaches(clone: Path, setup: str) -> None:
    """Two results published with plain git by `trent`: one whose tree holds a `.git` path, one that
    changes the setup's `agora.toml` (the reasons `BREACHES` names)."""

    def given(*args: str, text: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=clone, input=text, capture_output=True, text=True, check=True
        ).stdout.strip()

    blob = given("hash-object", "-w", "--stdin", text="[core]\n\tbare = false\n")
    dotgit = given("mktree", text=f"100644 blob {blob}\tconfig\n")
    with_dotgit = given("mktree", text=f"040000 tree {dotgit}\t.GIT\n100644 blob {blob}\tx.py\n")
    changed = given(
        "mktree",
        text=git(clone, "ls-tree", setup).replace(git(clone, "rev-parse", f"{setup}:agora.toml").strip(), blob),
    )
    results = [
        forge(
            clone,
            f"{name}\n\nAgora-Format: 1\nAgora-Account: trent\nAgora-Tag: result\nAgora-Metric: bpc=1\n",
            [setup],
            tree,
        )
        for name, tree in (("dotgit", with_dotgit), ("config", changed))
    ]
    publish_forged_log(clone, "trent", results)


def test_tree_breaches_are_found_in_bulk(corpus, tmp_path, monkeypatch):
    """A rebuild through worker processes checks trees aside (the `.git` check in a process, the policy's
    files on a thread) and gives both reasons."""
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    rows = rebuilt(corpus, tmp_path / "bulk")[1].select(["account", "reasons"]).to_pylist()
    reasons = " ".join(r for row in rows if row["account"] == "trent" for r in row["reasons"])
    assert all(breach in reasons for breach in BREACHES), reasons


def rebuilt(clone: Path, tmp: Path):
    p = Project.open(clone)
    store.update_index(p.repo, _rules(p), rebuild=True, directory=tmp, now=NOW)
    return store._read(tmp, None)


def assert_same(serial, parallel_) -> None:
    assert compare.differences("contributions", serial[1], parallel_[1]) == []
    assert compare.differences("cross_refs", serial[2], parallel_[2]) == []
    assert serial[1].equals(parallel_[1]) and serial[2].equals(parallel_[2])
    assert serial[0].tips == parallel_[0].tips and serial[0].accounts == parallel_[0].accounts


@pytest.mark.parametrize("date_order_from", [0, 10**9], ids=["date-order walk", "default-order walk"])
def test_the_parallel_rebuild_equals_the_serial_one(corpus, tmp_path, monkeypatch, date_order_from):
    """Git walks a large project in date order, a smaller one in its default order (`reader.walk_blocks`):
    the rows are the same."""
    git(corpus, "commit-graph", "write", "--reachable")
    monkeypatch.setattr(packed, "blocks", lambda *args: None)  # git walks (`test_the_packs_give_the_same_rows`)
    monkeypatch.setattr(reader, "DATE_ORDER_FROM", date_order_from)
    orders = []
    blocks = reader._blocks
    monkeypatch.setattr(reader, "_blocks", lambda command, *rest: orders.append(command) or blocks(command, *rest))
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    serial = rebuilt(corpus, tmp_path / "serial")
    assert serial[1].num_rows > 400 and not all(serial[1].column("valid").to_pylist())
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    monkeypatch.setattr(parallel, "BLOCK", 3000)  # many blocks, finishing in any order
    monkeypatch.setattr(parallel, "workers", lambda: 3)
    assert_same(serial, rebuilt(corpus, tmp_path / "parallel"))
    assert orders[-1] == (["log", "--date-order"] if date_order_from == 0 else ["log"])


@pytest.mark.parametrize("gc", [False, True], ids=["packs as pushed", "after git gc --aggressive"])
def test_the_packs_give_the_same_rows(corpus, tmp_path, monkeypatch, gc):
    """A rebuild that reads its commits from the packs (`packed.blocks`: the hostile corpus, its commits in
    packs and loose, some outside the commit-graph, or all repacked as deltas) has git's rows."""
    git(corpus, "commit-graph", "write", "--reachable")
    agora(corpus, "post", "-m", "after the graph", "--tag", "insight")  # loose, outside the commit-graph
    if gc:
        git(corpus, "gc", "-q", "--aggressive")
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    read = packed.blocks
    monkeypatch.setattr(packed, "blocks", lambda *args: None)
    by_git = rebuilt(corpus, tmp_path / "git")
    used: list[bool] = []
    monkeypatch.setattr(packed, "blocks", lambda *args: (found := read(*args), used.append(found is not None))[0])
    assert_same(by_git, rebuilt(corpus, tmp_path / "packs"))
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    monkeypatch.setattr(parallel, "BLOCK", 3000)
    assert_same(by_git, rebuilt(corpus, tmp_path / "packs, in workers"))
    assert used == [True, True] and by_git[1].num_rows > 400


def test_a_worker_that_dies_loses_no_row(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    serial = rebuilt(corpus, tmp_path / "serial")
    main, original = os.getpid(), parallel.parse_block

    def dying(block, primary_metric, now):
        if os.getpid() != main:
            os._exit(3)  # a worker killed midway (out of memory, a signal)
        return original(block, primary_metric, now)

    pools, make_pool = [], parallel._pool
    monkeypatch.setattr(parallel, "_pool", lambda count: pools.append(make_pool(count)) or pools[-1])
    monkeypatch.setattr(parallel, "parse_block", dying)
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    monkeypatch.setattr(parallel, "BLOCK", 4000)
    assert_same(serial, rebuilt(corpus, tmp_path / "parallel"))
    assert len(pools) == 1  # the workers were started, died, and their chunks were parsed here


MAIN = os.getpid()


def _dies_elsewhere(value: int) -> int:
    if os.getpid() != MAIN:
        os._exit(3)  # the process aside killed midway (out of memory, a signal)
    return value * 2


def test_work_aside_runs_in_another_process_and_says_what_went_wrong():
    assert parallel.Aside(os.getpid).result() != os.getpid()
    assert parallel.Aside(sorted, [3, 1, 2]).result() == [1, 2, 3]
    with pytest.raises(ValueError):
        parallel.Aside(int, "not a number").result()
    lock = parallel.Aside(threading.Lock).result()  # no pickle crosses processes: made again here
    assert lock.acquire(blocking=False)


def test_work_aside_whose_process_dies_is_done_here(monkeypatch):
    assert parallel.Aside(_dies_elsewhere, 21).result() == 42
    monkeypatch.setattr(parallel, "_forked", lambda *args: (_ for _ in ()).throw(OSError("no processes")))
    assert parallel.Aside(_dies_elsewhere, 4).result() == 8


def test_an_update_after_a_parallel_rebuild_equals_a_rebuild(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    monkeypatch.setattr(parallel, "BLOCK", 5000)
    p = Project.open(corpus)
    store.update_index(p.repo, _rules(p), rebuild=True, now=NOW)
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    agora(corpus, "post", "-m", "later", "--tag", "insight")
    assert store.check_index(Repository.discover(corpus), _rules(Project.open(corpus)), now=NOW) == []


def test_a_large_update_through_the_workers_equals_a_rebuild(corpus, tmp_path, monkeypatch):
    """An update above the threshold takes the parallel path with stored rows: parents, verified targets
    and policies found among the known commits, not the batch."""
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    p = Project.open(corpus)
    store.update_index(p.repo, _rules(p), rebuild=True, now=NOW)
    me = git(corpus, "config", "agora.account").strip()
    work = next(c["sha"] for c in agora(corpus, "log", "--json").json() if c["account"] != me)  # not one's own
    agora(corpus, "post", "-m", "on top", "--tag", "insight")
    agora(corpus, "post", "-m", "checked", "--tag", "verification", "--target", work, "--verdict", "partial")
    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    monkeypatch.setattr(parallel, "BLOCK", 300)

    def too_many(*args, **kwargs):
        raise discover.TooMany  # as when most of the project is new: a `git log` walk

    seen, graph_rows = [], parallel.graph_rows

    def watched(work, known, *args):
        seen.append(known)
        return graph_rows(work, known, *args)

    monkeypatch.setattr(discover, "new_commits", too_many)
    monkeypatch.setattr(parallel, "graph_rows", watched)
    report = store.update_index(p.repo, _rules(Project.open(corpus)), now=NOW)
    assert report.new_rows >= 2 and not report.rebuilt
    assert seen and work in seen[0]  # the verified target is a stored row
    monkeypatch.setattr(parallel, "THRESHOLD", 10**9)
    assert store.check_index(Repository.discover(corpus), _rules(Project.open(corpus)), now=NOW) == []


def forged_logs(clone: Path, entry: str, tree: str) -> None:
    """Log refs whose commits are not log commits as git-agora writes them; git's trailer parser decides
    what each lists (the key in another case, two entries, a non-hex entry, a trailer after the entry,
    the key in the title, a chain that runs into another account's log)."""
    block = f"Agora-Log-Format: 1\nAgora-Log-Entry: {entry}\n"
    bodies = {
        "lower": f"agora log: lower\n\nagora-log-format: 1\nagora-log-entry: {entry}\n",
        "twice": f"agora log: twice\n\n{block}Agora-Log-Entry: {entry}\n",
        "nonhex": f"agora log: nonhex\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {'z' * 40}\n",
        "upper": f"agora log: upper\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {entry.upper()}\n",
        "signed": f"agora log: signed\n\n{block}Signed-off-by: m <m>\n",
        "title": f"Agora-Log-Entry: {entry}\n\n{block}",
        "no-title": f"\n{block}",
    }
    tips = git(clone, "for-each-ref", "--format=%(objectname)", "refs/agora/").split()
    for n, (name, body) in enumerate(bodies.items()):
        parent = tips[n % len(tips)]  # onto other logs: their chains continue through these
        sha = hostile.literal_commit(clone, tree, parent, str(1_800_000_000 + n), body.encode())
        git(clone, "update-ref", f"refs/agora/log/{name}", sha)


def test_the_listing_read_from_the_walk_equals_git_s(corpus, monkeypatch):
    repo = Repository.discover(corpus)
    tips = store.current_tips(repo)
    by_git = listing.new_entries(repo.common_path, {}, tips)
    asked = []
    chain_entries = listing._chain_entries
    monkeypatch.setattr(listing, "_chain_entries", lambda *a: asked.append(a[1]) or chain_entries(*a))
    blocks = reader.walk_blocks(repo.common_path, sorted(set(tips.values())), [], 999)
    links = listing.log_links([r for block in blocks for r in reader.records(block)])
    assert dict(listing.entries_from_walk(repo.common_path, tips, links)) == by_git
    assert len(by_git) > 400 and any(len(accounts) > 1 for accounts in by_git.values())
    assert 0 < len(asked) < len(tips)  # the logs as written need no git process


def test_freed_memory_is_handed_back():
    """Where the C library can (glibc), memory freed below a live allocation leaves the process when a
    rebuild's phase ends, instead of counting in the next phase's peak."""
    if parallel._malloc_trim() is None:
        pytest.skip("no malloc_trim in this C library")

    def resident_mb() -> float:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    pairs = [(bytearray(60_000), bytearray(1_000)) for _ in range(4000)]  # 240 MB, below the mmap threshold
    kept = [small for _, small in pairs]  # between the large ones: the heap's top cannot shrink when they go
    del pairs
    before = resident_mb()
    parallel.hand_back_freed_memory()
    assert resident_mb() < before - 150
    del kept
