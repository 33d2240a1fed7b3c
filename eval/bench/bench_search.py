"""Benchmark `git agora search` (and `analyze --json`): a fresh process per call, warm caches, at
10,000 and 100,000 contributions.

Targets (issue 15): at 100,000 contributions `search` under 1 s and 300 MB peak RSS, `analyze --json`
under 2 s. The baseline measured in the same run is today's path: the same commands from the code at
`--baseline` (default: the last commit before the ONNX query path), run on the same clone. With
`--mlflow PYTHON` (a Python with MLflow installed, in its own throwaway venv) the same records are also
written to an MLflow store (SQLite) and searched with MLflow's substring filter on the description.

The cached vectors are random unit vectors stored under all-MiniLM-L6-v2's id: what a search does
(read every vector, embed the query, rank) does not depend on their values, and embedding 100,000
descriptions first would take most of an hour on 2 cores (bench_embed.py measures that part).
Each call's wall time, CPU time (user + system) and peak RSS come from `wait4`, so a busy machine
shows up as wall time above CPU time.

    python eval/bench/bench_search.py [--sizes 10000 100000] [--repeat 5] [--mlflow /tmp/mlflow-venv/bin/python]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import BIN, ROOT, WORK_DIR, env, plain_clone, project, ratio, sh, stats, verdict, write_json

BASELINE = "2ea22ad"  # the last commit whose search loaded torch and copied every vector
QUERIES = ("learning rate warmup", "distil the donor logits", "widen the MLP with noise", "vocabulary remap")
SEARCH_TARGET_S, SEARCH_TARGET_MB, ANALYZE_TARGET_S = 1.0, 300.0, 2.0


def baseline_src(ref: str) -> Path:
    """The package as it was at ``ref`` (git archive of src/), unpacked once under WORK_DIR."""
    target = WORK_DIR / f"baseline-src-{ref}"
    if not (target / "src" / "git_agora").exists():
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile() as archive:
            subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, stdout=archive, check=True)
            archive.seek(0)
            with tarfile.open(fileobj=archive) as tar:
                tar.extractall(target, filter="data")
    return target / "src"


def run(args: list[str], cwd: Path, src: Path) -> dict:
    """One fresh process: wall seconds, CPU seconds and peak RSS (MB) of it alone."""
    e = {**env(), "PYTHONPATH": str(src), "TQDM_DISABLE": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {err[-400:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "mb": usage.ru_maxrss / 1024}


def summary(runs: list[dict]) -> dict:
    return {key: stats([r[key] for r in runs]) for key in ("wall", "cpu", "mb")}


def prepared_clone(size: int, accounts: int) -> Path:
    """A clone, indexed, with a vector of all-MiniLM-L6-v2's id for every contribution (random)."""
    clone = WORK_DIR / f"search-clone-{size}"
    if not (clone / ".git" / "agora" / "index" / "embeddings.f32").exists():
        plain_clone(project(size, accounts, parents="uniform"), clone)
        write_random_vectors(clone)
    return clone


def write_random_vectors(clone: Path, src: Path = ROOT / "src") -> None:
    """Index the clone and cache a random unit vector of all-MiniLM-L6-v2's id for every contribution,
    with the package of ``src`` (the one that reads this clone's index)."""
    sh(str(BIN / "git-agora"), "index", cwd=clone, extra_env={"PYTHONPATH": str(src)})
    code = (
        "import sys, numpy as np, git_agora as a\n"
        "from git_agora.embedding.cache import append_embeddings\n"
        "from git_agora.frontier.embeddings import rows_table, unit_rows\n"
        "from git_agora.ops.indexing import load\n"
        "p = a.open_project(sys.argv[1])\n"
        "shas = load(p).contributions['sha']\n"
        "v = unit_rows(np.random.default_rng(0).standard_normal((len(shas), 384)).astype(np.float32))\n"
        "append_embeddings(p.repo, rows_table(shas.to_pylist(), 'all-MiniLM-L6-v2', v))\n"
        "del p, shas\n"  # the repository's cat-file process ends before the interpreter tears down
    )
    subprocess.run([sys.executable, "-c", code, str(clone)], env={**env(), "PYTHONPATH": str(src)}, check=True)


