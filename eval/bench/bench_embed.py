"""Benchmark bulk embedding (the first `analyze` after many contributions arrive): descriptions per
second, new path against today's, on the same descriptions, in the same run.

Target (issue 15): at least 3x today's descriptions per second on 2 cores. Today's path is
sentence-transformers on torch, fed as the first embedding code fed it (the texts in the given order, 256 per
call, batches of 64 sorted by length inside each call). The new path is `embedding.incremental.encode_plan`
with the default backend: the model exported to ONNX (int8 where it keeps the vectors), all texts sorted by
length, batches of 32, onnxruntime on every usable core. Each side runs in its own process (its peak
RSS is its own), twice, alternating; the better round counts for each.

It also checks agreement, per description: the cosine between the two paths' vectors, on the timed
sample and on every description of the paper-scale trace (the issue asks >= 0.99 for each), and
what `analyze` of the paper-scale project says (clusters, the three slots) with either set of vectors.

    python eval/bench/bench_embed.py [--size 10000] [--count 1000] [--rounds 2] [--no-paper]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import BIN, ROOT, WORK_DIR, env, plain_clone, project, ratio, sh, write_json

WORKER = """
import json, sys, time, numpy as np
from git_agora.embedding.backends import load_backend
from git_agora.embedding.incremental import encode_plan
from git_agora.embedding.plan import EmbedBudget, EmbedPlan
texts = json.load(open(sys.argv[2]))
if sys.argv[1] == "new":
    backend = load_backend(fallback=False)
    assert backend.name == "onnxruntime", backend.notice
    start = time.perf_counter()
    keys = tuple(str(i) for i in range(len(texts)))
    table = encode_plan(EmbedPlan(keys, (), len(keys), 0), dict(zip(keys, texts)), backend, EmbedBudget()).rows
    seconds = time.perf_counter() - start
    vectors = np.asarray(table["vector"].combine_chunks().values).reshape(len(texts), -1)
