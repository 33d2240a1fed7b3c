"""`leaks.redact`: what readers show of secret-shaped text; the hints that let clean text skip the search."""

from __future__ import annotations

import pytest

from git_agora.leaks import _PATTERN, REDACTED, SECRET_MARK, redact, redact_data, secret_in
from git_agora.visible import visible

SHAPES = [
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz\nAAAA\n-----END OPENSSH PRIVATE KEY-----",
    "key: b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    "ghp_" + "a1B2" * 9,
    "github_pat_" + "A1b2_" * 10,
    "glpat-" + "x" * 20,
    "xoxb-123456789012-abcdef",
    "AKIAABCDEFGHIJKLMNOP",
    "AIza" + "b" * 35,
    "sk-" + "z" * 40,
    "hf_" + "Q" * 34,
    "env: OPENAI_API_KEY=abcdefgh12345",
]


@pytest.mark.parametrize("text", SHAPES)
def test_every_shape_is_redacted_and_found_through_the_hints(text):
    held = f"a title holding {text} somewhere"
    assert _PATTERN.search(held) and secret_in(held) is not None  # the hints never hide a match
    shown = redact(held)
    assert secret_in(shown) is None and REDACTED in shown and shown.endswith("] somewhere")
    assert visible(held) == shown


def test_redaction_keeps_json_and_clean_text_as_they_are():
    data = {"note": "sk-" + "k" * 40, "n": 1, "list": ["plain"]}
    assert redact_data(data) == {"note": "[redacted: an API key]", "n": 1, "list": ["plain"]}
    assert redact("Witten-Bell smoothing: bpc 2.729") == "Witten-Bell smoothing: bpc 2.729"
    assert SECRET_MARK == "secret-shaped text"
