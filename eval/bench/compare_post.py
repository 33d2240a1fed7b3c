"""`git agora post` of two source trees side by side, interleaved round by round with the baselines.

    git worktree add /tmp/old-tree <commit>   # with its own venv: python -m venv .venv && pip install -e .
    python eval/bench/compare_post.py CLONE --old /tmp/old-tree/.venv/bin/git-agora --rounds 20 \
        [--same-remote] [--same-clone]

- `--old` a venv's entry point: each tree runs from its own venv's, as installed; a `src/` folder given
  instead goes first on PYTHONPATH of this venv's. Either way each tree's bytecode is written in the
  warm-up round (`_common.env` clears PYTHONDONTWRITEBYTECODE): with it set, a tree whose caches were stale
  compiled its modules in every round, and the same 88f69ea code measured 1.2x to 1.5x the CPU of a copy
  with fresh caches (2026-12-06);

- CLONE: a clone with `agora.account` set and a key made (any bench clone, e.g. the one
  `bench_publish.py` or `bench_scale.py` leaves under $AGORA_BENCH_DIR), whose origin takes the posts;
- each round: `git agora post --json` with the old tree's `git_agora` first on PYTHONPATH, the same with
  this tree's, then `git commit --allow-empty && git push` into a 1-commit bare repository (the issue's
  baseline) and, with `--same-remote`, the same commit and push of a branch into CLONE's own origin
  (what plain git pays for that remote; the branches are deleted afterwards) and, with `--same-clone`, the
  same again from a linked worktree of CLONE itself: plain git with the project's objects and remote
  refs, whose push (like the post's) hands every remote ref it has to pack-objects as a negative;
- interleaving keeps a machine's changing load out of the comparison (the two trees take turns going
  first); bytecode is cached; the first round is a warm-up. Prints medians, each as a ratio to the
  baseline of the same run, and the pair-by-pair ratio new / old: its median and a distribution-free
  95% interval for it (`median_interval`).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

from _common import ROOT, WORK_DIR, median_interval, sh  # sh: the venv's git agora first on PATH

IDENT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
BRANCH = "refs/heads/compare-post-plain"


def plain_work(name: str, remote: str | None) -> Path:
    work = WORK_DIR / f"compare-{name}-work"
    shutil.rmtree(work, ignore_errors=True)
    if remote is None:
        bare = WORK_DIR / f"compare-{name}.git"
        shutil.rmtree(bare, ignore_errors=True)
        sh("git", "init", "-q", "--bare", "-b", "main", str(bare))
        remote = str(bare)
    sh("git", "init", "-q", "-b", "main", str(work))
    sh("git", "remote", "add", "origin", remote, cwd=work)
    plain_round(work)
    return work


def clone_work(clone: Path) -> Path:
    """A linked worktree of `clone`, detached at the project's setup."""
    work = WORK_DIR / "compare-clone-work"
    sh("git", "worktree", "remove", "--force", str(work), cwd=clone, check=False)
    shutil.rmtree(work, ignore_errors=True)
    setup = sh("git", "config", "agora.setup", cwd=clone).strip()
    sh("git", "worktree", "add", "-q", "--detach", str(work), setup, cwd=clone)
    plain_round(work)
    return work


def plain_round(work: Path) -> None:
    sh("git", "commit", "-q", "--allow-empty", "-m", "x", cwd=work, extra_env=IDENT)
    sh("git", "push", "-q", "origin", f"HEAD:{BRANCH}-{work.name}", cwd=work)


def post(clone: Path, tree: Path, label: str) -> None:
    """One post with `tree`: a venv's `git-agora` entry point runs as it is; a `src/` folder is put first
    on PYTHONPATH of this venv's (its bytecode cached under WORK_DIR)."""
    message = f"compare {label} {time.time_ns()}: nothing to see"
    args = ("post", "-m", message, "--tag", "insight", "--json")
    if tree.is_file():
        out = sh(str(tree), *args, cwd=clone)
    else:
        caches = {"PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(WORK_DIR / "pycache")}
        out = sh("git", "agora", *args, cwd=clone, extra_env=caches)
    assert '"pushed"' in out, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("clone", type=Path)
    parser.add_argument("--old", type=Path, required=True, help="the other tree's venv's git-agora, or its src folder")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--same-remote", action="store_true")
    parser.add_argument("--same-clone", action="store_true")
    args = parser.parse_args()
    new = Path(sys.executable).with_name("git-agora") if args.old.is_file() else ROOT / "src"
    sources = {"old": args.old.resolve(), "new": new}
    works = {"baseline": plain_work("tiny", None)}
    if args.same_remote:
        origin = sh("git", "remote", "get-url", "origin", cwd=args.clone).strip()
        works["plain, same remote"] = plain_work("same", origin)
    if args.same_clone:
        works["plain, same clone"] = clone_work(args.clone)
    times: dict[str, list[float]] = {name: [] for name in [*sources, *works]}
    try:
        for round_ in range(args.rounds + 1):
            order = list(sources.items()) if round_ % 2 else list(reversed(sources.items()))
            for name, src in order:  # each tree goes first every other round
                start = time.perf_counter()
                post(args.clone, src, name)
                times[name].append(time.perf_counter() - start)
            for name, work in works.items():
                start = time.perf_counter()
                plain_round(work)
                times[name].append(time.perf_counter() - start)
    finally:
        for name in ("plain, same remote", "plain, same clone"):
            if name in works:
                sh("git", "push", "-q", "origin", f":{BRANCH}-{works[name].name}", cwd=works[name], check=False)
        if args.same_clone:
            sh("git", "worktree", "remove", "--force", str(works["plain, same clone"]), cwd=args.clone, check=False)
    medians = {name: statistics.median(ts[1:]) * 1e3 for name, ts in times.items()}
    base = medians["baseline"]
    print(f"{args.clone} ({args.rounds} rounds, load {Path('/proc/loadavg').read_text().split()[0]}):")
    for name, ms in medians.items():
        print(f"  {name:20} {ms:7.1f} ms  {ms / base:5.2f}x")
    paired = [new / old for new, old in zip(times["new"][1:], times["old"][1:], strict=True)]
    low, high = median_interval(paired)
    print(f"  new / old, pair by pair: median {statistics.median(paired):.3f}, 95% interval [{low:.3f}, {high:.3f}]")


if __name__ == "__main__":
    main()