def compare(name: str, args: Callable[[int], list[str]], clone: Path, old: Path, repeat: int) -> dict:
    """``args`` with the new code and with the baseline's, alternating, after one untimed warm-up each."""
    new_src = ROOT / "src"
    for src in (new_src, old):
        run(args(0), clone, src)  # warm caches (and the ONNX export, once per machine)
    new, base = [], []
    for i in range(repeat):
        new.append(run(args(i), clone, new_src))
        base.append(run(args(i), clone, old))
    result = {"new": summary(new), "baseline": summary(base)}
    n, b = result["new"], result["baseline"]
    print(
        f"  {name}: {n['wall']['median']:.2f} s wall, {n['cpu']['median']:.2f} s CPU, {n['mb']['median']:.0f} MB; "
        f"today's path {b['wall']['median']:.2f} s wall, {b['cpu']['median']:.2f} s CPU, {b['mb']['median']:.0f} MB "
        f"-> {ratio(b['wall']['median'], n['wall']['median']):.1f}x faster (CPU "
        f"{ratio(b['cpu']['median'], n['cpu']['median']):.1f}x), "
        f"{ratio(b['mb']['median'], n['mb']['median']):.1f}x less memory",
        flush=True,
    )
    return result


# MLflow, in its own interpreter: the records go in through SQL copies of one run MLflow wrote itself
# (creating 100,000 runs through its API takes most of an hour), the search goes through MLflow's API.
MLFLOW_FILL = """
import json, sqlite3, sys, uuid, mlflow
store, records = sys.argv[1], [json.loads(line) for line in open(sys.argv[2])]
mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
experiment = mlflow.create_experiment("agora")
with mlflow.start_run(experiment_id=experiment, run_name="template") as run:
    mlflow.set_tag("mlflow.note.content", "template"); mlflow.set_tag("account", "a"); mlflow.log_metric("bpb", 1.0)
template = run.info.run_id
db = sqlite3.connect(f"{store}/mlflow.db")
tables = [t for (t,) in db.execute("select name from sqlite_master where type='table'")]
rows = {}
for table in ("runs", "tags", "metrics", "latest_metrics"):
    columns = [c[1] for c in db.execute(f"pragma table_info({table})")]
    rows[table] = (columns, db.execute(f"select * from {table} where run_uuid = ?", (template,)).fetchall())
values = lambda r, t: {"mlflow.runName": r["title"], "mlflow.note.content": r["text"], "account": r["account"]}
out = {t: [] for t in rows}
for r in records:
    rid = uuid.uuid4().hex
    for table, (columns, template_rows) in rows.items():
        for old in template_rows:
            new = dict(zip(columns, old))
            new["run_uuid"] = rid
            if table == "runs":
                new["name"], new["start_time"] = r["title"][:250], r["timestamp"] * 1000
            if table == "tags" and new["key"] in values(r, table):
                new["value"] = values(r, table)[new["key"]]
            if table in ("metrics", "latest_metrics"):
                if r["metric"] is None:
                    continue
                new["value"] = r["metric"]
            out[table].append(tuple(new[c] for c in columns))
for table, (columns, _) in rows.items():
    marks = ",".join("?" * len(columns))
    db.executemany(f"insert into {table} ({','.join(columns)}) values ({marks})", out[table])
db.commit()
print(experiment)
"""
MLFLOW_SEARCH = """
import sys, mlflow
mlflow.set_tracking_uri(f"sqlite:///{sys.argv[1]}/mlflow.db")
query = sys.argv[3].replace("'", "")
found = mlflow.search_runs([sys.argv[2]], filter_string=f"tags.`mlflow.note.content` ILIKE '%{query}%'", max_results=10)
print(len(found))
"""


