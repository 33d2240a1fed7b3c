"""Single refs read and compare-and-swapped in process (`refs.files`), as `git update-ref` would."""

from __future__ import annotations

import multiprocessing
import subprocess
import threading
import time

import pytest

from git_agora.refs.files import NotPlain, read_ref, swap_ref
from git_agora.refs.store import RefBusy, Repository

REF = "refs/agora/log/alice"


def sha(n: int) -> str:
    return f"{n:040x}"


@pytest.fixture
def bare(tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path)], check=True)
    return tmp_path


def real_commit(repo, message: str) -> str:
    tree = _git(repo, "hash-object", "-w", "-t", "tree", "/dev/null")
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@a", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@a"}
    return _git(repo, "commit-tree", tree, "-m", message, env=env)


def test_loose_packed_and_absent_refs_read_as_git_reads_them(bare):
    one, two = real_commit(bare, "one"), real_commit(bare, "two")
    assert read_ref(bare, REF) is None
    _git(bare, "update-ref", REF, one)
    assert read_ref(bare, REF) == one
    _git(bare, "pack-refs", "--all")
    assert not (bare / REF).exists() and read_ref(bare, REF) == one  # packed only
    _git(bare, "update-ref", REF, two)
    assert read_ref(bare, REF) == two  # the loose ref overrides the packed one
    assert read_ref(bare, "refs/agora/log") is None  # a folder of refs is no ref
    assert read_ref(bare, REF + "x") is None and read_ref(bare, "refs/agora/log/alic") is None


def test_a_symbolic_ref_is_gits_to_read(bare):
    one = real_commit(bare, "one")
    _git(bare, "update-ref", REF, one)
    _git(bare, "symbolic-ref", "refs/agora/log/bob", REF)
    with pytest.raises(NotPlain):
        read_ref(bare, "refs/agora/log/bob")
    repo = Repository(bare, bare, bare, bare=True)
    assert repo.ref("refs/agora/log/bob") == one
    two = real_commit(bare, "two")
    assert repo.compare_and_swap("refs/agora/log/bob", one, two)  # through git: the symref's target moves
    assert _git(bare, "rev-parse", REF) == two


def test_compare_and_swap_semantics(bare):
    assert not swap_ref(bare, REF, sha(1), sha(2))  # expected a value, there is none
    assert swap_ref(bare, REF, None, sha(1))  # created
    assert not swap_ref(bare, REF, None, sha(2))  # exists already
    assert not swap_ref(bare, REF, sha(9), sha(2))  # points elsewhere
    assert read_ref(bare, REF) == sha(1)
    assert swap_ref(bare, REF, sha(1), sha(2)) and read_ref(bare, REF) == sha(2)
    assert swap_ref(bare, REF, None, sha(3), unconditional=True) and read_ref(bare, REF) == sha(3)
    assert (bare / REF).read_text() == sha(3) + "\n" and not list(bare.glob("refs/agora/log/*.lock"))


def test_a_packed_ref_is_swapped_by_a_loose_one(bare):
    one, two = real_commit(bare, "one"), real_commit(bare, "two")
    _git(bare, "update-ref", REF, one)
    _git(bare, "pack-refs", "--all")
    assert swap_ref(bare, REF, one, two)
    assert _git(bare, "rev-parse", REF) == two
    _git(bare, "pack-refs", "--all")
    assert _git(bare, "rev-parse", REF) == two


def test_another_process_lock_is_a_lost_race_and_is_left_alone(bare):
    assert swap_ref(bare, REF, None, sha(1))
    lock = bare / (REF + ".lock")
    lock.write_text("held by git\n")
    assert not swap_ref(bare, REF, sha(1), sha(2))
    assert lock.read_text() == "held by git\n" and read_ref(bare, REF) == sha(1)


def test_set_ref_waits_out_a_lock_then_gives_up_clearly(bare):
    repo = Repository(bare, bare, bare, bare=True)
    repo.set_ref(REF, sha(1))
    lock = bare / (REF + ".lock")
    lock.write_text("")
    release = threading.Timer(0.2, lock.unlink)
    release.start()
    repo.set_ref(REF, sha(2))  # once the lock is gone
    release.join()
    assert read_ref(bare, REF) == sha(2)
    lock.write_text("")
    with pytest.raises(RefBusy, match="stays locked"):
        repo.set_ref(REF, sha(3))


def _increment(args) -> int:
    """Add one to the ref `times` times, rereading after every lost race."""
    directory, times = args
    done = 0
    while done < times:
        current = read_ref(directory, REF)
        if swap_ref(directory, REF, current, sha(int(current, 16) + 1)):
            done += 1
        else:
            time.sleep(0.0005)
    return done


def test_concurrent_processes_never_lose_an_update(bare):
    swap_ref(bare, REF, None, sha(0))
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        assert pool.map(_increment, [(bare, 60)] * 4) == [60] * 4
    assert read_ref(bare, REF) == sha(240)


def _git(repo, *args: str, env=None) -> str:
    import os

    full = {**os.environ, **(env or {})}
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=full).stdout.strip()
