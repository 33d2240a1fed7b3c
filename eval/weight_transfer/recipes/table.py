"""The recipes' results table: each recipe through the kit's normal evaluation (`hybridlm eval`: the build in
a child process under the data guard, then the score), on the stand-in corpus, with the same donors.

    python eval/weight_transfer/recipes/table.py --config tiny            # the table in docs/hybridlm.md
    python eval/weight_transfer/recipes/table.py --config tiny --donors DIR --texts 8 --chunk 128

Without --donors it first trains the tiny donors (make_donors.py, --steps, deterministic) into a
temporary folder; with --donors DIR it uses DIR, training donors into it if it holds none. Prints a
Markdown table (and with --json one JSON line per recipe). Numbers are bit-identical for the same
machine, thread count and library versions.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIT = HERE.parent
PAPER = {"random": 3.3923, "slice_copy": 4.6784, "unigram": 2.5151, "bigram": 2.1284}
RECIPES = (
    ("random", KIT / "transfer.py", "random initialisation (the kit's baseline transfer.py)"),
    ("slice_copy", HERE / "slice_copy.py", "slice copy of GPT-2 and Mamba donor weights"),
    ("unigram", HERE / "unigram.py", "unigram prior from donor predictions, sublayers zeroed"),
    ("bigram", HERE / "bigram.py", "Stage A: bigram prior from donor predictions, randomized SVD"),
    ("unigram_counts", HERE / "unigram_counts.py", "reference: unigram from training-split counts (no donor)"),
)


def evaluate(path: Path, args, donors: Path) -> dict:
    command = [sys.executable, "-m", "hybridlm", "eval", str(path), "--config", args.config, "--donors", str(donors)]
    command += ["--texts", str(args.texts), "--chunk", str(args.chunk), "--threads", str(args.threads), "--json"]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise SystemExit(f"{path.name}: {lines[-1] if lines else proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(args, donors: Path) -> list[dict]:
    if not any((p / "config.json").is_file() for p in donors.glob("*")):
        sys.path.insert(0, str(HERE))
        import torch
        from make_donors import make_donors

        torch.set_num_threads(args.threads)
        make_donors(donors, steps=args.steps, log=lambda m: print(m, file=sys.stderr))
    rows = []
    for name, path, what in RECIPES:
        result = evaluate(path, args, donors)
        row = {"recipe": name, "what": what, **{k: result[k] for k in ("bpb", "bpb_hex", "tokens", "bytes")}}
        row.update(transfer_seconds=result["transfer_seconds"], data_sha256=result["data_sha256"])
        rows.append(row)
        print(f"{name}: {result['bpb']:.4f} bpb", file=sys.stderr)
    return rows


def markdown(rows: list[dict], args) -> str:
    random = next(r["bpb"] for r in rows if r["recipe"] == "random")
    out = [
        f"config `{args.config}`, stand-in corpus, {args.texts} texts, chunk {args.chunk}, {args.threads} thread(s), "
        f"{rows[0]['tokens']:,} tokens, {rows[0]['bytes']:,} bytes",
        "",
        "| recipe | bpb | vs random | transfer s | paper (Table 4) | what |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        paper = PAPER.get(r["recipe"])
        out.append(
            f"| `{r['recipe']}` | {r['bpb']:.4f} | {r['bpb'] - random:+.4f} | {r['transfer_seconds']:.1f} | "
            f"{'' if paper is None else f'{paper:.4f}'} | {r['what']} |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="tiny", help="target size: tiny (default), small or full")
    p.add_argument("--donors", default=None, help="donor folder (trained into when empty; default: a temp folder)")
    p.add_argument("--steps", type=int, default=300, help="training steps of each tiny donor (default 300)")
    p.add_argument("--texts", type=int, default=200)
    p.add_argument("--chunk", type=int, default=512)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true", help="also print one JSON line per recipe")
    args = p.parse_args(argv)
    if args.donors:
        Path(args.donors).mkdir(parents=True, exist_ok=True)
        rows = run(args, Path(args.donors))
    else:
        with tempfile.TemporaryDirectory(prefix="recipe-donors-") as tmp:
            rows = run(args, Path(tmp))
    print(markdown(rows, args))
    if args.json:
        for row in rows:
            print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
