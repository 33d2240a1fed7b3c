"""Benchmark of the hybridlm evaluator (one run, CPU; GPU too where available).

Prints: scoring throughput (tokens/s) of the full-size target against a same-size GPT-2 from
`transformers` (randomly initialised locally, no download) on the same 512-token windows, and their
ratio; then the full 200-text evaluation through the real CLI (time, peak memory from ru_maxrss) and,
where ../shared/data/fineweb-edu-150.jsonl exists, the 150-document evaluation.

    python eval/bench/bench_hybridlm.py [--windows 8] [--threads 2] [--skip-full]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "eval" / "weight_transfer" / "transfer.py"
FINEWEB_150 = ROOT / ".." / "shared" / "data" / "fineweb-edu-150.jsonl"


def throughput(model, docs, device: str) -> float:
    from hybridlm.score import score

    score(model, docs[:1], 512, device)  # warm-up
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    start = time.perf_counter()
    _, tokens = score(model, docs, 512, device)
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    return tokens / (time.perf_counter() - start)


def compare(device: str, n_windows: int) -> None:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from hybridlm.data import load_texts
    from hybridlm.model import HybridConfig, HybridLM, count_parameters
    from hybridlm.score import windows
    from hybridlm.tokenizer import encode_batch

    # The same full 512-token windows for both models: the first n_windows of the stand-in corpus.
    pieces = windows(encode_batch(list(load_texts(None, 200).texts)), 512)
    full = [x + y[-1:] for x, y in pieces if len(x) == 512][:n_windows]
    docs = [seq[1:] for seq in full]  # score() prepends <|endoftext|>; drop one token to keep 512 inputs

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, idx):
            return self.inner(idx).logits

    torch.manual_seed(0)
    hybrid = HybridLM(HybridConfig())
    gpt2 = Logits(GPT2LMHeadModel(GPT2Config(n_positions=512, n_embd=768, n_layer=12, n_head=12)))
    n_h, n_g = count_parameters(hybrid), sum(p.numel() for p in gpt2.parameters())
    tokens = sum(len(d) for d in docs)
    with torch.no_grad():
        t_h = throughput(hybrid, docs, device)
        t_g = throughput(gpt2, docs, device)
    print(f"[{device}] {len(docs)} windows x 512 = {tokens} tokens, batch 4, threads {torch.get_num_threads()}")
    print(f"[{device}] hybridlm target ({n_h:,} params): {t_h:,.0f} tokens/s")
    print(f"[{device}] transformers GPT-2 ({n_g:,} params):  {t_g:,.0f} tokens/s")
    print(f"[{device}] ratio target/GPT-2: {t_h / t_g:.2f}x")


def full_eval(args: list[str], label: str) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "hybridlm", "eval", str(BASELINE), "--json", *args], capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        print(f"{label}: FAILED: {proc.stderr.strip().splitlines()[-1:]}")
        return
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    uniform = math.log2(50257) * r["tokens"] / r["bytes"]
    peak = f"{peak_kib / 1024:,.0f} MiB" if peak_kib > before else "<= previous run's peak"
    print(
        f"{label}: bpb {r['bpb']:.4f} (uniform {uniform:.4f}, ratio {r['bpb'] / uniform:.4f}), "
        f"loss {r['loss_nats']:.4f} nats, {r['texts']} texts, {r['tokens']:,} tokens, {r['bytes']:,} bytes, "
        f"comparable_to_paper={r['comparable_to_paper']}"
    )
    print(
        f"{label}: wall {wall:.1f} s (scoring {r['score_seconds']:.1f} s, {r['tokens_per_second']:,.0f} tokens/s, "
        f"threads {r['threads']}), peak RSS {peak}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-full", action="store_true")
    opts = parser.parse_args()
    import torch

    torch.set_num_threads(opts.threads)
    compare("cpu", opts.windows)
    if torch.cuda.is_available():
        compare("cuda", opts.windows * 4)
    else:
        print("[cuda] no GPU available: GPU throughput not measured")
    if opts.skip_full:
        return
    full_eval(["--threads", str(opts.threads)], "full eval, stand-in, 200 texts, CPU")
    if FINEWEB_150.is_file():
        full_eval(
            ["--threads", str(opts.threads), "--data", str(FINEWEB_150.resolve()), "--texts", "150"],
            "full eval, fineweb-edu-150, 150 texts, CPU",
        )
    else:
        print("fineweb-edu-150.jsonl not present: skipped")


if __name__ == "__main__":
    main()
