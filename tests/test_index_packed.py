"""A rebuild's commits read from the packs (`index.packed`, `index.graphfile`) are exactly what `git log`
prints, record for record, whatever the commits hold and wherever git stored them; a store git reads
otherwise is left to git."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from git_agora.index import graphfile, listing, packed, packfiles, parallel, reader

AUTHOR = b"author Ann <ann@x> 1700000000 +0000\n"
COMMITTER = b"committer Ann <ann@x> 1700000000 +0000\n"


def git(git_dir: Path, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(["git", "--git-dir", str(git_dir), *args], input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def commit(git_dir: Path, body: bytes) -> str:
    return git(git_dir, "hash-object", "--literally", "-w", "-t", "commit", "--stdin", data=body)


def crafted(tree: str, parent: str) -> dict[str, tuple[bytes, bool]]:
    """name -> (a raw commit on `parent`, whether `packed.record` reads it itself). Not among them: a
    commit with no blank line after its header, for which git 2.39 prints bytes from beyond the commit
    (they differ from one run to the next); `record` leaves it to git."""
    head = f"tree {tree}\nparent {parent}\n".encode()

    def ident(author: bytes = AUTHOR, committer: bytes = COMMITTER) -> bytes:
        return head + author + committer

    return {
        "plain": (ident() + b"\nsubject\n\nbody\n\nAgora-Tag: x\n", True),
        "utf-8 declared": (ident() + b"encoding UTF-8\n\nmsg \xc3\xa9\n", True),
        "latin-1 declared": (ident() + b"encoding ISO-8859-1\n\ncaf\xe9\n", False),  # git re-encodes it
        "signed": (
            ident() + b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n\ns\n",
            True,
        ),
        "root": (f"tree {tree}\n".encode() + AUTHOR + COMMITTER + b"\nroot\n", True),
        "name with trailing spaces": (ident(b"author x   <e> 1 +0000\n") + b"\nm\n", False),
        "empty name": (ident(b"author <e> 1 +0000\n") + b"\nm\n", False),
        "no space before <": (ident(b"author x<e> 1 +0000\n") + b"\nm\n", False),
        "name with a leading space": (ident(b"author  x <e> 1 +0000\n") + b"\nm\n", False),
        "name ending with a tab": (ident(b"author x\t <e> 1 +0000\n") + b"\nm\n", False),
        "a tab inside the name": (ident(b"author a\tb <e> 1 +0000\n") + b"\nm\n", True),
        "> in the name": (ident(b"author x> <e> 1 +0000\n") + b"\nm\n", False),
        "space in the email": (ident(b"author x <e f> 1 +0000\n") + b"\nm\n", True),
        "leading zeros in the time": (ident(committer=b"committer c <e> 0001700000000 +0000\n") + b"\nm\n", True),
        "huge time": (ident(committer=b"committer c <e> 99999999999999999999999 +0000\n") + b"\nm\n", True),
        "negative time": (ident(committer=b"committer c <e> -5 +0000\n") + b"\nm\n", False),
        "no time zone": (ident(committer=b"committer c <e> 1700000000\n") + b"\nm\n", False),
        "no committer": (head + AUTHOR + b"\nm\n", False),
        "two authors": (ident() + b"author Bob <b> 2 +0000\n" + b"\nm\n", False),
        "unknown header": (ident() + b"x-foo bar\n\nm\n", False),
        "NUL in the message": (ident() + b"\nm\x00more\n", False),
        "empty message": (ident() + b"\n", True),
        "CRLF message": (ident() + b"\nline\r\n\r\nbody\r\n", True),
        "message after blank lines": (ident() + b"\n\n\nm\n", True),
        "a 3 MB message": (ident() + b"\nlong\n\n" + b"Agora-Meta: " + b"x" * (3 << 20) + b"\n", True),
        "log commit": (ident() + log_message(b"ann", parent), True),
        "root log commit": (f"tree {tree}\n".encode() + AUTHOR + COMMITTER + log_message(b"ann", parent), True),
        "log commit naming the key in its title": (ident() + log_message(b"ann Agora-Log-Entry", parent), True),
        "log commit whose signature names the key": (
            ident()
            + b"gpgsig -----BEGIN SSH SIGNATURE-----\n Agora-Log-Entry\n -----END SSH SIGNATURE-----\n"
            + log_message(b"ann", parent),
            True,
        ),
        "log commit whose author names the key": (
            ident(b"author agora-log-entry <e> 1 +0000\n") + log_message(b"ann", parent),
            True,
        ),
        "log commit with a line more": (ident() + log_message(b"ann", parent) + b"more\n", True),
        "log commit with the key in lower case": (ident() + log_message(b"ann", parent).lower(), True),
        "log commit naming its parent three times": (
            head + f"parent {parent}\nparent {parent}\n".encode() + AUTHOR + COMMITTER + log_message(b"ann", parent),
            True,
        ),
        "log commit declaring UTF-8": (ident() + b"encoding utf8\n" + log_message(b"ann", parent), True),
        "log commit in CRLF": (ident() + b"\n" + log_message(b"ann", parent)[1:].replace(b"\n", b"\r\n"), True),
        "log commit naming its entry in capitals": (ident() + log_message(b"ann", parent.upper()), True),
        "log commit naming two entries": (
            ident() + log_message(b"ann", parent) + b"Agora-Log-Entry: %s\n" % parent.encode(),
            True,
        ),
        "log commit with a short entry": (ident() + log_message(b"ann", parent[:39]), True),
        "log commit without its blank line": (ident() + log_message(b"ann", parent).replace(b"\n\n", b"\n", 1), True),
        "log commit whose title runs on": (
            ident() + log_message(b"ann\rAgora-Log-Entry: " + parent.encode(), parent),
            True,
        ),
    }


READ_AS_LINKS = {  # of `crafted`: the log commits a pack slice reads as their links, not as records
    "log commit",
    "root log commit",
    "log commit naming the key in its title",
    "log commit whose signature names the key",
    "log commit naming its parent three times",
    "log commit declaring UTF-8",
    "log commit whose title runs on",
}


def log_message(account: bytes, entry: str) -> bytes:
    return b"\nagora log: %s\n\nAgora-Log-Format: 1\nAgora-Log-Entry: %s\n" % (account, entry.encode())


def printed_by_git(git_dir: Path, tips: list[str]) -> set[bytes]:
    """The records of `git log` (the walk a rebuild makes without this module)."""
    return {r for block in reader.walk_blocks(git_dir, tips, []) for r in reader.records(block)}


def read_here(git_dir: Path, tips: list[str], monkeypatch) -> tuple[set[bytes], list[str]]:
    """The records `packed.blocks` gives, and the shas it left to git. A log commit read as its link
    (`packed.log_link`) counts as the record git prints for it, once that record is shown to give the
    same link (`listing.log_links`) and to be a log commit's (`reader.is_transport`)."""
    to_git: list[str] = []
    by_git = reader.printed_by_git
    monkeypatch.setattr(reader, "printed_by_git", lambda d, shas, size: to_git.extend(shas) or by_git(d, shas, size))
    found = packed.blocks(git_dir, tips, 4096)
    assert found is not None
    links: list[pa.Table] = []
    records = {r for block in read_out(found, links) for r in reader.records(block)}
    read_as_links = pa.concat_tables([listing.LINKS.empty_table(), *links])
    shas = read_as_links.column("sha").to_pylist()
    printed = [r for block in by_git(git_dir, shas, 4096) for r in reader.records(block)]
    assert all(reader.is_transport(r) for r in printed)
    assert by_sha(listing.log_links(printed)) == by_sha(read_as_links)
    return records | set(printed), to_git


