"""Key material and common token shapes in what a command is about to publish: a second line of defence.

The first line is the sandbox's allow-list and the record's numbers-only rule (`evaluate.record`): what a
build prints never reaches a commit. This scan catches what still would (a description pasted with a
token in it, a forged `--meta`): every contribution's message is scanned before it is written, and the
command refuses in one line, naming the kind of secret, never echoing it. It only knows shapes, so it
misses secrets that look like nothing in particular; nothing relies on it alone.

Readers meet such text too (a commit crafted with plain git is not scanned): they show it with each
match replaced by `redact`'s fixed words, and mark it (`SECRET_MARK`), never echo it. What git-agora
writes from another's work (a verdict, a witness record) carries no text it did not write, so this scan
never stops a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_SHAPES = (
    # a key's whole armoured block and base64 run: what `redact` replaces (the scan needs only the start)
    ("a private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*-----)?"),
    ("an OpenSSH private key", r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]*"),  # base64 of "openssh-key-v1", armour or not
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
# Every shape holds one of these literally: text with none of them is clean, at a twentieth of the cost
# of the search (a rebuild's fast path asks this of every commit).
_HINTS: tuple[str, ...] = (
    "-----BEGIN ",
    "b3BlbnNzaC1rZXktdjE",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
)
_HINTS += ("xox", "AKIA", "ASIA", "AIza", "sk-", "hf_", "API_KEY", "TOKEN", "SECRET", "PASSWORD")
SECRET_HINTS = "|".join(map(re.escape, _HINTS))  # a pattern RE2 reads too (`index.columnar`)
_HINTED = re.compile(SECRET_HINTS)  # one pass over the text, not one per hint
SECRET_MARK = "secret-shaped text"  # what readers mark a contribution whose text looks like a secret
REDACTED = "[redacted: "  # how each redacted part starts (`redact`): readers find the mark by it


def secret_in(text: str) -> str | None:
    """The kind of the first secret-shaped text in `text`, or None."""
    if _HINTED.search(text) is None:
        return None
    match = _PATTERN.search(text)
    if match is None:
        return None
    return _kind(match)


def redact(text: str) -> str:
    """`text` with each secret-shaped part replaced by `[redacted: <kind>]` (what readers show; the
    words hold no quote, backslash or markup, so JSON and HTML around them stay what they were)."""
    if secret_in(text) is None:
        return text
    return _PATTERN.sub(lambda match: f"{REDACTED}{_kind(match)}]", text)


def redact_data(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings) with `redact` applied to every string, keys too."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(k) if isinstance(k, str) else k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value


def _kind(match: re.Match[str]) -> str:
    return _SHAPES[int(match.lastgroup[1:])][0] if match.lastgroup else "a secret"
