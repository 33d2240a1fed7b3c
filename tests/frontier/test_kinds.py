"""Kinds as data: each reserved tag is defined once (`contribution.KINDS`) and everything else reads it.

A throwaway kind added through the definition alone is weighed (evidence), validated (the reader's and
writer's rules, and the index's fast path agrees), shown (the views read its flags) and documented
(docs/protocol.md's table, whose check reports it missing). docs/architecture.md's "Adding a kind" names
every module that reads the definition.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from frontier_tables import everyone, node, sha, table

from git_agora.contribution import (
    KINDS,
    RESERVED_TAGS,
    VERDICT_WEIGHTS,
    Contribution,
    Kind,
    git_identity,
    intrinsic_problems,
    kind_problems,
)
from git_agora.frontier.frame import build_frame
from git_agora.frontier.views import ViewParams, leaves, recent
from git_agora.index import parallel, quick
from git_agora.index.reader import RawCommit

ROOT = Path(__file__).parents[2]
PROTOCOL = ROOT / "docs" / "protocol.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SRC = ROOT / "src" / "git_agora"
NOW = 1_900_000_000


# --- the protocol's table, generated from KINDS -------------------------------------------------


def weight_text(kind: Kind) -> str:
    if "Agora-Verdict" in kind.trailers:
        return ", ".join(f"{verdict} {weight:+g}" for verdict, weight in VERDICT_WEIGHTS.items())
    if not kind.propagates or kind.weight == 0:
        return "0"
    return "its other tags'" if kind.weight is None else f"{kind.weight:+g}"


def table_row(kind: Kind) -> str:
    needs = ", ".join(f"`{trailer}`" for trailer in kind.trailers)
    yes = {True: "yes", False: "no"}
    cells = (f"`{kind.name}`", weight_text(kind), yes[kind.propagates], yes[kind.buildable], needs, kind.meaning)
    return "| " + " | ".join(cells) + " |"


def docs_problems(kinds: dict[str, Kind], text: str) -> list[str]:
    """What docs/protocol.md says about the reserved tags that `kinds` does not (one line each)."""
    rows = {
        m[1]: m[0] for m in re.finditer(r"^\| `([a-z0-9._:+-]+)` \|.*\|$", section(text, "### Reserved tags"), re.M)
    }
    problems = [f"a row for `{name}`, which is no reserved tag" for name in rows if name not in kinds]
    for name, kind in kinds.items():
        if name not in rows:
            problems.append(f"no row for `{name}`")
        elif rows[name] != table_row(kind):
            problems.append(f"the row of `{name}` is not {table_row(kind)!r}")
    listed = re.search(r"A tag is known when it is reserved \(([^)]*)\)", text)
    named = re.findall(r"`([^`]+)`", listed[1]) if listed else []
    if named != list(kinds):
        problems.append(f"the reserved tags listed under typos are {named}, not {list(kinds)}")
    return problems


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n#", start + len(heading))
    return text[start : end if end >= 0 else None]


def test_the_protocol_documents_every_kind_as_defined():
    assert docs_problems(KINDS, PROTOCOL.read_text()) == []


@pytest.mark.parametrize("name", [name for name, kind in KINDS.items() if kind.trailers])
def test_a_kind_without_the_trailers_it_needs_breaks_its_rule(name):
    assert kind_problems((name,), (sha("a"),), {}, (), None, {}) != []


def test_posts_help_lists_the_kinds_posted_by_tag():
    from git_agora.cli.quick import OPTIONS

    tag_help = next(option.help for option in OPTIONS if option.name == "tags")
    posted = [name for name, kind in KINDS.items() if kind.posted]
    assert posted and tag_help == f"A tag (repeatable): {', '.join(posted)}, ..."


# --- a throwaway kind, added through the definition alone ------------------------------------------


def _one_parent(tags, parents, metrics, targets, verdict, metadata) -> list[str]:
    return ["a draft has exactly one parent"] if len(parents) != 1 else []


DRAFT = Kind("draft", 7.0, "a throwaway kind", rule=_one_parent)


@pytest.fixture
def with_kind(monkeypatch):
    """Adds a kind to KINDS for one test: `with_kind(**flags)` gives its name."""

    def add(**flags) -> str:
        monkeypatch.setitem(KINDS, DRAFT.name, DRAFT._replace(**flags))
        return DRAFT.name

    return add


def project(tag: str, metric: float | None = 1.0):
    return [
        node("setup", "org", tags=("setup",)),
        node("a", "ann", "setup", t=1, metric=2.0),
        node("d", "bob", "a", t=2, tags=(tag,), metric=metric),
    ]


def frame_of(rows):
    contributions = table(rows)
    return build_frame(contributions, root=everyone(contributions))


def test_a_new_kind_is_weighed_by_its_definition(with_kind):
    """Its weight goes to its parent; a kind that does not propagate weighs nothing and is no follow-on."""
    name = with_kind()
    assert name in RESERVED_TAGS
    weighed = frame_of(project(name))
    a = 1  # node of "a"
    assert weighed.score[a] == 7.0 and weighed.follow_ons[a] == 1
    with_kind(propagates=False)
    quiet = frame_of(project(name))
    assert quiet.score[a] == 0.0 and quiet.follow_ons[a] == 0


def test_a_new_kind_is_shown_by_its_definition(with_kind):
    """Buildable (scored), work of its own (leaves) and counted (recent) are read from its flags."""
    name = with_kind()
    frame = frame_of(project(name))
    d = 2
    assert frame.buildable[d] and frame.scored[d]
    assert sha("d") in shas(leaves(frame, 10, ViewParams())) and sha("d") in shas(recent(frame, 10, ViewParams()))
    with_kind(buildable=False, work=False, counted=False)
    frame = frame_of(project(name))
    assert not frame.buildable[d] and not frame.scored[d]
    assert sha("d") not in shas(leaves(frame, 10, ViewParams()))
    assert sha("d") not in shas(recent(frame, 10, ViewParams()))


def shas(listing) -> list[str]:
    return [row["sha"] for row in listing.rows]


def test_a_new_kind_is_validated_by_its_rule_on_both_row_paths(with_kind):
    name = with_kind()
    parents = (sha("a"), sha("b"))
    broken = Contribution("bob", (name,), "a draft", parents=parents)
    assert "a draft has exactly one parent" in intrinsic_problems(broken)
    assert kind_problems((name,), parents, {}, (), None, {}) == ["a draft has exactly one parent"]
    commit = raw(broken)
    assert quick.row_values(commit, None, NOW) is None  # the fast path leaves it to the general one
    assert "a draft has exactly one parent" in parallel.general_values(commit, None, NOW).reasons
    fine = raw(broken._replace(parents=parents[:1]))
    values = quick.row_values(fine, None, NOW)
    assert values is not None and values == parallel.general_values(fine, None, NOW) and values.reasons == []


def raw(c: Contribution) -> RawCommit:
    person = git_identity(c.account)
    return RawCommit("f" * 40, "e" * 40, NOW - 100, c.parents, c.to_message(), None, person, person)


def test_a_new_kind_is_documented_or_the_check_says_so(with_kind):
    name = with_kind()
    assert f"no row for `{name}`" in docs_problems(KINDS, PROTOCOL.read_text())
    assert table_row(KINDS[name]) == "| `draft` | +7 | yes | yes |  | a throwaway kind |"


# --- docs/architecture.md: "Adding a kind" names every reader of the definition --------------------


DEFINITION = {"KINDS", "Kind", "kind_mask", "kind_problems", "default_weights", "RESERVED_TAGS"}


def readers_of_the_definition() -> set[str]:
    """The modules (paths under src/git_agora) that import a name of the definition."""
    found = set()
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for item in ast.walk(tree):
            if not isinstance(item, ast.ImportFrom) or not (item.module or "").endswith(("contribution", "graph")):
                continue
            if {alias.name for alias in item.names} & DEFINITION:
                found.add(str(path.relative_to(SRC)))
    return found


def test_the_architecture_names_every_module_that_reads_the_kinds():
    text = section(ARCHITECTURE.read_text(), "## Adding a kind")
    named = {f for f in re.findall(r"`((?:[a-z_]+/)*[a-z_]+\.py)`", text) if not f.startswith("tests/")}
    assert {name for name in named if not (SRC / name).exists()} == set(), "named but missing"
    missing = readers_of_the_definition() - named
    assert not missing, f"docs/architecture.md's 'Adding a kind' does not name {sorted(missing)}"


RESERVED_LITERAL = re.compile(r"^(?:" + "|".join(map(re.escape, KINDS)) + r")$")


def test_no_module_spells_a_reserved_tag_where_it_tests_tags():
    """`"wip" in tags`, `tag_mask(t, "wip")`, `tags=("wip",)`: a name from the definition instead."""
    spelled = []
    for path in SRC.rglob("*.py"):
        if path.name == "contribution.py" or "demo" in path.parts:
            continue
        for item in ast.walk(ast.parse(path.read_text())):
            literal = None
            if isinstance(item, ast.Compare) and isinstance(item.ops[0], ast.In | ast.NotIn):
                literal = item.left if "tag" in ast.unparse(item.comparators[0]) else None
            elif isinstance(item, ast.Call) and getattr(item.func, "id", getattr(item.func, "attr", "")) in (
                "tag_mask",
                "_has_tag",
            ):
                literal = next((a for a in item.args[1:] if isinstance(a, ast.Constant)), None)
            elif isinstance(item, ast.keyword) and item.arg == "tags" and isinstance(item.value, ast.Tuple | ast.List):
                literal = next((e for e in item.value.elts if isinstance(e, ast.Constant)), None)
            if (
                isinstance(literal, ast.Constant)
                and isinstance(literal.value, str)
                and RESERVED_LITERAL.match(literal.value)
            ):
                spelled.append(f"{path.relative_to(SRC)}:{item.lineno} {literal.value!r}")
    assert spelled == []


IN_WORDS = {"post", "show", "propagates", "buildable", "work", "counted", "posted", "own_work", "uncounted"}


def test_the_architecture_lists_for_kinds_and_trailers_name_what_exists():
    """Each row of "Adding a kind" and "Adding a trailer": its files exist, and each name it gives
    (`GRAMMAR`, `Contribution.trailers`, ...) is in one of the row's files."""
    for heading in ("## Adding a kind", "## Adding a trailer"):
        for row in re.findall(r"^\| (?!what|---).*\|$", section(ARCHITECTURE.read_text(), heading), re.M):
            files = [f for f in re.findall(r"`((?:[a-z_]+/)*[a-z_]+\.py)`", row) if not f.startswith("tests/")]
            assert files and all((SRC / f).exists() for f in files), row
            modules = [(SRC / f).read_text() for f in files]
            for name in re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)(?:\.[a-z_]+)?`", row):
                if any(f.startswith(f"{name}.") or f"/{name}." in f for f in files) or name in IN_WORDS:
                    continue  # a command or a field named in words
                assert any(re.search(rf"\b{name}\b", m) for m in modules), (name, row)