else:
    backend = load_backend(fallback=False, onnx=False)
    start = time.perf_counter()
    vectors = np.vstack([backend.encode(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    seconds = time.perf_counter() - start
np.save(sys.argv[3], vectors.astype(np.float32))
print(json.dumps({"seconds": seconds, "runtime": backend.runtime}))
"""


def descriptions(size: int, accounts: int) -> list[str]:
    """Every valid description of a generated project, as the index gives them to the encoder."""
    clone = WORK_DIR / f"embed-clone-{size}"
    if not (clone / ".git" / "agora").exists():
        plain_clone(project(size, accounts), clone)
        sh(str(BIN / "git-agora"), "index", cwd=clone, extra_env={"PYTHONPATH": str(ROOT / "src")})
    return descriptions_of(clone)


def embed(side: str, texts: list[str], work: Path) -> tuple[dict, np.ndarray]:
    """One side in a fresh process: its seconds, its peak RSS (MB, wait4) and its vectors."""
    (work / "texts.json").write_text(json.dumps(texts))
    e = {**env(), "PYTHONPATH": str(ROOT / "src"), "TQDM_DISABLE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    args = [sys.executable, "-c", WORKER, side, str(work / "texts.json"), str(work / f"{side}.npy")]
    proc = subprocess.Popen(args, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{side} failed: {err[-600:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_mb"] = usage.ru_maxrss / 1024
    result["per_second"] = len(texts) / result["seconds"]
    return result, np.load(work / f"{side}.npy")


def agreement(a: np.ndarray, b: np.ndarray) -> dict:
    cosine = np.einsum("ij,ij->i", a, b)
    return {"min": float(cosine.min()), "mean": float(cosine.mean()), "below_0.99": int((cosine < 0.99).sum())}


def paper_clone(work: Path) -> Path:
    import tracegen

    origin = work / "paper.git"
    if not origin.exists():
        tracegen.generate(origin, tracegen.PAPER_CONTRIBUTIONS, tracegen.PAPER_ACCOUNTS, seed=0)
    clone = plain_clone(origin, work / "paper-clone")
    sh(str(BIN / "git-agora"), "index", cwd=clone, extra_env={"PYTHONPATH": str(ROOT / "src")})
    return clone


ANALYZE_WITH = """
import json, sys, numpy as np, git_agora as a
from git_agora.embedding.cache import EMBEDDINGS_FILE, VECTORS_FILE, append_embeddings, index_dir
from git_agora.frontier.embeddings import TextsOf, rows_table
from git_agora.ops.indexing import load
p = a.open_project(sys.argv[1])
shas = list(TextsOf(load(p).contributions))
for name in (EMBEDDINGS_FILE, VECTORS_FILE):  # these vectors only
    (index_dir(p.repo) / name).unlink(missing_ok=True)
append_embeddings(p.repo, rows_table(shas, "all-MiniLM-L6-v2", np.load(sys.argv[2])))
d = a.analyze(p, embed=False).to_dict()
slots = {s["name"]: [x["sha"] for x in s["suggestions"]] for s in d["slots"]["slots"]}
print(json.dumps({"count": d["diversity"]["count"], "sizes": d["diversity"]["sizes"], "slots": slots}))
del p
"""


def clusters_and_slots(clone: Path, vectors: np.ndarray, work: Path) -> dict:
    """`analyze` of ``clone`` with these vectors cached: its cluster count and sizes and its slots."""
    np.save(work / "cached.npy", vectors)
    e = {**env(), "PYTHONPATH": str(ROOT / "src")}
    code = [sys.executable, "-c", ANALYZE_WITH, str(clone), str(work / "cached.npy")]
    return json.loads(subprocess.run(code, env=e, capture_output=True, check=True).stdout)


def differences(new: dict, old: dict) -> list[str]:
    said = []
    if new["sizes"] != old["sizes"]:
        moved = sum(abs(a - b) for a, b in zip(sorted(new["sizes"]), sorted(old["sizes"])))
        said.append(f"clusters {new['count']} instead of {old['count']} ({moved} members in other sizes)")
    for name in old["slots"]:
        if new["slots"].get(name) != old["slots"][name]:
            said.append(f"slot {name}: {new['slots'].get(name)} instead of {old['slots'][name]}")
    return said


def descriptions_of(clone: Path) -> list[str]:
    code = (
        "import sys, json, git_agora as a\n"
        "from git_agora.frontier.embeddings import TextsOf\n"
        "from git_agora.ops.indexing import load\n"
        "p = a.open_project(sys.argv[1])\n"
        "print(json.dumps(list(dict(TextsOf(load(p).contributions)).values())))\n"
        "del p\n"  # the repository's cat-file process ends before the interpreter tears down
    )
    e = {**env(), "PYTHONPATH": str(ROOT / "src")}
    return json.loads(subprocess.run([sys.executable, "-c", code, str(clone)], env=e, capture_output=True).stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000, help="generated project the descriptions come from")
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--count", type=int, default=1000, help="descriptions timed (a random sample)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-paper", action="store_true", help="skip the agreement check on the paper trace")
    args = parser.parse_args()
    texts = descriptions(args.size, args.accounts)
    sample = random.Random(0).sample(texts, min(args.count, len(texts)))
    lengths = [len(t) for t in sample]
    print(
        f"{len(sample)} descriptions of a generated {args.size}-contribution project: mean {np.mean(lengths):.0f} "
        f"characters (median {np.median(lengths):.0f}, max {max(lengths)}); {os.cpu_count()} CPUs seen",
        flush=True,
    )
    rounds: dict[str, list[dict]] = {"new": [], "baseline": []}
    with tempfile.TemporaryDirectory(prefix="bench-embed-") as tmp:
        work = Path(tmp)
        embed("new", sample[:64], work)  # the ONNX export, once per machine, is not timed
        vectors = {}
        for _ in range(args.rounds):
            for side in ("baseline", "new"):
                result, vectors[side] = embed(side, sample, work)
                rounds[side].append(result)
                print(
                    f"  {side:<8} {result['runtime']:<22} {result['per_second']:6.1f} descriptions/s, "
                    f"{result['seconds']:.1f} s, peak {result['peak_mb']:.0f} MB",
                    flush=True,
                )
        best = {side: max(r["per_second"] for r in results) for side, results in rounds.items()}
        agree = agreement(vectors["new"], vectors["baseline"])
        speedup = ratio(best["new"], best["baseline"])
        print(
            f"new path {best['new']:.1f}/s vs today's {best['baseline']:.1f}/s: {speedup:.1f}x "
            f"({'ok' if speedup >= 3 else 'UNDER TARGET'}, target 3x); cosine with today's vectors: "
            f"min {agree['min']:.4f}, mean {agree['mean']:.4f}",
            flush=True,
        )
        paper = None
        if not args.no_paper:
            t = time.perf_counter()
            clone = paper_clone(WORK_DIR)
            texts = descriptions_of(clone)
            new, new_vectors = embed("new", texts, work)
            _, old_vectors = embed("baseline", texts, work)
            paper = agreement(new_vectors, old_vectors)
            print(
                f"paper-scale trace, all {len(texts)} descriptions: cosine min {paper['min']:.4f}, mean "
                f"{paper['mean']:.4f}, {paper['below_0.99']} below 0.99 ({time.perf_counter() - t:.0f} s)",
                flush=True,
            )
            old = clusters_and_slots(clone, old_vectors, work)
            paper["analyze_differences"] = differences(clusters_and_slots(clone, new_vectors, work), old)
            print(
                f"analyze on it (clusters, slots) with either path's vectors: {old['count']} clusters; "
                + ("; ".join(paper["analyze_differences"]) or "identical"),
                flush=True,
            )
    path = write_json(
        "embed",
        {
            "texts": len(sample),
            "mean_chars": float(np.mean(lengths)),
            "rounds": rounds,
            "best_per_second": best,
            "speedup": speedup,
            "agreement": agree,
            "paper_agreement": paper,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
