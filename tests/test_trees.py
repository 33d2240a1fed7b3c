"""Which trees hold a `.git` path (`refs.trees.dotgit_paths`): found at any depth and in any case, a shared
subtree judged once, the same answers however the trees are split into chunks and whichever chunk git
reads ahead, and only the trees a match of the search falls in are parsed."""

from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import zlib
from pathlib import Path

import pytest

from git_agora.refs import trees


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(["git", "--git-dir", str(repo), *args], input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def mktree(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A tree of (mode, oid, name) entries, as written (git mktree checks no names)."""
    text = "".join(f"{mode} {'tree' if mode == '040000' else 'blob'} {oid}\t{name}\n" for mode, oid, name in entries)
    return git(repo, "mktree", data=text.encode())


@pytest.fixture
def store(tmp_path) -> tuple[Path, dict[str, str], dict[str, str]]:
    """A bare repository of trees: (git dir, name -> tree, tree -> the path `dotgit_paths` names)."""
    repo = tmp_path / "trees.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    blob = git(repo, "hash-object", "-w", "--stdin", data=b"x\n")
    clean = mktree(repo, [("100644", blob, "gitignore"), ("100644", blob, "train.py")])
    hidden = mktree(repo, [("100644", blob, "config")])
    deep = mktree(repo, [("040000", mktree(repo, [("040000", hidden, ".GiT")]), "b")])
    hidden_git = mktree(repo, [("040000", hidden, ".gIT")])  # (git reads a mode as its kind bits: 40755 is a folder)
    shared = mktree(repo, [("040000", deep, "a"), ("100644", blob, "x")])
    made = {
        "flat": clean,
        "flat, another": mktree(repo, [("100644", blob, "eval.py")]),
        "root .git": mktree(repo, [("100644", blob, ".git")]),
        "NTFS short name": mktree(repo, [("040000", clean, "GIT~1")]),
        "trailing dots": mktree(repo, [("100644", blob, ".git. .")]),
        "deep": mktree(repo, [("040000", shared, "top"), ("100644", blob, "z")]),
        "the same subtree again": mktree(repo, [("040000", shared, "other")]),
        "clean subtrees": mktree(repo, [("040000", clean, "src"), ("040000", clean, "git-tools")]),
        "missing": "0123456789abcdef0123456789abcdef01234567",
        "missing, its id ending in a folder's mode": "0123456789abcdef0123456789abcdef01240000",
        "a blob naming .git in a folder": git(repo, "hash-object", "-w", "--stdin", data=b"40000 .git\0" + b"\1" * 20),
        "an entry named .": write_tree(repo, b"100644 .\0" + bytes.fromhex(blob)),
        "an empty name": write_tree(repo, b"100644 \0" + bytes.fromhex(blob)),
        "an entry named .. in a folder": mktree(
            repo, [("040000", write_tree(repo, b"100755 ..\0" + bytes.fromhex(blob)), "sub")]
        ),
        "a folder of an odd mode": write_tree(repo, b"40755 sub\0" + bytes.fromhex(hidden_git)),
        "a zero-padded folder": write_tree(repo, b"0040000 sub\0" + bytes.fromhex(hidden_git)),
        "a link of an odd mode": write_tree(repo, b"120777 .gitmodules\0" + bytes.fromhex(blob)),
        "an entry named . of a short mode": write_tree(repo, b"1 .\0" + bytes.fromhex(blob)),
        "after them, flat": mktree(repo, [("100644", blob, "z.py")]),
    }
    expected = {
        made["root .git"]: ".git",
        made["NTFS short name"]: "GIT~1",
        made["trailing dots"]: ".git. .",
        made["deep"]: "top/a/b/.GiT",
        made["the same subtree again"]: "other/a/b/.GiT",
        made["an entry named ."]: ".",
        made["an empty name"]: trees.EMPTY_NAME,
        made["an entry named .. in a folder"]: "sub/..",
        made["a folder of an odd mode"]: "sub/.gIT",
        made["a zero-padded folder"]: "sub/.gIT",
        made["a link of an odd mode"]: ".gitmodules",
        made["an entry named . of a short mode"]: ".",
    }
    return repo, made, expected


@pytest.mark.parametrize("chunk", [1, 2, 3, trees.CHUNK])
def test_dotgit_paths_in_any_chunking(store, monkeypatch, chunk):
    repo, made, expected = store
    monkeypatch.setattr(trees, "CHUNK", chunk)
    asked = list(made.values()) + [made["deep"]]  # asked twice: answered once
    assert trees.dotgit_paths(repo, asked) == expected


def test_a_failing_read_ahead_is_raised_where_it_is_read(store, monkeypatch):
    """git failing on a chunk read ahead (on the thread) fails the reading, as a chunk read in turn does:
    the answers of the chunks before it are never taken for the whole."""
    repo, made, _ = store
    monkeypatch.setattr(trees, "CHUNK", 2)
    calls: list[list[str]] = []
    read = trees.batch_output

    def second_fails(git_dir, oids, *header):
        calls.append(oids)
        if len(calls) == 2:
            raise subprocess.CalledProcessError(128, ["git", "cat-file"])
        return read(git_dir, oids, *header)

    monkeypatch.setattr(trees, "batch_output", second_fails)
    with pytest.raises(subprocess.CalledProcessError):
        trees.dotgit_paths(repo, list(made.values()))
    assert 2 <= len(calls) <= 1 + trees.AHEAD < len(made) // 2  # the chunks read ahead of it, and no more


def test_only_trees_a_match_falls_in_are_parsed(store, monkeypatch):
    """Flat trees without "git" in a name, missing objects and other kinds are never cut out: the search
    over a chunk's answers settles them (an object id ending in a folder's mode included)."""
    repo, made, expected = store
    parsed: list[str] = []
    looked_at = trees._looked_at

    def recorded(git_dir, oids):
        for oid, body in looked_at(git_dir, oids):
            parsed.append(oid)
            yield oid, body

    monkeypatch.setattr(trees, "_looked_at", recorded)
    assert trees.dotgit_paths(repo, list(made.values())) == expected
    names = {made[name]: name for name in made}
    assert {names.get(oid, "a subtree") for oid in parsed} == {
        "flat",  # its "gitignore"
        "root .git",
        "NTFS short name",
        "trailing dots",
        "deep",
        "the same subtree again",
        "clean subtrees",
        "an entry named .",
        "an empty name",
        "an entry named .. in a folder",
        "a folder of an odd mode",
        "a zero-padded folder",
        "a link of an odd mode",
        "an entry named . of a short mode",
        "a subtree",
    }


# names built near `.git` and `git~1` from the pieces git's checks turn on: case, trailing dots and spaces,
# NTFS stream colons and backslashes, code points HFS+ ignores, bytes that are not UTF-8
PIECES = [
    b".",
    b" ",
    b":",
    b"\\",
    b"~",
    b"1",
    b"x",
    b"g",
    b"I",
    b"\xe2\x80\x8c",
    b"\xef\xbb\xbf",
    b"\xe2\x80\x93",
    b"\xff",
]
STEMS = [b".git", b".GIT", b"git~1", b"GIT~1", b".gi", b"git~", b"git"]
LINK_MODES = [b"120000", b"120777", b"0120000", b"320000"]
LINK_STEMS = [
    b".gitmodules",
    b".GITMODULES",
    b"gitmod~1",
    b"GITMOD~4",
    b"gitmod~5",
    b"gi7eba~1",
    b"gi~12345",
    b"~1234567",
]


def near_dotgit_names(count: int, seed: int = 7, stems: list[bytes] = STEMS) -> list[bytes]:
    draw = random.Random(seed)
    names: set[bytes] = set()
    while len(names) < count:
        name = bytearray(draw.choice(stems))
        for _ in range(draw.randint(0, 3)):  # a piece added at the end, or inserted anywhere
            at = len(name) if draw.random() < 0.6 else draw.randint(0, len(name))
            name[at:at] = draw.choice(PIECES)
        names.add(bytes(name))
    return sorted(names)


def write_tree(repo: Path, body: bytes) -> str:
    """A tree object stored loose as given, whatever its names (no git command would write some)."""
    data = b"tree %d\0%s" % (len(body), body)
    oid = hashlib.sha1(data).hexdigest()
    folder = repo / "objects" / oid[:2]
    folder.mkdir(exist_ok=True)
    (folder / oid[2:]).write_bytes(zlib.compress(data))
    return oid


def test_the_trees_flagged_are_the_trees_git_fsck_flags(tmp_path):
    """Differential against git itself: `git fsck` reports a `.git` path (`hasDotgit`) or a `.gitmodules`
    link (`gitmodulesSymlink`) in exactly the trees `dotgit_paths` names, for 600 names that are `.git`
    or nearly (each the only entry of a tree, as a file, and as a folder one level down) and 400 that
    are `.gitmodules` or nearly (as a file and as a symbolic link, of modes git writes or only reads)."""
    repo = tmp_path / "trees.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    blob = bytes.fromhex(git(repo, "hash-object", "-w", "--stdin", data=b"x\n"))
    names, link_names = near_dotgit_names(600), near_dotgit_names(400, 8, LINK_STEMS)
    tops, nested, links = {}, {}, {}
    for name in names:
        tops[name] = write_tree(repo, b"100644 %s\0%s" % (name, blob))
        nested[name] = write_tree(
            repo, b"40000 sub\0%s" % bytes.fromhex(write_tree(repo, b"40000 %s\0%s" % (name, blob)))
        )
    for at, name in enumerate(link_names):  # a link's mode as git writes it, or one git also reads as a link
        tops[name] = write_tree(repo, b"100644 %s\0%s" % (name, blob))
        links[name] = write_tree(repo, b"%s %s\0%s" % (LINK_MODES[at % len(LINK_MODES)], name, blob))
    reported = subprocess.run(["git", "--git-dir", str(repo), "fsck", "--no-dangling"], capture_output=True, text=True)
    said = reported.stdout + reported.stderr
    flagged = set(re.findall(r"in tree ([0-9a-f]{40}): (?:hasDotgit|gitmodulesSymlink)", said))
    assert 30 < len(flagged & set(tops.values())) < 570  # both kinds well represented (55 of 600 flagged)
    assert 30 < len(flagged & set(links.values())) < 370  # (130 of 400)
    found = trees.dotgit_paths(repo, [*tops.values(), *nested.values(), *links.values()])
    alone = {*tops.values(), *links.values()}  # (fsck reports the inner tree of a nested one)
    assert set(found) & alone == flagged & alone
    for name, tree in [*tops.items(), *links.items()]:
        assert found.get(tree, os.fsdecode(name)) == os.fsdecode(name)  # the entry's own name, where found
    for name, tree in nested.items():
        assert found.get(tree) == ("sub/" + os.fsdecode(name) if tops[name] in flagged else None)
