"""Snapshot of a 10,000-file work tree (what `push` and `run` publish) against plain git.

- agora: `workspace.snapshot` (a copy of the index that keeps its mtime, `git add --all`, `git write-tree`)
- baseline, same run: `git add --all && git write-tree` on the real index
Both after one same-size edit; the snapshot must capture it (checked every time).

    python eval/bench/bench_snapshot.py [--files 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

from _common import WORK_DIR, ratio, sample, sh, stats, write_json
from git_agora.refs.store import Repository
from git_agora.workspace import snapshot


def make_tree(root: Path, files: int) -> Path:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    sh("git", "init", "-q", cwd=root)
    for i in range(files):
        folder = root / f"d{i // 500:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.py").write_text(f"value = {i:06d}\n")
    sh("git", "add", "--all", cwd=root)
    sh("git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "tree", cwd=root)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = make_tree(WORK_DIR / f"snapshot-{args.files}", args.files)
    repo = Repository.discover(root)
    edited = root / "d000" / "f00000.py"
    counter = iter(range(10**9))

    def edit() -> None:
        edited.write_text(f"value = {next(counter) % 1_000_000:06d}\n")  # same size

    def agora_snapshot() -> None:
        with snapshot(repo) as snap:
            blob = subprocess.run(
                ["git", "show", f"{snap.tree}:d000/f00000.py"], cwd=root, capture_output=True, text=True
            ).stdout
            assert blob == edited.read_text(), "the snapshot lost the edit"

    def git_baseline() -> None:
        sh("git", "add", "--all", cwd=root)
        sh("git", "write-tree", cwd=root)

    out = {
        "files": args.files,
        "agora_snapshot_s": stats(sample(agora_snapshot, args.repeat, setup=edit, warmup=1)),
        "git_add_write_tree_s": stats(sample(git_baseline, args.repeat, setup=edit, warmup=1)),
    }
    out["ratio"] = ratio(out["agora_snapshot_s"]["median"], out["git_add_write_tree_s"]["median"])
    print(
        f"snapshot of {args.files} files: {out['agora_snapshot_s']['median']:.3f} s, git add + write-tree "
        f"{out['git_add_write_tree_s']['median']:.3f} s, ratio {out['ratio']:.2f}x"
    )
    write_json("snapshot", out)


if __name__ == "__main__":
    main()
