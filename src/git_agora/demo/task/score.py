"""The score step of the demo task (an evaluator file, fixed by the setup): read the model the build
step wrote to ARTIFACT/model.json and score the held-out text *as written*, in bits per character.

The probabilities are normalised over one fixed alphabet, every character of the corpus as written:
the model's mass for characters it never saw ("\0") is shared equally among them. A model trained on
lowercased text therefore still has to predict every capital letter, and pays for it.

    python3 score.py ARTIFACT        prints {"bpc": ..., "train_chars": ..., "test_chars": ...}
    python3 score.py ARTIFACT --quick   scores only the first QUICK_CHARS held-out characters (not comparable)
"""

import json
import math
import os
import sys

import corpus

METHODS = ("additive", "absolute", "witten_bell")
QUICK_CHARS = 2_000


class Model:
    def __init__(self, data):
        self.order = int(data["order"])
        self.method = data["method"]
        if self.method not in METHODS:
            raise SystemExit(f"unknown METHOD {self.method!r}")
        self.alpha = float(data["additive_alpha"])
        self.discount = min(max(float(data["discount"]), 0.0), 1.0)
        self.interpolate = bool(data["interpolate"])
        self.lowercase_context = bool(data["lowercase_context"])
        self.vocab = list(data["vocab"])
        self.counts = data["counts"]

    def prob(self, context, ch, k=None):
        k = self.order if k is None else k
        context = context[-k:] if k else ""
        if k == 0:
            return self._smoothed(self.counts[0].get("", {}), ch, 1.0 / len(self.vocab))
        table = self.counts[k].get(context)
        lower = self.prob(context, ch, k - 1) if (self.interpolate or not table) else 0.0
        if not table:
            return lower
        return self._smoothed(table, ch, lower)

    def _smoothed(self, table, ch, lower):
        total = sum(table.values())
        seen = table.get(ch, 0)
        if self.method == "additive":
            own = (seen + self.alpha) / (total + self.alpha * len(self.vocab))
            return 0.5 * own + 0.5 * lower if self.interpolate and lower else own
        if self.method == "absolute":
            reserved = self.discount * len(table) / total
            return max(seen - self.discount, 0) / total + reserved * (lower or 1.0 / len(self.vocab))
        types = len(table)
        return (seen + types * (lower or 1.0 / len(self.vocab))) / (total + types)


def main():
    with open(os.path.join(sys.argv[1], "model.json")) as handle:
        model = Model(json.load(handle))
    train, test = corpus.split()
    if "--quick" in sys.argv[2:]:
        test = test[:QUICK_CHARS]
    known = model.counts[0].get("", {})
    unseen = len(set(train + test) - set(known)) or 1  # the alphabet's characters the model never saw
    context_text = test.lower() if model.lowercase_context else test
    bits = 0.0
    for i, ch in enumerate(test):
        context = context_text[max(0, i - model.order) : i]
        p = model.prob(context, ch) if ch in known else model.prob(context, "\0") / unseen
        bits -= math.log2(max(p, 1e-12))
    print(json.dumps({"bpc": round(bits / len(test), 6), "train_chars": len(train), "test_chars": len(test)}))


if __name__ == "__main__":
    main()