def by_sha(links: pa.Table) -> dict[str, tuple[str | None, str | None]]:
    return {row["sha"]: (row["parent"], row["entry"]) for row in links.to_pylist()}


def read_out(tasks: Iterator[bytes | packed.PackSlice], links: list[pa.Table] | None = None) -> Iterator[bytes]:
    """The blocks of records the tasks give, each pack slice read here and the commits it leaves printed
    by git (as `parallel.parse_all` does); the links of the log commits read as links into `links`."""
    for task in tasks:
        if isinstance(task, bytes):
            yield task
            continue
        block, read, unread = task.read()
        if links is not None:
            links.append(listing.links_table(read.shas, read.parents, read.entries))
        if block:
            yield block
        yield from reader.printed_by_git(task.git_dir, unread, 4096)


@pytest.fixture
def store(tmp_path) -> tuple[Path, dict[str, tuple[str, bool]], list[str]]:
    """A bare repository whose commits lie in two packs, loose, in a split commit-graph of two layers and
    outside it, some of them stored as deltas: (git dir, name -> (sha, read here), tips)."""
    repo = tmp_path / "store.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    tree = git(repo, "hash-object", "-w", "-t", "tree", "--stdin", data=b"")
    base = commit(repo, f"tree {tree}\n".encode() + AUTHOR + COMMITTER + b"\nbase\n")
    cases = list(crafted(tree, base).items())
    made: dict[str, tuple[str, bool]] = {}
    stages = [cases[::3], cases[1::3], cases[2::3]]
    for stage, group in enumerate(stages):
        for name, (body, here) in group:
            made[name] = (commit(repo, body), here)
            git(repo, "update-ref", f"refs/agora/c/{len(made)}", made[name][0])
        if stage == 0:
            git(repo, "repack", "-a", "-d", "-q")
        if stage < 2:
            git(repo, "commit-graph", "write", "--reachable", "--split=no-merge")
        if stage == 1:
            git(repo, "repack", "-d", "-q")  # the loose objects into a second pack
    # an octopus merge of three and a chain of commits with long similar messages (stored as deltas)
    tips = [sha for sha, _ in made.values()]
    octopus = commit(
        repo,
        f"tree {tree}\n".encode()
        + b"".join(b"parent %s\n" % t.encode() for t in tips[:3])
        + AUTHOR
        + COMMITTER
        + b"\noctopus\n",
    )
    made["octopus"] = (octopus, True)
    chain = octopus
    for i in range(40):
        text = b"".join(b"Agora-Meta: line %d of a long and repeated message\n" % k for k in range(60))
        chain = commit(
            repo, f"tree {tree}\nparent {chain}\n".encode() + AUTHOR + COMMITTER + b"\nlong %d\n\n" % i + text
        )
    git(repo, "update-ref", "refs/agora/chain", chain)
    git(repo, "repack", "-a", "-d", "-f", "-q", "--window=50", "--depth=20")
    git(repo, "commit-graph", "write", "--reachable", "--split=no-merge")
    late = commit(repo, f"tree {tree}\nparent {chain}\n".encode() + AUTHOR + COMMITTER + b"\nafter the graph\n")
    git(repo, "update-ref", "refs/agora/late", late)  # loose, outside the commit-graph
    made["late"] = (late, True)
    return repo, made, git(repo, "for-each-ref", "--format=%(objectname)", "refs/agora").split()


