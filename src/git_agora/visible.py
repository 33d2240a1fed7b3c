"""Text from someone else made safe for a terminal: control characters shown, never obeyed.

A description, an account name or an evaluator's stderr may hold ANSI sequences (clear the screen,
hide text, colour the rest of the line), OSC 8 links, bidi overrides or a bare carriage return. Shown
raw they rewrite what the reader sees. `visible` escapes them the way git's `core.quotePath` shows odd
bytes: C0 and C1 controls, DEL and the bidi controls become `\\xNN` / `\\uNNNN`; newline and tab stay
when `keep_newlines` (a multi-line block) and are escaped otherwise. Text shaped like a key or a token
is shown redacted (`leaks.redact`): a terminal may be a public CI log.
"""

from __future__ import annotations

import re

from .leaks import redact

_BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_UNSAFE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, keep_newlines: bool = False) -> str:
    """`text` with every character that steers a terminal shown as an escape instead, and each
    secret-shaped part redacted."""
    return (_UNSAFE if keep_newlines else _UNSAFE_LINE).sub(_escape, redact(text))


def cut(text: str, width: int) -> str:
    """`visible(text)` cut to at most `width` characters, never inside an escape (an ellipsis ends a
    cut line)."""
    shown = visible(text[: width + 1])  # a character shows as one or more: the rest is cut anyway
    if len(shown) <= width:
        return shown
    out, used = [], 0
    for piece in re.split(r"(\\x[0-9a-f]{2}|\\u[0-9a-f]{4})", shown):
        if used + len(piece) > width - 1:
            if not piece.startswith("\\"):
                out.append(piece[: width - 1 - used])
            break
        out.append(piece)
        used += len(piece)
    return "".join(out) + "…"
