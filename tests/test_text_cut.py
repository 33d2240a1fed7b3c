"""Cutting a title for the terminal looks at a bounded prefix, however long the title: the work is
linear in what is shown, not quadratic in the title (a 60 KB title made `analyze` take minutes)."""

from __future__ import annotations

import rich.cells

from git_agora import visible
from git_agora.cli import render

TITLE = "字字 word " * 8000  # 64,000 characters, wide and narrow ones


def measured_characters(monkeypatch, budget: int) -> list[int]:
    """The length of every string `rich.cells.cell_len` is asked to measure from now on; measuring more
    than `budget` characters in all fails at once (the quadratic cutter would take minutes to finish)."""
    sizes: list[int] = []
    real = rich.cells.cell_len

    def counting(text: str, *args, **kwargs) -> int:
        sizes.append(len(text))
        assert sum(sizes) <= budget, f"measured {sum(sizes)} characters, more than {budget}"
        return real(text, *args, **kwargs)

    monkeypatch.setattr(rich.cells, "cell_len", counting)
    return sizes


def test_the_terminal_cutter_measures_a_bounded_prefix(monkeypatch):
    sizes = measured_characters(monkeypatch, 20 * (4 * 80 + 16))  # a binary search over the first 336
    shown = render.cut(TITLE, 80)
    assert shown.endswith("…") and real_cells(shown) <= 80 and shown.startswith("字字 word")
    assert max(sizes) <= 4 * 80 + 16


def test_zero_width_characters_cost_a_binary_search_not_a_character_at_a_time(monkeypatch):
    title = "\u0301" * 20000 + "a" * 20000  # combining accents take no cell: the whole title is measured
    measured_characters(monkeypatch, 20 * len(title))  # about log2(40,000) measures; quadratic: 20,000
    shown = render.cut(title, 60)
    assert shown.endswith("…") and real_cells(shown) == 60


def test_the_plain_cutter_escapes_only_what_it_shows(monkeypatch):
    seen: list[int] = []
    real = visible.visible
    monkeypatch.setattr(visible, "visible", lambda text, *a: seen.append(len(text)) or real(text, *a))
    assert visible.cut("\x1b[2J" + "x" * 60000, 20) == "\\x1b[2Jxxxxxxxxxxxx…"
    assert max(seen) <= 21


def test_a_table_never_measures_its_title_column(monkeypatch):
    sizes = measured_characters(monkeypatch, 100 * (4 * 60 + 16))
    lines = render._table([("sha", "left"), ("title", "left")], [["abc", TITLE], ["def", "short"]], 60)
    assert [line.split()[0] for line in lines] == ["sha", "abc", "def"] and lines[2].endswith("short")
    assert max(sizes) <= 4 * 60 + 16


def real_cells(text: str) -> int:
    from rich.cells import _cell_len

    return _cell_len(text, "auto")