def test_the_pack_reader_prints_what_git_log_prints(store, monkeypatch):
    repo, made, tips = store
    assert len(list((repo / "objects" / "info" / "commit-graphs").glob("*.graph"))) >= 2
    deltas = {
        line.split()[0]
        for line in git(
            repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(deltabase)"
        ).splitlines()
        if not line.endswith("0" * 40)
    }
    here, to_git = read_here(repo, tips, monkeypatch)
    assert here == printed_by_git(repo, tips)
    assert len(here) == 1 + len(made) + 40  # every reachable commit once: the base and the chain too
    assert sum(sha in deltas for sha, _ in made.values()) > 10  # most stored as deltas, applied here
    for name, (sha, read_here_) in made.items():
        assert (sha not in to_git) == read_here_, name
    assert len(to_git) == sum(not read_here_ for _, read_here_ in made.values())


def test_log_commits_as_written_are_read_as_their_links(store):
    """The log commits of the plain form whose message is exactly as written become links, never
    records (`read_here` holds each link to the one `listing.log_links` reads from git's record); the
    others are records, or git's."""
    repo, made, tips = store
    found = packed.blocks(repo, tips, 4096)
    assert found is not None
    links: list[pa.Table] = []
    records = [r for block in read_out(found, links) for r in reader.records(block)]
    as_links = set(pa.concat_tables(links).column("sha").to_pylist())
    assert as_links == {made[name][0] for name in READ_AS_LINKS}
    assert not as_links & {r[:40].decode() for r in records}
    entries = by_sha(pa.concat_tables(links))
    assert entries[made["log commit"][0]][1] == entries[made["log commit whose signature names the key"][0]][1]
    assert entries[made["log commit naming the key in its title"][0]][1] is None  # named twice: git reads none
    assert entries[made["log commit whose title runs on"][0]][1] is None
    assert (
        entries[made["log commit declaring UTF-8"][0]] == entries[made["log commit naming its parent three times"][0]]
    )


