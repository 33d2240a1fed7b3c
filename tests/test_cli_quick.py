"""`git agora post` starts without click (`cli.quick`): its parser must read every command line it takes
exactly as click reads it, and leave every other one to click."""

from __future__ import annotations

import random

import click
import pytest

import git_agora.cli.post as post_module
from agora_testing import agora
from git_agora.cli.group import cli
from git_agora.cli.quick import MULTIPLE, RECORD, SINGLE, PostCall, parse_post
from git_agora.contribution import Verdict

VALUES = ["x", "an insight: it helps", "-x", "-", "", "=", "a=b", "--tag", "post", "ünï ✓", "-m", "confirmed", "1..2"]
CANONICAL = [
    ["post", "-m", "an insight", "--tag", "insight"],
    ["post", "-m", "x", "--tag", "insight", "--json"],
    ["post", "--message=x", "--parent", "abc", "--parent", "def", "--metric", "bpb=1.2", "--meta", "k=v"],
    ["post", "-mx", "--target", "abc", "--verdict", "partial", "--predict", "1..2", "--ref", "u#s"],
    ["post", "-m", "x", "--new-tag", "ablaton", "--tag", "insight", "--metric", "bcp=2", "--new-metric=bcp"],
    ["--account", "bob", "-C", ".", "post", "-m", "x", "--account", "carol", "--json", "-"],
]


def click_call(argv: list[str]) -> PostCall | None:
    """The call click makes for `argv`; None when click refuses it (or runs no post)."""
    seen: list[PostCall] = []
    original = post_module.run_post
    post_module.run_post = lambda call: seen.append(call) or 0
    try:
        cli.main(args=list(argv), prog_name="git agora", standalone_mode=False)
    except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        return None
    finally:
        post_module.run_post = original
    return seen[0] if seen else None


def random_argv(rng: random.Random, file_path: str) -> list[str]:
    words: list[str] = []
    for _ in range(rng.randrange(0, 3)):  # the group's options
        name = rng.choice(["--account", "-C", "--account=", "-C"])
        value = rng.choice([*VALUES, ".", file_path])
        words += [name + value] if name.endswith("=") or rng.random() < 0.2 else [name, value]
    words.append(rng.choice(["post"] * 12 + ["pots", "-h"]))
    options = [*SINGLE, *MULTIPLE, RECORD, "--unknown", "-h", "--", "-q", "positional"]
    for _ in range(rng.randrange(0, 8)):
        name, value = rng.choice(options), rng.choice(VALUES + [v.value for v in Verdict])
        form = rng.random()
        if form < 0.15 and name.startswith("--"):
            words.append(f"{name}={value}")
        elif form < 0.3 and len(name) == 2 and name != "--":
            words.append(name + value)
        elif form < 0.4 or name == RECORD:
            words.append(name)  # a flag, or a value taken from whatever comes next
        else:
            words += [name, value]
    return words


@pytest.mark.parametrize("argv", CANONICAL, ids=lambda a: " ".join(a)[:40])
def test_plain_command_lines_start_without_click_and_read_as_click_reads_them(argv, monkeypatch):
    monkeypatch.delenv("AGORA_ACCOUNT", raising=False)
    quick = parse_post(argv)
    assert quick is not None
    assert quick == click_call(argv)


@pytest.mark.parametrize("env", [None, "", "dora"], ids=["no-env", "empty-env", "env"])
def test_random_command_lines_read_the_same_or_go_to_click(env, monkeypatch, tmp_path):
    """3,000 command lines: whatever the quick parser takes, click reads the same way; whatever click
    refuses, the quick parser leaves to it (click's help is printed for some: captured)."""
    if env is None:
        monkeypatch.delenv("AGORA_ACCOUNT", raising=False)
    else:
        monkeypatch.setenv("AGORA_ACCOUNT", env)
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    rng = random.Random(str(env))
    taken = 0
    for _ in range(1000):
        argv = random_argv(rng, str(a_file))
        quick = parse_post(argv)
        if quick is not None:
            assert quick == click_call(argv), argv
            taken += 1
    assert taken > 150


def test_a_post_loads_none_of_the_modules_it_was_freed_from(project):
    """A post is the command an agent runs after every idea: its start-up is most of its cost, and these
    modules each cost it milliseconds (pathlib, shutil and tempfile came back once through a module the
    push loaded: 7 ms of a 77 ms post). The clone's first post reads the project's settings once (what it
    learns is remembered), so the second is the one every later post is like."""
    agora(project, "post", "-m", "the first", "--tag", "insight")
    posted = agora(project, "post", "-m", "light", "--tag", "insight", env={"PYTHONPROFILEIMPORTTIME": "1"})
    loaded = {line.split("|")[-1].strip() for line in posted.stderr.splitlines() if line.startswith("import time:")}
    assert len(loaded) > 50, posted.stderr[-500:]  # the interpreter reported its imports
    heavy = {"pathlib", "shutil", "tempfile", "click", "rich", "numpy", "pyarrow", "dataclasses", "ssl"}
    assert loaded & heavy == set()
