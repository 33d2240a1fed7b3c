"""The interactive benchmark's host keeps its packs as docs/hosting.md asks (`with_reverse_indexes`): each
generated pack linked, not copied, with a reverse index beside it, served by the mirror; the generated
origin it reads from is left as it was."""

from __future__ import annotations

import sys
from pathlib import Path

from agora_testing import git

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "eval" / "bench"))
import bench_interactive  # noqa: E402 - a benchmark script, beside its helpers


def files(folder: Path) -> dict[str, tuple[int, int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_the_mirror_serves_linked_packs_with_reverse_indexes(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    for n in range(3):
        (work / f"f{n}.txt").write_text(f"{n}\n" * 100)
        git(work, "add", "-A")
        git(work, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-m", f"c{n}")
    cached = tmp_path / "cached.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(cached))
    git(cached, "-c", "pack.writeReverseIndex=false", "repack", "-a", "-d", "-q")  # as git 2.39 packs
    packs = cached / "objects" / "pack"
    before = files(packs)
    assert not [name for name in before if name.endswith(".rev")]

    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", "--shared", str(cached), str(mirror))
    bench_interactive.with_reverse_indexes(cached, mirror)

    assert files(packs) == before  # the generated origin is untouched
    served = files(mirror / "objects" / "pack")
    for name, (inode, size, _) in before.items():
        if name.endswith(".pack"):
            assert served[name][:2] == (inode, size)  # linked, not copied
            assert name.replace(".pack", ".rev") in served and name.replace(".pack", ".idx") in served
    git(mirror, "fsck", "--no-dangling", "--no-progress")
    git(mirror, "repack", "-a", "-d", "-q")  # the host's own upkeep keeps them
    assert [p for p in (mirror / "objects" / "pack").iterdir() if p.suffix == ".rev"]

    shallow = tmp_path / "probe.git"
    git(tmp_path, "init", "-q", "--bare", str(shallow))
    git(shallow, "fetch", "-q", "--depth=2", str(mirror), "HEAD")
    assert git(shallow, "rev-parse", "FETCH_HEAD") == git(work, "rev-parse", "HEAD")  # served whole
