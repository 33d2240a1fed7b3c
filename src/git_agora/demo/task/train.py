"""The build step of the demo task: count character n-grams of the training text with the knobs of
`choices.py`, and write the model to ARTIFACT/model.json for the scorer.

    python3 train.py --out ARTIFACT
"""

import argparse
import json
import os
from collections import defaultdict

import choices
import corpus


def count(text, order):
    counts: list[defaultdict[str, defaultdict[str, int]]] = [
        defaultdict(lambda: defaultdict(int)) for _ in range(order + 1)
    ]
    for i, ch in enumerate(text):
        for k in range(order + 1):
            if i - k < 0:
                break
            counts[k][text[i - k : i]][ch] += 1
    return counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = parser.parse_args().out
    train, _ = corpus.split()
    text = train.lower() if choices.LOWERCASE else train
    order = int(choices.ORDER)
    model = {
        "order": order,
        "method": choices.METHOD,
        "additive_alpha": choices.ADDITIVE_ALPHA,
        "discount": choices.DISCOUNT,
        "interpolate": bool(choices.INTERPOLATE),
        "lowercase_context": bool(choices.LOWERCASE),
        "vocab": sorted(set(text) | {"\0"}),  # "\0" stands for any character the model never saw
        "counts": [{ctx: dict(table) for ctx, table in level.items()} for level in count(text, order)],
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.json"), "w") as handle:
        json.dump(model, handle)


if __name__ == "__main__":
    main()
