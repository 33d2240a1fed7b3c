"""scikit-learn's ``HashingVectorizer`` features, computed without importing scikit-learn.

The ``hashing-sklearn`` fallback hashes word unigrams and bigrams exactly as
``HashingVectorizer(n_features=2**18, ngram_range=(1, 2), stop_words="english", alternate_sign=False,
norm=None)`` does: lower-case, tokens of ``(?u)\\b\\w\\w+\\b``, English stop words dropped before the
bigrams are made, each feature's UTF-8 bytes hashed with MurmurHash3 (32 bits, seed 0) and taken as
``abs(h) % n_features``. Importing scikit-learn costs 1.3-1.8 s (its package imports scipy.stats), far
more than encoding a query; this module reads only the stop-word list from the installed package's
source file. `tests/test_embedding.py` checks its features, columns and counts against scikit-learn's.
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path

TOKEN = re.compile(r"(?u)\b\w\w+\b")  # HashingVectorizer's default token_pattern
STOP_WORDS_FILE = Path("feature_extraction") / "_stop_words.py"
_MASK = 0xFFFFFFFF


def available() -> bool:
    """Whether scikit-learn is installed (its stop-word list is what makes these features its own)."""
    return stop_words_file() is not None


def stop_words_file() -> Path | None:
    spec = importlib.util.find_spec("sklearn")  # finds the package without importing it
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / STOP_WORDS_FILE
    return path if path.is_file() else None


@cache
def english_stop_words() -> frozenset[str]:
    """``ENGLISH_STOP_WORDS`` from the installed scikit-learn's source file (a plain frozenset literal)."""
    path = stop_words_file()
    if path is None:
        raise ImportError("scikit-learn is not installed")
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # defines one frozenset
    words = namespace.get("ENGLISH_STOP_WORDS")
    if not isinstance(words, frozenset):
        raise ImportError(f"{path} holds no ENGLISH_STOP_WORDS")
    return words


def features(text: str, stop_words: frozenset[str]) -> list[str]:
    """The analyzer's output: unigrams without stop words, then the bigrams of what is left."""
    words = [w for w in TOKEN.findall(text.lower()) if w not in stop_words]
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


_known: dict[tuple[str, int], int] = {}  # (feature, n_features) -> column: descriptions share most words
_KNOWN_AT_MOST = 1 << 20


def columns(found: list[str], n_features: int) -> list[int]:
    """``column`` of each feature, remembered (a text's vocabulary is mostly its neighbours')."""
    if len(_known) > _KNOWN_AT_MOST:
        _known.clear()
    out = []
    for feature in found:
        key = (feature, n_features)
        hit = _known.get(key)
        if hit is None:
            hit = _known[key] = column(feature, n_features)
        out.append(hit)
    return out


def column(feature: str, n_features: int) -> int:
    """``FeatureHasher``'s column of a string feature: ``abs(murmurhash3_32(utf8, seed=0)) % n``, with
    its rule for -2**31, whose absolute value does not fit."""
    h = murmurhash3_32(feature.encode("utf-8"))
    if h == -(2**31):
        return (2**31 - 1 - (n_features - 1)) % n_features
    return abs(h) % n_features


def murmurhash3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data``, as a signed integer (what ``sklearn.utils.murmurhash3_32``
    returns with ``positive=False``)."""
    h = seed & _MASK
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        h ^= _scramble(int.from_bytes(data[i : i + 4], "little"))
        h = _rotl(h, 13)
        h = (h * 5 + 0xE6546B64) & _MASK
    tail = data[whole:]
    if tail:
        h ^= _scramble(int.from_bytes(tail, "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def _scramble(k: int) -> int:
    k = (k * 0xCC9E2D51) & _MASK
    return (_rotl(k, 15) * 0x1B873593) & _MASK


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK
