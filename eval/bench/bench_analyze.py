"""Benchmark `git agora analyze`: paper scale with cached embeddings, 100,000 contributions, and
clustering 5,000 descriptions.

Targets (issue 4): analyze at 1,703 contributions with embeddings cached under 1 s; at 100,000 without
new embeddings under 3 s and 1 GB; clustering 5,000 descriptions on CPU under 5 s. The baseline measured
in the same run is the floor of any analysis: reading the index tables back from Parquet.

    python eval/bench/bench_analyze.py [--big 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from _common import (
    BIN,
    WORK_DIR,
    env,
    index_table,
    plain_clone,
    project,
    ratio,
    sample,
    sh,
    stats,
    verdict,
    write_json,
)

IN_PROCESS = """
import json, resource, sys, time
import git_agora as agora
t = time.perf_counter()
data = agora.analyze(agora.open_project({path!r}), model={model!r}).to_dict()
print(json.dumps({{"seconds": time.perf_counter() - t,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "clusters": data["diversity"].get("count"), "warning": data["summary"]["warning"]}}))
"""


def analyze_once(clone, model: str | None) -> dict:
    """One analysis in a fresh interpreter (imports excluded from `seconds`, included in peak memory)."""
    out = subprocess.run(
        [sys.executable, "-c", IN_PROCESS.format(path=str(clone), model=model)],
        capture_output=True,
        text=True,
        env=env(),
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def read_floor(clone) -> float:
    return min(sample(lambda: index_table(clone), 5))


def prepared_clone(size: int, accounts: int, model: str | None) -> tuple[object, float]:
    origin = project(size, accounts)
    clone = plain_clone(origin, WORK_DIR / f"analyze-clone-{size}")
    sh(str(BIN / "git-agora"), "index", cwd=clone)
    t = time.perf_counter()
    analyze_once(clone, model)  # computes and caches every embedding
    return clone, time.perf_counter() - t


def bench_project(size: int, accounts: int, model: str | None, repeat: int, target_s: float) -> dict:
    clone, first = prepared_clone(size, accounts, model)
    runs = [analyze_once(clone, model) for _ in range(repeat)]
    seconds = [r["seconds"] for r in runs]
    model_args = ["--model", model] if model else []
    cli = sample(lambda: sh(str(BIN / "git-agora"), "analyze", "--json", *model_args, cwd=clone), max(2, repeat // 2))
    floor = read_floor(clone)
    med = stats(seconds)["median"]
    print(
        f"{size:>7} contributions ({model or 'all-MiniLM-L6-v2'}): first run with embedding {first:.1f} s; "
        f"analyze {med:.3f} s in-process ({verdict(med, target_s)}, target {target_s} s), "
        f"CLI {stats(cli)['median']:.2f} s; peak {max(r['peak_mb'] for r in runs):.0f} MB; "
        f"{ratio(med, floor):.0f}x reading the index ({floor * 1000:.0f} ms)",
        flush=True,
    )
    return {
        "size": size,
        "model": model,
        "first_with_embedding_s": first,
        "analyze": stats(seconds),
        "cli": stats(cli),
        "peak_mb": max(r["peak_mb"] for r in runs),
        "read_floor_s": floor,
        "clusters": runs[-1]["clusters"],
        "warning": runs[-1]["warning"],
    }


def bench_clustering(big_clone) -> dict:
    """Embed the 5,000 most recent descriptions with MiniLM, then time the single-link clustering."""
    import numpy as np

    from git_agora.embedding.backends import load_backend
    from git_agora.frontier.clusters import single_link
    from git_agora.frontier.embeddings import contribution_text

    table = index_table(big_clone).sort_by([("timestamp", "descending")])
    texts = [
        contribution_text(t, d)
        for t, d in zip(table["title"].to_pylist()[:5000], table["description"].to_pylist()[:5000])
    ]
    backend = load_backend()
    t = time.perf_counter()
    vectors = np.asarray(backend.encode(texts), dtype=np.float32)
    embed_s = time.perf_counter() - t
    cluster_s = stats(sample(lambda: single_link(vectors, 0.90, 1024), 3))
    labels, _ = single_link(vectors, 0.90, 1024)
    print(
        f"clustering 5,000 descriptions: single-link {cluster_s['median']:.2f} s "
        f"({verdict(cluster_s['median'], 5.0)}, target 5 s), {len(set(labels.tolist()))} clusters; "
        f"embedding them with {backend.model} on CPU took {embed_s:.1f} s (once, then cached)",
        flush=True,
    )
    return {"cluster": cluster_s, "embed_s": embed_s, "clusters": len(set(labels.tolist())), "model": backend.model}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    paper = bench_project(1703, 17, None, args.repeat, 1.0)
    big = bench_project(args.big, 100, "hashing", args.repeat, 3.0)
    clustering = bench_clustering(WORK_DIR / f"analyze-clone-{args.big}")
    path = write_json("analyze", {"paper": paper, "big": big, "clustering": clustering})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
