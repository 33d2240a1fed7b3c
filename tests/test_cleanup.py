"""Removing what a build left (`evaluate.cleanup.remove_tree`): any depth, width, name or type, no
link followed, nothing raised; what cannot go is reported."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from git_agora.evaluate.cleanup import remove_tree

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox's leftovers are a Linux matter")


@pytest.fixture(autouse=True)
def no_deep_leftovers(tmp_path):
    """A deep tree a failing test leaves would crash pytest's own removal of old temporary folders
    (shutil.rmtree, recursive) in a later run of anyone's tests."""
    yield
    for child in tmp_path.iterdir():
        remove_tree(str(child))


def nested(top, depth: int, name: str = "d") -> int:
    """`depth` folders, one in the other, made relative to each folder's descriptor (as a build can,
    past PATH_MAX); returns the descriptor of the deepest."""
    fd = os.open(top, os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    return fd


def test_a_tree_twenty_thousand_folders_deep_of_every_kind_of_entry_is_removed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")
    top = tmp_path / "left"
    top.mkdir()
    fd = nested(top, 20_000)
    try:
        os.mkfifo("fifo", dir_fd=fd)
        os.symlink("/", "root", dir_fd=fd)
        os.symlink(str(outside), "outside", dir_fd=fd)
        os.symlink("nowhere", "dangling", dir_fd=fd)
        os.symlink("loop", "loop", dir_fd=fd)
        os.link(outside / "keep", "hard", dst_dir_fd=fd)
        os.close(os.open(b"\xff\xfe-" + b"n" * 252, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        os.mkdir("shut", 0o700, dir_fd=fd)
        os.chmod("shut", 0, dir_fd=fd)
        os.close(os.open("secret", os.O_CREAT | os.O_WRONLY, 0, dir_fd=fd))
        os.fchmod(fd, 0o500)  # the deepest folder: no writing in it
    finally:
        os.close(fd)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(top / "sock"))
    wide = top / "wide"
    wide.mkdir()
    for i in range(5000):
        os.close(os.open(wide / f"{i}", os.O_CREAT | os.O_WRONLY, 0o644))
    (top / "sparse").touch()
    os.truncate(top / "sparse", 1 << 40)
    top.chmod(0)

    assert remove_tree(str(top)) == []
    assert not top.exists() and (outside / "keep").read_text() == "mine"  # no link was followed
    assert sorted(os.listdir(tmp_path)) == ["outside"]


def test_a_missing_path_or_a_single_file_is_no_problem(tmp_path):
    assert remove_tree(str(tmp_path / "never")) == []
    (tmp_path / "file").write_text("x")
    os.symlink("/", tmp_path / "link")
    assert remove_tree(str(tmp_path / "file")) == [] and remove_tree(str(tmp_path / "link")) == []
    assert os.listdir(tmp_path) == [] and os.path.isdir("/usr")


def test_what_cannot_be_removed_is_reported_once_and_the_rest_goes(tmp_path):
    top = tmp_path / "left"
    top.mkdir()
    (top / "other").mkdir()
    (top / "other" / "gone").write_text("x")
    fd = nested(top, 3000)
    try:
        os.close(os.open("stuck", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        deepest = f"/proc/{os.getpid()}/fd/{fd}"  # a short path to it, for chattr
        stuck = subprocess.run(["chattr", "+i", "stuck"], cwd=deepest, capture_output=True, text=True)
        if stuck.returncode != 0:
            pytest.skip(f"the immutable attribute cannot be set here: {stuck.stderr.strip()!r}")
        try:
            problems = remove_tree(str(top))
            assert len(problems) == 1 and problems[0].endswith("/d/d/stuck: Operation not permitted"), problems
            assert problems[0].startswith(f"{top}/... 2998 folders .../d/d/stuck"), problems
            assert not (top / "other").exists() and (top / "d").exists()
        finally:
            subprocess.run(["chattr", "-i", "stuck"], cwd=deepest, check=True)
    finally:
        os.close(fd)
    assert remove_tree(str(top)) == [] and not top.exists()
