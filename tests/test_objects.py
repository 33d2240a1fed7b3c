"""Commits written and read in process (`refs.objects`), held to git and to dulwich byte for byte."""

from __future__ import annotations

import random
import subprocess

import pytest
from dulwich.objects import Commit, ShaFile

from git_agora.refs.objects import EMPTY_TREE, commit_body, object_id, parse_commit, write_loose
from git_agora.refs.store import Repository

TREE = EMPTY_TREE
PARENTS = ["1" * 40, "2" * 40]
SIGNATURE = b"-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQ\nAAAAQ==\n-----END SSH SIGNATURE-----\n"


def dulwich_commit(tree, parents, identity, when, message, signature=None) -> Commit:
    """What the code before this module wrote, with dulwich."""
    commit = Commit()
    commit.tree = tree.encode()
    commit.parents = [p.encode() for p in parents]
    commit.author = commit.committer = identity.encode()
    commit.author_time = commit.commit_time = when
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = message.encode("utf-8")
    if signature is not None:
        commit.gpgsig = signature
    return commit


@pytest.mark.parametrize("parents", [[], PARENTS[:1], PARENTS])
@pytest.mark.parametrize("signature", [None, SIGNATURE, SIGNATURE.rstrip(b"\n")])
@pytest.mark.parametrize("message", ["insight: x\n\nAgora-Format: 1\n", "ünïcode ✓\n", "", "no newline"])
def test_commits_are_laid_out_as_dulwich_wrote_them(parents, signature, message):
    ours = commit_body(TREE, parents, "alice <alice@agora>", 1_760_000_000, message, signature)
    theirs = dulwich_commit(TREE, parents, "alice <alice@agora>", 1_760_000_000, message, signature)
    assert ours == theirs.as_raw_string()
    assert object_id("commit", ours) == theirs.id.decode()


def test_a_written_commit_is_what_git_reads_and_fsck_accepts(tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path)], check=True)
    objects = tmp_path / "objects"
    tree = write_loose(objects, "tree", b"")
    assert tree == EMPTY_TREE == _git(tmp_path, "hash-object", "-t", "tree", "/dev/null")
    root = write_loose(objects, "commit", commit_body(tree, [], "a <a@agora>", 1, "root\n"))
    body = commit_body(tree, [root], "a <a@agora>", 2, "child ✓\n", SIGNATURE)
    child = write_loose(objects, "commit", body)
    assert _git(tmp_path, "cat-file", "-t", child) == "commit"
    assert subprocess.run(["git", "cat-file", "commit", child], cwd=tmp_path, capture_output=True).stdout == body
    assert _git(tmp_path, "rev-list", child).split() == [child, root]
    assert write_loose(objects, "commit", body) == child  # again: left alone
    assert not list(objects.glob("*/tmp_obj_*"))
    fsck = subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=tmp_path, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


def test_reading_a_commit_back(tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path)], check=True)
    repo = Repository(tmp_path, tmp_path, tmp_path, bare=True)
    repo.signer = lambda payload: SIGNATURE
    sha = repo.write_commit(repo.empty_tree, ["3" * 40], "title\n\nbody\0hidden", "bob", timestamp=42)
    info = repo.commit_info(sha)
    assert info is not None
    assert (info.tree, info.parents, info.message, info.timestamp, info.author) == (
        EMPTY_TREE,
        ("3" * 40,),
        "title\n\nbody",
        42,
        "bob <bob@agora>",
    )
    assert repo.commit_info(EMPTY_TREE) is None  # a tree
    assert repo.commit_info("4" * 40) is None  # missing
    assert repo.commit_info("HEAD") is None  # not a sha: never git's to resolve here


def mutated(rng: random.Random, n: int) -> bytes:
    """A raw commit, mostly well formed, with one random change to its header or message."""
    head = [
        b"tree " + TREE.encode(),
        b"parent " + PARENTS[0].encode(),
        b"author a <a@agora> 1700000000 +0000",
        b"committer c <c@agora> 1700000001 +0100",
    ]
    message = b"title %d\n\nAgora-Format: 1\n" % n
    kind = n % 16
    if kind == 1:
        head.pop(rng.randrange(len(head)))
    elif kind == 2:
        head[2] = b"author a <a@agora> " + rng.choice([b"x", b"", b"1 2 3", b"-5 +0000", b"12 junk", b"7"])
    elif kind == 3:
        head[3] = b"committer " + rng.choice([b"no email 5 +0000", b"c <c> 99999999999 -0530", b"c <c>", b"<> 1 +0000"])
    elif kind == 4:
        head.insert(rng.randrange(len(head) + 1), b"gpgsig -----BEGIN\n line\n \n -----END")
    elif kind == 5:
        head.append(b"mergetag object " + PARENTS[1].encode() + b"\n type commit\n tag v1")
    elif kind == 6:
        head[1] = b"parent " + rng.choice([b"XYZ", PARENTS[1][:39].encode(), PARENTS[1].upper().encode(), b""])
    elif kind == 7:
        message = bytes(rng.randrange(256) for _ in range(rng.randrange(60)))
    elif kind == 8:
        message = b"before\0after"
    elif kind == 9:
        head.insert(1, b"parent " + PARENTS[1].encode())
    elif kind == 10:
        head.append(b"encoding ISO-8859-1")
    elif kind == 11:
        return b"\n".join(head) + b"\n"  # no blank line, no message
    elif kind == 12:
        head[0] = b"tree " + rng.choice([b"", b"abc", TREE[:20].encode()])
    elif kind == 13:
        head.append(b"x-extra some value")
    elif kind == 14:
        head[2] = b"author \xff\xfe <a@agora> 1700000000 +0000"
    return b"\n".join(head) + b"\n\n" + message


