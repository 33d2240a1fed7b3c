"""`hybridlm transfer` (build), `hybridlm score` (score), `hybridlm eval` (both), `hybridlm train-split` and
`hybridlm params`."""

from __future__ import annotations

import argparse
import json
import signal
import sys

SUMMARY_KEYS = (
    "loss_nats",
    "tokens",
    "bytes",
    "texts",
    "data_source",
    "data_sha256",
    "transfer_sha256",
    "device",
    "torch_version",
    "seconds",
)


def _add_build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--donors", metavar="DIR", default=None, help="folder of local Hugging Face donor models")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="seconds allowed for transfer()")


def _add_score_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        default=None,
        help="a .jsonl/.parquet file with a `text` field, 'fineweb-edu' (needs `datasets`), "
        "or 'stand-in' (default: the offline stand-in corpus, not comparable to the paper)",
    )
    p.add_argument("--texts", type=int, default=200, help="number of texts to score (default 200)")
    p.add_argument("--chunk", type=int, default=512, help="tokens per scored window (default 512)")
    p.add_argument("--batch-size", type=int, default=4, help="windows per forward pass (default 4)")
    p.add_argument("--json", action="store_true", help="print only the result as one JSON line")


def _add_common_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--config", default="full", help="model size: full (default), small or tiny (tests)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default min(8, cores)); fixed per run")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hybridlm", description="The weight-transfer target and its evaluator.")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="build (transfer, in a child process) then score, in bits per byte")
    ev.add_argument("transfer_file", metavar="TRANSFER.py")
    for add in (_add_score_options, _add_build_options, _add_common_options):
        add(ev)

    tr = sub.add_parser("transfer", help="build step: run transfer(model, config), write the artifact to --out")
    tr.add_argument("transfer_file", metavar="TRANSFER.py")
    tr.add_argument("--out", metavar="DIR", required=True, help="folder for model.safetensors and manifest.json")
    tr.add_argument(
        "--protect",
        metavar="PATH",
        action="append",
        default=[],
        help="another evaluation data file transfer() must not open (repeatable)",
    )
    _add_build_options(tr)
    _add_common_options(tr)

    sc = sub.add_parser("score", help="score step: bits per byte of an artifact written by `hybridlm transfer`")
    sc.add_argument("artifact", metavar="DIR")
    _add_score_options(sc)
    _add_common_options(sc)

    ts = sub.add_parser(
        "train-split",
        help="print the training part of the stand-in corpus (disjoint from the scored texts) as JSON lines",
    )
    ts.add_argument("--out", metavar="FILE", default=None, help="write a .jsonl file instead of printing")

    pa = sub.add_parser("params", help="print the per-module parameter table")
    pa.add_argument("--config", default="full")
    pa.add_argument("--json", action="store_true")
    return parser


def _print_result(result: dict, as_json: bool) -> None:
    if not as_json:
        flag = "" if result["comparable_to_paper"] else "  (NOT comparable to the paper)"
        print(f"bpb {result['bpb']:.6f}{flag}")
        for key in SUMMARY_KEYS:
            print(f"  {key}: {result[key]}")
    print(json.dumps(result))


def _eval(args) -> int:
    from hybridlm.evaluate import EvalOptions, evaluate

    _print_result(
        evaluate(
            EvalOptions(
                transfer_file=args.transfer_file,
                data=args.data,
                n_texts=args.texts,
                chunk=args.chunk,
                device=args.device,
                donors=args.donors,
                timeout=args.timeout,
                config_name=args.config,
                threads=args.threads,
                batch_size=args.batch_size,
            )
        ),
        args.json,
    )
    return 0


def _transfer(args) -> int:
    from hybridlm.build import BuildOptions, build

    manifest = build(
        BuildOptions(
            transfer_file=args.transfer_file,
            out=args.out,
            donors=args.donors,
            timeout=args.timeout,
            config_name=args.config,
            threads=args.threads,
            device=args.device,
            protected_paths=tuple(args.protect),
        )
    )
    print(json.dumps(manifest))
    return 0


def _score(args) -> int:
    from hybridlm.score import ScoreOptions, score_artifact

    _print_result(
        score_artifact(
            ScoreOptions(
                artifact=args.artifact,
                data=args.data,
                n_texts=args.texts,
                chunk=args.chunk,
                device=args.device,
                threads=args.threads,
                batch_size=args.batch_size,
                config_name=args.config,
            )
        ),
        args.json,
    )
    return 0


def _params(args) -> int:
    from hybridlm.model import config_named, parameter_table

    rows = parameter_table(config_named(args.config))
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


def _train_split(args) -> int:
    from hybridlm.data import stand_in_train_texts

    lines = "".join(json.dumps({"text": text}) + "\n" for text in stand_in_train_texts())
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(lines)
    else:
        sys.stdout.write(lines)
    return 0


COMMANDS = {
    "eval": _eval,
    "transfer": _transfer,
    "score": _score,
    "train-split": _train_split,
    "params": _params,
}


def main(argv=None) -> int:
    from hybridlm.errors import EvalError

    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except EvalError as exc:
        print(f"hybridlm: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except KeyboardInterrupt:
        print("hybridlm: error: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT


if __name__ == "__main__":
    sys.exit(main())