def test_a_record_is_the_one_git_prints_or_none(store):
    """Each crafted commit alone: `record` gives git's bytes exactly, or None (then git prints it)."""
    repo, made, _ = store
    for name, (sha, read_here_) in made.items():
        raw = subprocess.run(["git", "--git-dir", str(repo), "cat-file", "commit", sha], capture_output=True).stdout
        line = packed.record(sha.encode(), raw)
        assert (line is not None) == read_here_, name
        if line is not None:
            assert {line} == printed_by_git_no_walk(repo, sha), name


def printed_by_git_no_walk(repo: Path, sha: str) -> set[bytes]:
    return {r for block in reader.printed_by_git(repo, [sha]) for r in reader.records(block)}


def test_only_the_commits_the_tips_reach(store, monkeypatch):
    repo, made, _ = store
    tips = [made["plain"][0], made["signed"][0]]
    here, _ = read_here(repo, tips, monkeypatch)
    assert here == printed_by_git(repo, tips) and len(here) == 3  # with their parent


@pytest.mark.parametrize(
    "change",
    ["replace ref", "grafts", "shallow", "log output encoding", "commit encoding", "no commit-graph", "v1 index"],
)
def test_a_store_git_reads_otherwise_is_left_to_git(store, change):
    repo, made, tips = store
    if change == "replace ref":
        git(repo, "update-ref", f"refs/replace/{made['plain'][0]}", made["root"][0])
    elif change == "grafts":
        (repo / "info").mkdir(exist_ok=True)
        (repo / "info" / "grafts").write_text(f"{made['plain'][0]}\n")
    elif change == "shallow":
        (repo / "shallow").write_text(f"{made['plain'][0]}\n")
    elif change == "log output encoding":
        git(repo, "config", "i18n.logOutputEncoding", "ISO-8859-1")
    elif change == "commit encoding":
        git(repo, "config", "i18n.commitEncoding", "ISO-8859-1")
    elif change == "no commit-graph":
        for path in (repo / "objects" / "info" / "commit-graphs").iterdir():
            path.unlink()
    else:
        index = next((repo / "objects" / "pack").glob("*.idx"))
        index.chmod(0o644)
        index.write_bytes(b"\0" * 1100)  # not a version-2 index: git's fallback reads what it can
    assert packed.blocks(repo, tips, 4096) is None


def test_utf8_settings_keep_the_pack_reader(store, monkeypatch):
    repo, _, tips = store
    git(repo, "config", "i18n.logOutputEncoding", "utf8")
    assert read_here(repo, tips, monkeypatch)[0] == printed_by_git(repo, tips)