def dulwich_info(raw: bytes):
    """The fields the dulwich-based reader returned (None where it could not read the commit)."""
    try:
        obj = ShaFile.from_raw_string(Commit.type_num, raw)
        values = (
            obj.tree.decode(),
            tuple(p.decode() for p in obj.parents),
            (obj.message or b"").split(b"\0", 1)[0].decode("utf-8", "replace"),  # none: an empty one, as git reads it
            obj.commit_time,
            obj.author.decode("utf-8", "replace"),
        )
    except Exception:
        return None
    return values if isinstance(values[3], int) else None


def test_reads_every_commit_dulwich_read_the_same_way():
    """On 800 mutated commits: what this reads, dulwich read the same way; where it refuses what dulwich
    read, git refuses the commit too."""
    rng = random.Random(7)
    agreed = both_refused = 0
    for n in range(800):
        raw = mutated(rng, n)
        ours, theirs = parse_commit("0" * 40, raw), dulwich_info(raw)
        if ours is not None:
            assert theirs is not None, raw
            assert (ours.tree, ours.parents, ours.message, ours.timestamp, ours.author) == theirs, raw
            agreed += 1
        elif theirs is not None:
            assert not _fsck_accepts(raw), raw
        else:
            both_refused += 1
    assert agreed > 500 and both_refused > 50


def _fsck_accepts(raw: bytes) -> bool:
    proc = subprocess.run(["git", "hash-object", "-t", "commit", "--stdin"], input=raw, capture_output=True)
    return proc.returncode == 0


def _is_sha(value: str) -> bool:
    return len(value) == 40 and all(c in "0123456789abcdef" for c in value)


def _git(repo, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("shared", ["group", "all", "0640"])
def test_a_shared_repository_gets_the_modes_git_gives(tmp_path, shared):
    """core.sharedRepository: objects, their folders, refs and theirs get the modes git's own writes get,
    whatever the writer's umask."""
    import os
    import stat

    subprocess.run(["git", "init", "-q", "--bare", f"--shared={shared}", str(tmp_path)], check=True)
    previous = os.umask(0o077)
    try:
        repo = Repository(tmp_path, tmp_path, tmp_path, bare=True)
        ours = repo.write_commit(repo.empty_tree, [], "ours\n", "a", timestamp=1)
        repo.set_ref("refs/agora/log/a", ours)
        env = {**os.environ, "GIT_AUTHOR_NAME": "g", "GIT_AUTHOR_EMAIL": "g@g"}
        env |= {"GIT_COMMITTER_NAME": "g", "GIT_COMMITTER_EMAIL": "g@g"}
        theirs = subprocess.run(
            ["git", "commit-tree", EMPTY_TREE, "-m", "theirs"], cwd=tmp_path, env=env, capture_output=True, text=True
        ).stdout.strip()
        subprocess.run(["git", "update-ref", "refs/agora/identity/g", theirs], cwd=tmp_path, check=True)
    finally:
        os.umask(previous)

    def mode(path) -> int:
        return stat.S_IMODE(os.stat(path).st_mode)

    objects = tmp_path / "objects"
    assert mode(objects / ours[:2] / ours[2:]) == mode(objects / theirs[:2] / theirs[2:])
    if ours[:2] != theirs[:2]:
        assert mode(objects / ours[:2]) == mode(objects / theirs[:2])
    assert mode(tmp_path / "refs/agora/log/a") == mode(tmp_path / "refs/agora/identity/g")
    assert mode(tmp_path / "refs/agora/log") == mode(tmp_path / "refs/agora/identity")


def test_a_full_disk_leaves_no_half_written_object(tmp_path, monkeypatch):
    import errno
    import os

    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path)], check=True)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(args[0]))

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError) as raised:
        write_loose(tmp_path / "objects", "commit", commit_body(EMPTY_TREE, [], "a <a@agora>", 1, "x\n"))
    assert raised.value.errno == errno.ENOSPC
    assert not [p for p in (tmp_path / "objects").rglob("*") if p.is_file() and "pack" not in p.parts]


def test_a_forked_child_reads_through_its_own_cat_file(tmp_path):
    """The reader started by the parent is not shared with a child: both keep getting their own answers."""
    import os

    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path)], check=True)
    repo = Repository(tmp_path, tmp_path, tmp_path, bare=True)
    shas = [repo.write_commit(repo.empty_tree, [], f"commit {i}\n", "a", timestamp=i) for i in range(50)]
    assert repo.commit_info(shas[0]) is not None  # the parent's process is running
    parent_reader = repo.objects
    pid = os.fork()
    if pid == 0:  # the child: every answer must be its own, while the parent asks too
        ok = repo.objects is not parent_reader and all(repo.commit_info(s).timestamp == i for i, s in enumerate(shas))
        os._exit(0 if ok else 1)
    answers = [repo.commit_info(s).timestamp for s in shas * 4]
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert answers == list(range(50)) * 4 and repo.objects is parent_reader
