"""Text output a newcomer can read: analyze laid out for 80 and 120 columns without splitting a field,
titles cut at words, quality in percent, a legend, a final newline everywhere, the typo suggestion,
and the README's plain-git command listing contributions only."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from itertools import takewhile
from pathlib import Path

import pexpect
import pytest
from rich.cells import cell_len

from agora_testing import agora, make_clone
from git_agora.cli.render import cut, flow

README = Path(__file__).parents[1] / "README.md"
TOML = """[metric]
name = "bpc"
direction = "min"
tolerance = 0.01

[embeddings]
model = "hashing"  # lexical embeddings: no model to load
"""
TITLES = [
    "Interpolated Kneser-Ney smoothing with a larger context window for rare characters",
    "Lowercase the context but score the text as written, which keeps capitals honest",
    "Witten-Bell smoothing replaces additive counts in every order of the model",
    "Order four with absolute discounting at a half",
    "Back to order three: the larger context overfits the training topics",
]


@pytest.fixture
def busy(tmp_path, remote):
    """A project with several results, an insight and a hypothesis, all with long titles."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    (a / "agora.toml").write_text(TOML)
    agora(a, "init")
    for n, title in enumerate(TITLES):
        (a / "model.py").write_text(f"order = {4 + n}\n")
        agora(a, "push", "-m", title, "--tag", "result", "--metric", f"bpc={2.0 - 0.1 * n:.2f}")
    agora(a, "post", "--tag", "insight", "-m", "Insight: " + TITLES[0].lower() + " is worth a second look soon")
    agora(a, "post", "--tag", "hypothesis", "-m", "Hypothesis: a much longer context would keep improving")
    return a


def env(columns: int) -> dict[str, str]:
    return {"COLUMNS": str(columns)}


def reason_fields(reason: str) -> list[str]:
    return re.split(r"(?<=[,;]) ", reason)


@pytest.mark.parametrize("columns", [80, 120])
def test_analyze_text_never_splits_a_field(busy, columns):
    data = agora(busy, "analyze", "--json").json()
    text = agora(busy, "analyze", env=env(columns)).stdout
    lines = text.splitlines()
    assert text.endswith("\n") and all(cell_len(line) <= columns for line in lines), columns
    assert all(line == line.rstrip() for line in lines)
    suggestions = [s for slot in data["slots"]["slots"] for s in slot["suggestions"][:3]]
    assert suggestions
    for s in suggestions:
        head = next(line for line in lines if line.startswith(f"    {s['sha'][:10]}"))
        shown = head.split(f"{s['account']}", 1)[1].strip()
        assert shown == s["title"] or (
            shown.endswith("…") and s["title"].startswith(shown[:-1]) and s["title"][len(shown) - 1] in " ,;:-"
        ), (shown, s["title"])  # whole, or cut at a word boundary
        below = list(takewhile(lambda line: line.startswith(" " * 6), lines[lines.index(head) + 1 :]))
        got = [field for line in below for field in reason_fields(line.strip())]
        assert got == reason_fields(s["reason"]), (columns, below)  # lines break only between fields
        assert re.search(r"quality \d+%", s["reason"])
    assert not any(line.rstrip().endswith(("U =", "U", "quality", "cluster", "of size")) for line in lines)
    header = next(line for line in lines if line.startswith("rank"))
    row = lines[lines.index(header) + 1]
    assert "quality" in header and re.search(r"\b100%", row)  # one quality scale: percent


def test_legend_with_the_flag_and_on_a_terminal_but_never_in_a_pipe_by_default(busy):
    legend = agora(busy, "analyze", "--summary", "--legend", env=env(100)).stdout
    assert "Legend" in legend and "UCB, U" in legend and "bunching" in legend and "improvement share" in legend
    assert "Legend" not in agora(busy, "analyze", "--summary").stdout

    child = pexpect.spawn(
        "git", ["agora", "analyze", "--summary"], cwd=str(busy), env={**os.environ, "COLUMNS": "80"}, encoding="utf-8"
    )
    child.expect("Legend", timeout=60)
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    assert child.exitstatus == 0


