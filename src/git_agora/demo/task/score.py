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


MAX_ORDER = 12


def check(data):
    """Refuse a model the scorer cannot trust: every probability it gives must be positive and sum to 1
    over the alphabet, which the smoothing formulas guarantee only for well-formed counts (positive
    integers, known characters, contexts of the right length)."""
    if not isinstance(data, dict):
        raise SystemExit("model.json is not an object")
    order = data.get("order")
    if not isinstance(order, int) or isinstance(order, bool) or not 0 <= order <= MAX_ORDER:
        raise SystemExit(f"order must be an integer from 0 to {MAX_ORDER}")
    if data.get("method") not in METHODS:
        raise SystemExit(f"unknown METHOD {data.get('method')!r}")
    for knob in ("additive_alpha", "discount"):
        value = data.get(knob)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < math.inf:
            raise SystemExit(f"{knob} must be a finite number >= 0")
    if not isinstance(data.get("interpolate"), bool) or not isinstance(data.get("lowercase_context"), bool):
        raise SystemExit("interpolate and lowercase_context must be true or false")
    vocab = data.get("vocab")
    if not isinstance(vocab, list) or "\0" not in vocab or len(set(vocab)) != len(vocab):
        raise SystemExit("vocab must be a list of distinct characters holding \\0")
    if not all(isinstance(ch, str) and len(ch) == 1 for ch in vocab):
        raise SystemExit("vocab must hold single characters")
    counts = data.get("counts")
    if not isinstance(counts, list) or len(counts) != order + 1:
        raise SystemExit("counts must hold one table per order, 0 to order")
    known = set(vocab)
    for k, level in enumerate(counts):
        if not isinstance(level, dict):
            raise SystemExit(f"counts[{k}] must be an object")
        for context, table in level.items():
            if len(context) != k or not isinstance(table, dict) or not table:
                raise SystemExit(f"counts[{k}] has a bad context {context[:20]!r}")
            for ch, n in table.items():
                if ch not in known or not isinstance(n, int) or isinstance(n, bool) or n < 1:
                    raise SystemExit(f"counts[{k}][{context[:20]!r}] must map known characters to positive counts")
    if "" not in counts[0]:
        raise SystemExit("counts[0] must hold the unigram table (context '')")


class Model:
    def __init__(self, data):
        check(data)
        self.order = data["order"]
        self.method = data["method"]
        self.alpha = float(data["additive_alpha"])
        self.discount = min(float(data["discount"]), 1.0)
        self.interpolate = data["interpolate"]
        self.lowercase_context = data["lowercase_context"]
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
    try:
        with open(os.path.join(sys.argv[1], "model.json")) as handle:
            model = Model(json.load(handle))
    except (OSError, ValueError) as exc:  # ValueError: not JSON
        raise SystemExit(f"model.json cannot be read: {exc}") from None
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
