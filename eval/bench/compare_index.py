"""The index of two source trees side by side: a rebuild and a one-contribution fetch, interleaved.

    python eval/bench/compare_index.py --baseline 774e2dd [--size 100000] [--rounds 5] [--steps rebuild,fetch]

On a generated project (cached under $AGORA_BENCH_DIR) fetched by plain git into one clone per tree
(their index formats may differ): each round,
in alternating order, `git agora index --rebuild` with this tree and with the baseline's (`git archive`
of src/ at `--baseline`), each a fresh process; then, for each tree, one result appended to the origin
and `git agora fetch` (the fetch and the index update of one new contribution). Then every contribution
gets a random vector of all-MiniLM-L6-v2's id (as `bench_search.py` does) and each round runs
`analyze --json` and `search QUERY --json` with each tree. One untimed warm-up of each first (the
search's loads the query model). Prints medians with the rounds' range, and the ratio new / baseline
(at most 1.10: no speed given back). Results: bench-out/compare_index.json.

"new" is this checkout's HEAD (committed code only), unpacked by `git archive` as the baseline is, and
both write their bytecode in the warm-up (`_common.env`): the two trees then differ in their code alone.
"""

from __future__ import annotations

import argparse
import statistics

from bench_search import QUERIES, baseline_src, run, write_random_vectors

from _common import BIN, ROOT, WORK_DIR, plain_clone, project, ratio, sh, stats, tracegen, write_json


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", required=True, help="git ref of the tree to compare with")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", default="rebuild,fetch,analyze,search", help="which steps to time (comma-separated)")
    args = parser.parse_args()
    head = sh("git", "rev-parse", "--short=12", "HEAD", cwd=ROOT).strip()
    trees = {"new": baseline_src(head), "baseline": baseline_src(args.baseline)}  # both laid out alike
    origin = project(args.size, args.accounts)
    clones = {name: plain_clone(origin, WORK_DIR / f"compare-index-{args.size}-{name}") for name in trees}
    for clone in clones.values():  # one clone per tree: their index formats may differ
        sh("git", "config", "agora.account", "bench", cwd=clone)
    agora = str(BIN / "git-agora")
    steps = tuple(step for step in ("rebuild", "fetch", "analyze", "search") if step in args.steps.split(","))
    runs: dict[str, dict[str, list[dict]]] = {step: {name: [] for name in trees} for step in steps}

    def fetch_one(name: str) -> dict:
        tracegen.append(origin, None, n=1, parent_mode="recent", kind="result")
        return run([agora, "fetch"], clones[name], trees[name])

    for name, src in trees.items():  # warm-up: bytecode, page cache, the first index
        run([agora, "index", "--rebuild"], clones[name], src)
        if "fetch" in steps:
            fetch_one(name)
    for round_ in range(args.rounds if {"rebuild", "fetch"} & set(steps) else 0):
        order = list(trees.items()) if round_ % 2 == 0 else list(reversed(trees.items()))
        for name, src in order if "rebuild" in steps else ():
            runs["rebuild"][name].append(run([agora, "index", "--rebuild"], clones[name], src))
        for name, _ in order if "fetch" in steps else ():
            runs["fetch"][name].append(fetch_one(name))
        print(f"  round {round_ + 1}/{args.rounds} done", flush=True)
    for name, src in trees.items() if {"analyze", "search"} & set(steps) else ():
        write_random_vectors(clones[name], src)  # every contribution has a vector: analyze and search embed nothing
        run([agora, "analyze", "--json"], clones[name], src)
        run([agora, "search", QUERIES[0], "--json"], clones[name], src)
    for round_ in range(args.rounds if {"analyze", "search"} & set(steps) else 0):
        order = list(trees.items()) if round_ % 2 == 0 else list(reversed(trees.items()))
        for name, src in order if "analyze" in steps else ():
            runs["analyze"][name].append(run([agora, "analyze", "--json"], clones[name], src))
        for name, src in order if "search" in steps else ():
            query = QUERIES[round_ % len(QUERIES)]
            runs["search"][name].append(run([agora, "search", query, "--json"], clones[name], src))

    results = {}
    print(f"{args.size} contributions, {args.rounds} interleaved rounds (baseline {args.baseline}):")
    for step, by_tree in runs.items():
        summary = {
            name: {key: stats([r[key] for r in done]) for key in ("wall", "cpu", "mb")}
            for name, done in by_tree.items()
        }
        new, old = summary["new"]["wall"], summary["baseline"]["wall"]
        paired = {  # round by round, new / baseline: the median and the range (5 rounds: a 94% interval)
            key: sorted(ratio(a[key], b[key]) for a, b in zip(by_tree["new"], by_tree["baseline"], strict=True))
            for key in ("wall", "cpu")
        }
        results[step] = {**summary, "ratio": ratio(new["median"], old["median"]), "paired": paired}
        cpu = paired["cpu"]
        print(
            f"  {step}: new {new['median']:.3f} s [{new['min']:.3f}-{new['max']:.3f}], "
            f"baseline {old['median']:.3f} s [{old['min']:.3f}-{old['max']:.3f}] -> "
            f"{results[step]['ratio']:.3f}x; CPU paired {statistics.median(cpu):.3f} [{cpu[0]:.3f}-{cpu[-1]:.3f}]; "
            f"peak {summary['new']['mb']['median']:.0f} MB vs {summary['baseline']['mb']['median']:.0f} MB",
            flush=True,
        )
    print(f"wrote {write_json('compare_index', {'baseline': args.baseline, 'size': args.size, **results})}")
    return 0


def _summary(done: list[dict]) -> dict:
    return {key: stats([r[key] for r in done]) for key in ("wall", "cpu", "mb")}


if __name__ == "__main__":
    raise SystemExit(main())
