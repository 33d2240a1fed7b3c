"""Escaping: every piece of text that comes from a contribution goes through `esc` (HTML) or
`json_data` (data for the page scripts), so a description like `<script>` or `<img onerror=...>`
shows as text and never runs.

`Markup` marks a string that is already HTML; `esc` returns it unchanged and escapes anything else.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

_escape = html.escape
_JSON_UNSAFE = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
_NEEDS_ESCAPE = re.compile(r"[&<>\"']")


_HEX = re.compile(r"[0-9a-f]{40}")


class Markup(str):
    """A string that is HTML already (built from escaped parts)."""

    __slots__ = ()


def esc(value: Any) -> Markup:
    """HTML for `value`: Markup as is, None as nothing, anything else as escaped text."""
    if type(value) is str:
        return Markup(_escape(value, quote=True) if _NEEDS_ESCAPE.search(value) else value)
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    return Markup(_escape(str(value), quote=True))


def join(parts: Iterable[Any], sep: str = "") -> Markup:
    return Markup(sep.join(esc(p) for p in parts))


def json_data(data: Any) -> Markup:
    """JSON safe inside `<script type="application/json">`: no `<`, `>` or `&` survive, so the text
    can neither close the element nor open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, code in _JSON_UNSAFE:
        text = text.replace(char, code)
    return Markup(text)


def when(timestamp: int | None) -> str:
    if timestamp is None:
        return ""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def number(value: float | None, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def short(sha: str | None) -> str:
    return (sha or "")[:10]


def lineage_href(root: str, sha: str) -> str:
    return f"{root}lineage/{sha}.html"


def link(root: str, sha: str, text: Any = None, known: bool = True) -> Markup:
    """A link to a contribution's page (plain text when no page exists for it). A sha that is not
    40 hex digits (it cannot be: Git names commits so) is escaped like any text."""
    if not _HEX.fullmatch(sha):
        return esc(sha if text is None else text)
    label = short(sha) if text is None else esc(text)
    if not known:
        return Markup(f'<span class="sha" title="{sha}">{label}</span>')
    return Markup(f'<a href="{root}c/{sha[:2]}/{sha}.html" title="{sha}">{label}</a>')
