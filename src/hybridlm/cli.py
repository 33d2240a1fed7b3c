"""`hybridlm eval TRANSFER.py` and `hybridlm params`."""

from __future__ import annotations

import argparse
import json
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hybridlm", description="The weight-transfer target and its evaluator.")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="score a transfer(model, config) file in bits per byte")
    ev.add_argument("transfer_file", metavar="TRANSFER.py")
    ev.add_argument("--data", default=None,
                    help="a .jsonl/.parquet file with a `text` field, 'fineweb-edu' (needs `datasets`), "
                         "or 'stand-in' (default: the offline stand-in corpus, not comparable to the paper)")
    ev.add_argument("--texts", type=int, default=200, help="number of texts to score (default 200)")
    ev.add_argument("--chunk", type=int, default=512, help="tokens per scored window (default 512)")
    ev.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ev.add_argument("--donors", metavar="DIR", default=None, help="folder of local Hugging Face donor models")
    ev.add_argument("--timeout", type=float, default=None, metavar="S", help="seconds allowed for transfer()")
    ev.add_argument("--config", default="full", help="model size: full (default), small or tiny (tests)")
    ev.add_argument("--threads", type=int, default=None, help="CPU threads (default min(8, cores)); fixed per run")
    ev.add_argument("--batch-size", type=int, default=4, help="windows per forward pass (default 4)")
    ev.add_argument("--json", action="store_true", help="print only the result as one JSON line")

    pa = sub.add_parser("params", help="print the per-module parameter table")
    pa.add_argument("--config", default="full")
    pa.add_argument("--json", action="store_true")
    return parser


def _eval(args) -> int:
    from hybridlm.evaluate import EvalError, EvalOptions, evaluate

    opts = EvalOptions(
        transfer_file=args.transfer_file, data=args.data, n_texts=args.texts, chunk=args.chunk,
        device=args.device, donors=args.donors, timeout=args.timeout, config_name=args.config,
        threads=args.threads, batch_size=args.batch_size,
    )
    try:
        result = evaluate(opts)
    except EvalError as exc:
        print(f"hybridlm: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result))
    else:
        flag = "" if result["comparable_to_paper"] else "  (NOT comparable to the paper)"
        print(f"bpb {result['bpb']:.6f}{flag}")
        for key in ("loss_nats", "tokens", "bytes", "texts", "data_source", "data_sha256", "transfer_sha256",
                    "device", "torch_version", "seconds"):
            print(f"  {key}: {result[key]}")
        print(json.dumps(result))
    return 0


def _params(args) -> int:
    from hybridlm.model import CONFIGS, parameter_table

    if args.config not in CONFIGS:
        print(f"hybridlm: error: unknown --config {args.config!r} (have: {', '.join(CONFIGS)})", file=sys.stderr)
        return 1
    rows = parameter_table(CONFIGS[args.config])
    total = sum(n * k for _, _, n, k in rows)
    if args.json:
        print(json.dumps({"rows": [dict(module=m, shape=s, each=n, count=k) for m, s, n, k in rows], "total": total}))
        return 0
    width = max(len(m) for m, *_ in rows)
    print(f"{'module':<{width}}  {'shape':>10}  {'each':>12}  {'x':>3}  {'total':>12}")
    for module, shape, n, k in rows:
        print(f"{module:<{width}}  {shape:>10}  {n:>12,}  {k:>3}  {n * k:>12,}")
    print(f"{'total':<{width}}  {'':>10}  {'':>12}  {'':>3}  {total:>12,}")
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    return _eval(args) if args.command == "eval" else _params(args)


if __name__ == "__main__":
    sys.exit(main())
