"""Benchmark the first `git agora analyze` in a fresh clone of a 100,000-contribution project: the index
is there, no description has a vector yet, the default model (all-MiniLM-L6-v2 on onnxruntime) embeds.

Target (issue 11): under 60 s, with progress. The new path embeds what clustering and the slots read
(the 5,000 most recent contributions and the exploit slot's shortlist) and 5 s more
(`AGORA_EMBED_BUDGET`); the baseline, measured in the same run on a copy of the same clone, is the
old path, which embedded every description first: with `--baseline-src DIR` the old code itself (for
example `git archive b1261b9 src | tar -x -C /tmp/old`, then `--baseline-src /tmp/old/src`), else
`git agora index --embed` from an empty cache (the same encoder work, without the analysis). Each
command runs as a whole process; peak RSS comes from wait4. The ONNX export (once per machine) is
made before anything is timed. Then `git agora index --embed` completes the cache after the first
analyze, and a warm analyze runs on it.

    python eval/bench/bench_first_analyze.py [--clone PATH] [--size 100000] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import BIN, ROOT, WORK_DIR, env, plain_clone, project, ratio, sh, write_json


def fresh_copy(source: Path, name: str) -> Path:
    """A copy of ``source`` without cached vectors (a clone whose index is built, nothing embedded)."""
    target = WORK_DIR / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)
    for path in (target / ".git" / "agora" / "index").glob("embeddings.*"):
        path.unlink()
    return target


def source_clone(size: int, accounts: int) -> Path:
    clone = WORK_DIR / f"first-analyze-clone-{size}"
    if not (clone / ".git" / "agora" / "index").exists():
        plain_clone(project(size, accounts), clone)
        sh(str(BIN / "git-agora"), "index", cwd=clone, extra_env={"PYTHONPATH": str(ROOT / "src")})
    return clone


def timed_process(args: list[str], cwd: Path, src: Path) -> dict:
    """One whole `git agora` process: wall seconds, its own peak RSS (MB, wait4), its last stderr lines."""
    e = {**env(), "PYTHONPATH": str(src)}
    e.setdefault("AGORA_EMBED_BUDGET", "5")
    out_path, err_path = cwd.parent / f".{cwd.name}.out", cwd.parent / f".{cwd.name}.err"
    start = time.perf_counter()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([str(BIN / "git-agora"), *args], cwd=cwd, env=e, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    stderr = err_path.read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"git agora {' '.join(args)} failed: {stderr[-600:]}")
    return {"seconds": seconds, "peak_mb": usage.ru_maxrss / 1024, "notes": stderr.strip().splitlines()[-4:]}


def vectors_cached(clone: Path) -> int:
    code = (
        "import sys, git_agora as a\n"
        "from git_agora.embedding.cache import read_embeddings\n"
        "p = a.open_project(sys.argv[1]); t = read_embeddings(p.repo)\n"
        "print(0 if t is None else t.num_rows)\n"
        "del p, t\n"
    )
    e = {**env(), "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code, str(clone)], env=e, capture_output=True, text=True).stdout
    return int(out.strip().splitlines()[-1])


def export_once() -> None:
    code = "from git_agora.embedding.backends import load_backend; load_backend(fallback=False).encode(['warm'])"
    subprocess.run([sys.executable, "-c", code], env={**env(), "PYTHONPATH": str(ROOT / "src")}, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clone", type=Path, help="an indexed clone to copy (default: a generated project)")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--baseline-src", type=Path, help="the old code's src/ (embeds everything first)")
    args = parser.parse_args()
    source = args.clone or source_clone(args.size, args.accounts)
    export_once()
    load = [os.getloadavg()[0]]
    new = fresh_copy(source, "first-analyze-new")
    first = timed_process(["analyze", "--json"], new, ROOT / "src")
    first["cached_after"] = vectors_cached(new)
    load.append(os.getloadavg()[0])
    print(
        f"first analyze, new path: {first['seconds']:.1f} s, peak {first['peak_mb']:.0f} MB, "
        f"{first['cached_after']} vectors cached; {first['notes'][-2:]}",
        flush=True,
    )
    warm = timed_process(["analyze", "--json"], new, ROOT / "src")
    print(
        f"second analyze (embeds its budget more): {warm['seconds']:.1f} s, peak {warm['peak_mb']:.0f} MB", flush=True
    )
    rest = timed_process(["index", "--embed", "--json"], new, ROOT / "src")
    print(f"index --embed of the rest: {rest['seconds']:.1f} s, peak {rest['peak_mb']:.0f} MB", flush=True)
    complete = timed_process(["analyze", "--json"], new, ROOT / "src")
    print(f"warm analyze, cache complete: {complete['seconds']:.1f} s, peak {complete['peak_mb']:.0f} MB", flush=True)
    load.append(os.getloadavg()[0])
    old = fresh_copy(source, "first-analyze-old")
    if args.baseline_src:
        baseline = timed_process(["analyze", "--json"], old, args.baseline_src)
        what = f"the old code ({args.baseline_src}) embedding every description in analyze"
    else:
        baseline = timed_process(["index", "--embed", "--json"], old, ROOT / "src")
        what = "`index --embed` of every description from an empty cache (the old path's encoder work)"
    load.append(os.getloadavg()[0])
    print(
        f"baseline, {what}: {baseline['seconds']:.1f} s, peak {baseline['peak_mb']:.0f} MB; "
        f"new / baseline = {ratio(first['seconds'], baseline['seconds']):.2f}x; "
        f"target < 60 s: {'ok' if first['seconds'] < 60 else 'NOT MET'}; load averages {load}",
        flush=True,
    )
    shutil.rmtree(old, ignore_errors=True)
    path = write_json(
        "first_analyze",
        {
            "source": str(source),
            "first": first,
            "second": warm,
            "embed_rest": rest,
            "warm_complete": complete,
            "baseline": {**baseline, "what": what},
            "ratio": ratio(first["seconds"], baseline["seconds"]),
            "load_averages": load,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
