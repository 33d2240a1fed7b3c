"""Benchmark the lexical fallback's encoder (`hashing-sklearn`): `embedding.sklearn_hashing`, which computes
HashingVectorizer's features without importing scikit-learn, against scikit-learn's own HashingVectorizer
with the same log1p weights and count sketch (what the encoder ran before), on the same texts, in the
same run.

Each side runs in a fresh process per round, alternating which goes first: `cold` is the import plus the
first encode (what one `analyze` or `search` that embeds anything pays), `warm` a second encode of the
same texts in that process. It also checks that both give the same vectors (max abs difference).

    python eval/bench/bench_hashing.py [--texts 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ratio, write_json

# Each side defines `encode(texts)`, its imports and set-up timed as part of the cold figure.
START = """
import json, sys, time
start = time.perf_counter()
"""

OURS = """
from git_agora.embedding.backends import hashing_backend
encode = hashing_backend(use_sklearn=True).encode
"""

SKLEARN = """
import numpy as np, scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer
from git_agora.embedding import backends
n = backends._HASH_FEATURES
vectorizer = HashingVectorizer(n_features=n, ngram_range=(1, 2), stop_words="english", alternate_sign=False, norm=None)
columns, signs = backends._sketch(np.arange(n))
rows = np.repeat(np.arange(n), backends._SKETCH_COPIES)
projection = sp.csr_matrix((signs.ravel(), (rows, columns.ravel())), shape=(n, backends.HASH_DIM))
def encode(texts):
    counts = vectorizer.transform(texts).astype(np.float32)
    counts.data = np.log1p(counts.data)
    return backends.unit_rows(np.asarray((counts @ projection).todense(), dtype=np.float32))
"""

TIME_AND_REPORT = """
texts = json.load(open(sys.argv[1]))
vectors = encode(texts)
cold = time.perf_counter() - start
start = time.perf_counter()
encode(texts)
warm = time.perf_counter() - start
import numpy as np
np.save(sys.argv[2], vectors)
print(json.dumps({"cold": cold, "warm": warm}))
"""

WORDS = (
    "the a of raise lower learning rate warmup schedule cosine decay batch size dropout weight tying layer norm "
    "attention head width depth embedding transfer donor bigram unigram svd rank prior corpus token bpb loss "
    "seed noise replicate verify confirmed failed partial insight hypothesis naïve café 東京 don't x-ray 3e-4"
).split()


def texts(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60))) for _ in range(count)]


def run(side: str, corpus: Path, out: Path) -> dict:
    code = START + (OURS if side == "ours" else SKLEARN) + TIME_AND_REPORT
    proc = subprocess.run([sys.executable, "-c", code, str(corpus), str(out)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{side}: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    import numpy as np

    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "texts.json"
        corpus.write_text(json.dumps(texts(args.texts)))
        times: dict[str, list[dict]] = {"ours": [], "sklearn": []}
        for round_ in range(args.rounds):
            for side in ("ours", "sklearn") if round_ % 2 == 0 else ("sklearn", "ours"):
                times[side].append(run(side, corpus, Path(scratch) / f"{side}.npy"))
        ours, theirs = np.load(Path(scratch) / "ours.npy"), np.load(Path(scratch) / "sklearn.npy")
    difference = float(np.abs(ours - theirs).max())
    median = {
        side: {k: statistics.median(r[k] for r in rows) for k in ("cold", "warm")} for side, rows in times.items()
    }
    print(f"{args.texts} texts, {args.rounds} rounds, medians; vectors' max abs difference {difference:.2g}")
    for kind in ("cold", "warm"):
        a, b = median["ours"][kind], median["sklearn"][kind]
        print(f"  {kind:4}  sklearn_hashing {a:.2f} s   scikit-learn {b:.2f} s   ratio {ratio(a, b):.2f}x")
    write_json("hashing", {"texts": args.texts, "rounds": times, "median": median, "max_abs_difference": difference})
    return 0 if difference <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