def test_alternates_are_read(store, tmp_path, monkeypatch):
    """A clone that borrows the store's objects (`objects/info/alternates`) and has its own."""
    repo, made, _ = store
    borrower = tmp_path / "borrower.git"
    subprocess.run(["git", "init", "-q", "--bare", str(borrower)], check=True)
    (borrower / "objects" / "info" / "alternates").write_text(str(repo / "objects") + "\n")
    tree = git(repo, "rev-parse", f"{made['plain'][0]}^{{tree}}")
    own = commit(borrower, f"tree {tree}\nparent {made['late'][0]}\n".encode() + AUTHOR + COMMITTER + b"\nown\n")
    git(borrower, "update-ref", "refs/agora/own", own)
    git(borrower, "repack", "-d", "-q")  # its own pack, beside the store's
    git(borrower, "commit-graph", "write", "--reachable")
    tips = [own, made["octopus"][0]]
    here, _ = read_here(borrower, tips, monkeypatch)
    assert here == printed_by_git(borrower, tips) and len(here) > 40


@pytest.mark.parametrize("steps", [1, 4096], ids=["deep walk", "frontier walk"])
def test_reach_is_what_rev_list_walks(store, monkeypatch, steps):
    """From any tips, the commits the graph reaches, octopus parents included (its extra-edges chunk),
    equal `git rev-list`'s, by frontiers or one commit at a time."""
    repo, made, _ = store
    monkeypatch.setattr(graphfile, "FRONTIER_STEPS", steps)
    graph = graphfile.CommitGraph.load(repo / "objects")
    assert graph is not None and graph.more  # the octopus merge is in the graph
    for tips in ([made["octopus"][0]], [made["plain"][0], made["signed"][0]], graph.oids[-1:]):
        shas = [t if isinstance(t, str) else bytes(t).hex() for t in tips]
        starts, outside = graph.positions(shas)
        assert outside == []
        reached = {bytes(oid).hex() for oid in graph.oids[graph.reach(starts)]}
        assert reached == set(git(repo, "rev-list", *shas).split())


