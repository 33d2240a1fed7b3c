"""Key material and common token shapes in what a command is about to publish: a second line of defence.

The first line is the sandbox's allow-list and the record's numbers-only rule (`evaluate.record`): what a
build prints never reaches a commit. This scan catches what still would (a description pasted with a
token in it, a forged `--meta`): every contribution's message is scanned before it is written, and the
command refuses in one line, naming the kind of secret, never echoing it. It only knows shapes, so it
misses secrets that look like nothing in particular; nothing relies on it alone.
"""

from __future__ import annotations

import re

_SHAPES = (
    ("a private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ("an OpenSSH private key", r"b3BlbnNzaC1rZXktdjE"),  # base64 of "openssh-key-v1", armour or not
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("a GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("an AWS access key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("an API key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{32,}"),
    ("a Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    ("a secret variable", r"\b[A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD)[A-Z0-9_]*=[^\s\"'`]{8,}"),
)
_PATTERN = re.compile("|".join(f"(?P<k{i}>{shape})" for i, (_, shape) in enumerate(_SHAPES)))


def secret_in(text: str) -> str | None:
    """The kind of the first secret-shaped text in `text`, or None."""
    match = _PATTERN.search(text)
    if match is None:
        return None
    return _SHAPES[int(match.lastgroup[1:])][0] if match.lastgroup else "a secret"
