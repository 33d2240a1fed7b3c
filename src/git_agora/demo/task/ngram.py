"""Evaluator of the demo task: a character n-gram language model over English text that ships with
Python (the help topics in `pydoc_data`), scored in bits per character on held-out topics.

Prints one JSON line: {"bpc": ..., "train_chars": ..., "test_chars": ...}. Deterministic.
"""

import json
import math
from collections import defaultdict
from pydoc_data.topics import topics

import choices

TRAIN_CHARS = 120_000
TEST_CHARS = 12_000


def corpus():
    names = sorted(topics)
    test = "".join(topics[n] for n in names[::8])[:TEST_CHARS]
    train = "".join(topics[n] for i, n in enumerate(names) if i % 8)[:TRAIN_CHARS]
    return train, test


def fold(text):
    return text.lower() if choices.LOWERCASE else text


class NGram:
    def __init__(self, text, order):
        self.order = order
        self.vocab = sorted(set(text) | {"\0"})  # "\0" stands for any unseen character
        self.counts = [defaultdict(lambda: defaultdict(int)) for _ in range(order + 1)]
        for i, ch in enumerate(text):
            for k in range(order + 1):
                if i - k < 0:
                    break
                self.counts[k][text[i - k : i]][ch] += 1

    def prob(self, context, ch, k=None):
        k = self.order if k is None else k
        context = context[-k:] if k else ""
        if k == 0:
            return self._smoothed(self.counts[0][""], ch, 1.0 / len(self.vocab))
        table = self.counts[k].get(context)
        lower = self.prob(context, ch, k - 1) if (choices.INTERPOLATE or not table) else 0.0
        if not table:
            return lower
        return self._smoothed(table, ch, lower)

    def _smoothed(self, table, ch, lower):
        total = sum(table.values())
        seen = table.get(ch, 0)
        if choices.METHOD == "additive":
            a = choices.ADDITIVE_ALPHA
            own = (seen + a) / (total + a * len(self.vocab))
            return 0.5 * own + 0.5 * lower if choices.INTERPOLATE and lower else own
        if choices.METHOD == "absolute":
            d = min(max(choices.DISCOUNT, 0.0), 1.0)
            reserved = d * len(table) / total
            return max(seen - d, 0) / total + reserved * (lower or 1.0 / len(self.vocab))
        if choices.METHOD == "witten_bell":
            types = len(table)
            return (seen + types * (lower or 1.0 / len(self.vocab))) / (total + types)
        raise ValueError(f"unknown METHOD {choices.METHOD!r}")


def main():
    train, test = corpus()
    model = NGram(fold(train), int(choices.ORDER))
    folded = fold(test)
    bits = 0.0
    for i, ch in enumerate(folded):
        p = model.prob(folded[max(0, i - model.order) : i], ch if ch in model.counts[0][""] else "\0")
        bits -= math.log2(max(p, 1e-12))
    print(json.dumps({"bpc": round(bits / len(test), 6), "train_chars": len(train), "test_chars": len(test)}))


if __name__ == "__main__":
    main()
