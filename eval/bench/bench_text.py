"""Benchmark the text handling readers run on every title: the terminal cutter (`cli.render.cut`, analyze's
tables and slots), the plain cutter (`visible.cut`: log, show, search), the site's cutter
(`ops.site_data.cut`) and a title column's layout (`cli.render._table`), on descriptions of 1, 16 and
64 KiB (one line: the protocol caps a description at 64 KiB, `post` aside), against the quadratic
`render.cut` of before (kept below as the baseline), in the same run.

It prints each function's median time per call and the ratios 16K/1K and 64K/1K: linear handling of
what is shown keeps them near 1; the baseline's grow with the square of the title.

    python eval/bench/bench_text.py [--rounds 5] [--width 80]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

from _common import ratio, write_json
from git_agora import visible
from git_agora.cli import render
from git_agora.ops import site_data

SIZES = {"1K": 1024, "16K": 16 * 1024, "64K": 64 * 1024 - 1}
_PARTIAL_ESCAPE = re.compile(r"\\(?:x[0-9a-f]?|u[0-9a-f]{0,3})?$")


def quadratic_cut(text: str, width: int) -> str:
    """`render.cut` before issue 45: one character off the end at a time, the rest measured again."""
    from rich.cells import cell_len

    text = visible.visible(text)
    if cell_len(text) <= width:
        return text
    room = max(width - 1, 0)
    head = text
    while cell_len(head) > room:
        head = head[:-1]
    head = _PARTIAL_ESCAPE.sub("", head)
    at_word = head.rsplit(" ", 1)[0] if " " in head else ""
    if text[len(head) : len(head) + 1] != " " and len(at_word) >= len(head) // 2:
        head = at_word
    return head.rstrip(" ,;:-") + render.ELLIPSIS


def title(size: int) -> str:
    words = " ".join(f"w{i:05d}" for i in range(size // 7 + 1))
    return ("字 " + words)[:size]  # one wide character: the measuring is not ASCII's shortcut


def per_call(fn, text: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--width", type=int, default=80)
    args = parser.parse_args()
    w = args.width
    functions = {
        "render.cut": lambda t: render.cut(t, w),
        "visible.cut": lambda t: visible.cut(t, w),
        "site_data.cut": lambda t: site_data.cut(t, 100),
        "render._table": lambda t: render._table([("sha", "left"), ("title", "left")], [["abc", t]], w),
        "baseline quadratic cut": lambda t: quadratic_cut(t, w),
    }
    texts = {name: title(size) for name, size in SIZES.items()}
    for fn in functions.values():  # imports and caches warm
        fn(texts["1K"])
    results = {}
    print(f"{'function':<24} {'1K':>10} {'16K':>10} {'64K':>10} {'16K/1K':>8} {'64K/1K':>8}")
    for name, fn in functions.items():
        rounds = 1 if name.startswith("baseline") else args.rounds
        t = {size: per_call(fn, text, rounds) for size, text in texts.items()}
        r16, r64 = ratio(t["16K"], t["1K"]), ratio(t["64K"], t["1K"])
        results[name] = {"seconds": t, "ratio_16k_1k": r16, "ratio_64k_1k": r64}
        cells = " ".join(f"{1e3 * t[s]:>8.3f}ms" for s in SIZES)
        print(f"{name:<24} {cells} {r16:>7.1f}x {r64:>7.1f}x")
    write_json("text", {"width": w, "rounds": args.rounds, "results": results})


if __name__ == "__main__":
    main()