def test_a_damaged_commit_graph_is_left_to_git(store):
    repo, _, tips = store
    layer = sorted((repo / "objects" / "info" / "commit-graphs").glob("*.graph"))[0]
    data = bytearray(layer.read_bytes())
    layer.chmod(0o644)
    layer.write_bytes(bytes(data[: len(data) // 2]))  # cut short
    assert graphfile.CommitGraph.load(repo / "objects") is None
    assert packed.blocks(repo, tips, 4096) is None


def test_lookups_with_a_shared_prefix():
    """Two oids that share their first 8 bytes are both found (a graph and a pack look up by that prefix)."""
    oids = np.zeros((3, 20), np.uint8)
    oids[1, 19], oids[2, 0] = 1, 1
    keys = graphfile.prefixes(oids)
    pack = packfiles.Pack(Path("x.pack"), oids, keys, np.arange(3))
    assert pack.find(oids[[1, 0, 2]]).tolist() == [1, 0, 2]
    missing = np.zeros((1, 20), np.uint8)
    missing[0, 19] = 7
    assert pack.find(missing).tolist() == [-1]
    graph = graphfile.CommitGraph(oids, np.full(3, -1), np.full(3, -1), {}, [(0, keys)])
    assert graph.find(oids[[1, 0, 2]]).tolist() == [1, 0, 2] and graph.find(missing).tolist() == [-1]


def test_a_pack_repacked_away_meanwhile_is_read_by_git(store, monkeypatch):
    """`git gc` between the plan and the reading removes the pack the plan named: its commits come from
    git, which finds them in the new pack; none is lost or doubled."""
    repo, _, tips = store
    to_git: list[str] = []
    by_git = reader.printed_by_git
    monkeypatch.setattr(reader, "printed_by_git", lambda d, shas, size: to_git.extend(shas) or by_git(d, shas, size))
    planned = packed.blocks(repo, tips, 4096)
    assert planned is not None
    git(repo, "repack", "-a", "-d", "-q")
    records = [r for block in read_out(planned) for r in reader.records(block)]
    assert len(records) == len(set(records)) and set(records) == printed_by_git(repo, tips)
    assert len(to_git) > 40


def test_stacked_diamonds_are_walked_once():
    """Each commit enters the frontier once: 60 diamonds stacked (two equal paths each) would otherwise
    carry 2**60 copies of the bottom commit."""
    levels = 60
    count = 3 * levels + 1  # per level: a merge (position 3k) of two sides (3k+1, 3k+2), both on 3k+3
    first, second = np.full(count, -1), np.full(count, -1)
    for k in range(levels):
        first[3 * k], second[3 * k] = 3 * k + 1, 3 * k + 2
        first[3 * k + 1] = first[3 * k + 2] = 3 * k + 3
    oids = np.zeros((count, 20), np.uint8)
    oids[:, 16:] = np.arange(count, dtype=">u4").view(np.uint8).reshape(count, 4)
    graph = graphfile.CommitGraph(oids, first, second, {}, [(0, graphfile.prefixes(oids))])
    assert graph.reach(np.array([0])).all()
    assert graph.reach(np.array([3 * levels - 2])).sum() == 2  # a side and the bottom


def test_deltas_are_applied_with_no_base_kept(store, monkeypatch):
    """The bases kept for deltas are bounded in bytes: with none kept, every chain is read again from its
    start, and the records are still git's."""
    repo, _, tips = store
    monkeypatch.setattr(packfiles, "_BASES_BYTES", 0)
    here, to_git = read_here(repo, tips, monkeypatch)
    assert here == printed_by_git(repo, tips) and len(to_git) < len(here) // 2


def test_a_commit_graph_far_behind_is_left_to_git(store, monkeypatch):
    """Commits outside the commit-graph are followed one by one only up to `OUTSIDE_MOST`; past it (the
    graph left far behind) git walks."""
    repo, _, tips = store
    monkeypatch.setattr(packed, "OUTSIDE_MOST", 1)  # `late` alone is outside the graph: followed
    assert packed.blocks(repo, tips, 4096) is not None
    git(repo, "update-ref", "refs/agora/later", commit(repo, later(repo)))  # a second one: git walks
    assert packed.blocks(repo, [*tips, git(repo, "rev-parse", "refs/agora/later")], 4096) is None


def later(repo: Path) -> bytes:
    late = git(repo, "rev-parse", "refs/agora/late")
    tree = git(repo, "rev-parse", f"{late}^{{tree}}")
    return f"tree {tree}\nparent {late}\n".encode() + AUTHOR + COMMITTER + b"\nlater still\n"


def packed_with_loose_copies(tmp_path: Path, graphed: int) -> tuple[Path, str, Path]:
    """A chain of commits similar enough to be stored as deltas, all in one pack and loose again (git
    reads a loose copy when a packed one fails), the first `graphed` in the commit-graph: (git dir, tip,
    pack)."""
    repo = tmp_path / "damaged.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    tree = git(repo, "hash-object", "-w", "-t", "tree", "--stdin", data=b"")
    tip = commit(repo, f"tree {tree}\n".encode() + AUTHOR + COMMITTER + b"\nbase\n")
    for i in range(60):
        if i == graphed:
            git(repo, "update-ref", "refs/agora/x", tip)
            git(repo, "commit-graph", "write", "--reachable")
        text = b"".join(b"Agora-Meta: line %d of a long message\n" % k for k in range(30))
        tip = commit(repo, f"tree {tree}\nparent {tip}\n".encode() + AUTHOR + COMMITTER + b"\nm %d\n\n" % i + text)
    git(repo, "update-ref", "refs/agora/x", tip)
    loose = {p.relative_to(repo / "objects"): p.read_bytes() for p in (repo / "objects").glob("[0-9a-f][0-9a-f]/*")}
    git(repo, "repack", "-a", "-d", "-f", "-q", "--window=50")
    if graphed >= 60:
        git(repo, "commit-graph", "write", "--reachable")
    for name, body in loose.items():
        (repo / "objects" / name).parent.mkdir(exist_ok=True)
        (repo / "objects" / name).write_bytes(body)
    pack = next((repo / "objects" / "pack").glob("*.pack"))
    pack.chmod(0o644)
    return repo, tip, pack


def test_a_damaged_pack_is_read_by_git_from_another_copy(tmp_path, monkeypatch):
    """Commits whose packed copy is damaged (a flipped byte in their zlib stream, in a delta's offset) are
    left to git, which reads the intact loose copy: the records are still git's, none made up here."""
    repo, tip, pack = packed_with_loose_copies(tmp_path, graphed=60)
    expected = printed_by_git(repo, [tip])
    data = bytearray(pack.read_bytes())
    for at in range(200, len(data) - 20, 397):  # bytes all over the pack: streams, headers, delta offsets
        data[at] ^= 0x5A
    pack.write_bytes(data)
    here, to_git = read_here(repo, [tip], monkeypatch)
    assert here == expected and to_git


def test_a_damaged_commit_outside_the_commit_graph_leaves_the_walk_to_git(tmp_path, monkeypatch):
    """The commits newer than the commit-graph are read while planning: a packed one whose header runs
    off the end of the pack (every byte from its start set) sends the whole walk to git, no exception."""
    repo, tip, pack = packed_with_loose_copies(tmp_path, graphed=50)
    expected = printed_by_git(repo, [tip])
    index = packfiles.read_pack(pack.with_suffix(".idx"))
    assert index is not None
    at = int(index.offsets[packfiles.Pack.find(index, np.frombuffer(bytes.fromhex(tip), np.uint8).reshape(1, 20))[0]])
    data = bytearray(pack.read_bytes())
    data[at:] = b"\xff" * (len(data) - at)
    pack.write_bytes(data)
    assert packed.blocks(repo, [tip], 4096) is None
    assert printed_by_git(repo, [tip]) == expected


def test_a_delta_that_outgrows_its_stated_size_is_refused_early():
    """A damaged delta's copies are refused once they pass the size it states, before they are built:
    20,000 copies of a 64 KB base would be 1.3 GB."""
    import tracemalloc

    base = bytes(range(256)) * 256
    copy_all = bytes([0x80 | 0x10 | 0x20, 0x00, 0x00])  # copy 0x10000 bytes from offset 0 (size bytes 0 -> 64 KB)
    delta = bytes([0x80, 0x80, 0x04]) + bytes([100]) + copy_all * 20_000  # base 65536, result 100 bytes
    tracemalloc.start()
    try:
        assert packfiles.patched(base, delta) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    ok = bytes([0x80, 0x80, 0x04, 0x04, 0x80 | 0x01 | 0x10, 0x10, 0x04])  # 4 bytes from offset 16
    assert packfiles.patched(base, ok) == base[16:20]


def test_what_pack_slices_leave_to_git_is_parsed_after_them_in_workers_or_here(store, monkeypatch):
    """A rebuild's workers read the packs; the commits a slice leaves to git (stored as deltas against a
    sha, an unusual header) are printed by git once the slices are parsed, and parsed like the others."""
    repo, _, tips = store

    def parsed(tasks, in_workers: bool) -> tuple[pa.Table, pa.Table]:
        return parallel.parse_all(tasks, None, 1_900_000_000, lambda links: links.sort_by("sha"), in_workers=in_workers)

    by_git = parsed(reader.walk_blocks(repo, tips, [], 4096), in_workers=False)
    to_git: list[str] = []
    printer = reader.printed_by_git
    monkeypatch.setattr(reader, "printed_by_git", lambda d, shas, size: to_git.extend(shas) or printer(d, shas, size))
    monkeypatch.setattr(packed, "SLICE_COMMITS", 7)
    for in_workers in (False, True):
        tasks = packed.blocks(repo, tips, 4096)
        assert tasks is not None
        rows, links = parsed(tasks, in_workers)
        assert rows.equals(by_git[0]) and links.equals(by_git[1])
    assert to_git and by_git[0].num_rows > 40