def test_every_output_ends_with_a_newline(busy):
    sha = agora(busy, "log", "--json").json()[0]["sha"]
    for args in (
        ("whoami",),
        ("log",),
        ("show", sha),
        ("lineage", sha),
        ("stats",),
        ("analyze", "--summary"),
        ("search", "smoothing"),
        ("index",),
        ("fetch",),
        ("log", "--json"),
    ):
        out = agora(busy, *args, env=env(80))
        assert out.stdout.endswith("\n"), args
        assert out.stderr == "" or out.stderr.endswith("\n"), args


def test_an_unknown_command_suggests_the_nearest_and_points_at_dash_h(tmp_path):
    r = agora(tmp_path, "analyse", check=False)
    assert r.returncode == 2 and r.stdout == ""
    assert (
        r.stderr
        == "git agora: error: 'analyse' is not a git agora command. Did you mean 'analyze'? See 'git agora -h'.\n"
    )
    assert "--help" not in agora(tmp_path, "zzz", check=False).stderr


def test_the_readmes_plain_git_command_lists_contributions_only(busy):
    command = next(line for line in README.read_text().splitlines() if line.startswith("git log --glob="))
    out = subprocess.run(shlex.split(command), cwd=busy, capture_output=True, text=True, check=True).stdout
    assert "agora log:" not in out
    assert len(out.splitlines()) == len(agora(busy, "log", "--limit", "100", "--json").json())


def test_cut_and_flow():
    assert cut("short title", 20) == "short title"
    assert cut("Interpolated Kneser-Ney smoothing", 20) == "Interpolated…"
    assert cut("Supercalifragilistic", 8) == "Superca…"  # one long word: cut inside it
    assert flow(["a,", "bb,", "U = 1.5"], 9, indent=2) == ["a, bb,", "  U = 1.5"]
    assert flow(["x"], 10, first="note:") == ["note: x"]


HOSTILE_TEXT = "ok \x1b[2J\x1b[31mred\x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \u202egnp.exe\rhidden\x1b[8m"


def test_text_from_the_record_never_steers_the_terminal(tmp_path, remote):
    """ANSI sequences, OSC 8 links, bidi overrides and a bare carriage return in a description, title or
    trailer value are shown escaped by log, show, analyze, search and lineage, and a cut never splits an
    escape; --json keeps them as they are."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    agora(a, "init", "--metric", "bpc", "--direction", "min")
    (a / "model.py").write_text("order = 4\n")
    sha = agora(
        a,
        "push",
        "-m",
        f"{HOSTILE_TEXT} title\n\nbody {HOSTILE_TEXT}",
        "--tag",
        "result",
        "--metric",
        "bpc=2",
        "--meta",
        f"note={HOSTILE_TEXT}",
        "--json",
    ).json()["sha"]
    outputs = {
        "log": agora(a, "log").stdout,
        "show": agora(a, "show", sha).stdout,
        "analyze": agora(a, "analyze").stdout,
        "search": agora(a, "search", "red", "link").stdout,
        "lineage": agora(a, "lineage", sha).stdout,
    }
    for name, text in outputs.items():
        for raw in ("\x1b", "\x07", "\u202e", "\r"):
            assert raw not in text, f"{name} printed {raw!r} raw"
        assert not re.search(r"\\(x[0-9a-f]?|u[0-9a-f]{0,3})(…|\s|$)", text), f"{name} cut inside an escape"
    assert "\\x1b[2J" in outputs["log"] and "\\u202e" in outputs["show"]
    data = agora(a, "show", sha, "--json").json()  # --json is data, as it was (a description's \r is a line break)
    assert HOSTILE_TEXT.replace("\r", "\n") in data["description"] and data["metadata"]["note"] == HOSTILE_TEXT


def test_whoami_and_status_show_each_field_of_the_identity_on_its_own_line(busy):
    identity = agora(busy, "whoami", "--json").json()
    expected = [f"{name:8} {'-' if value is None else value}" for name, value in identity.items()]
    assert agora(busy, "whoami").stdout.splitlines() == expected
    assert agora(busy, "status").stdout.splitlines()[: len(expected)] == expected
    assert [line.split()[0] for line in expected] == ["account", "remote", "setup", "base", "queued"]
    assert identity["account"] == "alice" and len(identity["setup"]) == 40 and identity["queued"] == 0