def mlflow_store(python: str, clone: Path, store: Path) -> tuple[Path, str]:
    """The clone's contributions as MLflow runs (title, description, account, metric), written once."""
    if not (store / "experiment").exists():
        store.mkdir(parents=True, exist_ok=True)
        (store / "mlflow.db").unlink(missing_ok=True)
        code = (
            "import sys, json, git_agora as a\n"
            "from git_agora.frontier.embeddings import contribution_text\n"
            "from git_agora.ops.indexing import load\n"
            "p = a.open_project(sys.argv[1])\n"
            "t = load(p).contributions.to_pylist()\n"
            "del p\n"
            "for r in t:\n"
            "    print(json.dumps({'title': r['title'] or '', 'text': contribution_text(r['title'], r['description']),"
            " 'account': r['account'], 'timestamp': r['timestamp'], 'metric': r['primary_metric']}))\n"
        )
        e = {**env(), "PYTHONPATH": str(ROOT / "src")}
        with open(store / "records.jsonl", "w") as out:
            subprocess.run([sys.executable, "-c", code, str(clone)], env=e, stdout=out, check=True)
        t = time.perf_counter()
        experiment = subprocess.run(
            [python, "-c", MLFLOW_FILL, str(store), str(store / "records.jsonl")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[-1]
        (store / "experiment").write_text(experiment)
        print(f"  wrote the records to MLflow (SQLite) in {time.perf_counter() - t:.1f} s", flush=True)
    return store, (store / "experiment").read_text()


def mlflow_search(python: str, store: tuple[Path, str], query: str) -> dict:
    return run([python, "-c", MLFLOW_SEARCH, str(store[0]), store[1], query], store[0], ROOT / "src")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", default=BASELINE, help="git ref of today's path")
    parser.add_argument("--mlflow", help="a Python interpreter with MLflow installed (else MLflow is skipped)")
    args = parser.parse_args()
    old = baseline_src(args.baseline)
    agora = str(BIN / "git-agora")
    results = {}
    for size in args.sizes:
        clone = prepared_clone(size, args.accounts)
        print(f"{size} contributions ({clone}), {args.repeat} fresh processes each:", flush=True)
        search = compare(
            "search", lambda i: [agora, "search", QUERIES[i % len(QUERIES)], "--json"], clone, old, args.repeat
        )
        analyze = compare("analyze --json", lambda i: [agora, "analyze", "--json"], clone, old, args.repeat)
        entry = {"search": search, "analyze": analyze}
        n = search["new"]
        print(
            f"  targets at 100k: search {verdict(n['wall']['median'], SEARCH_TARGET_S)} ({SEARCH_TARGET_S} s wall; "
            f"CPU {verdict(n['cpu']['median'], SEARCH_TARGET_S)}), "
            f"{verdict(n['mb']['median'], SEARCH_TARGET_MB)} ({SEARCH_TARGET_MB:.0f} MB); analyze "
            f"{verdict(analyze['new']['wall']['median'], ANALYZE_TARGET_S)} ({ANALYZE_TARGET_S} s)"
            if size >= 100_000
            else "",
            flush=True,
        )
        if args.mlflow:
            store = mlflow_store(args.mlflow, clone, WORK_DIR / f"mlflow-{size}")
            runs = [mlflow_search(args.mlflow, store, QUERIES[i % len(QUERIES)]) for i in range(args.repeat)]
            entry["mlflow"] = summary(runs)
            m = entry["mlflow"]
            print(
                f"  MLflow substring search: {m['wall']['median']:.2f} s wall, {m['cpu']['median']:.2f} s CPU, "
                f"{m['mb']['median']:.0f} MB -> git agora search "
                f"{ratio(m['wall']['median'], n['wall']['median']):.1f}x faster",
                flush=True,
            )
        results[str(size)] = entry
    path = write_json("search", {"baseline": args.baseline, "sizes": results})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
