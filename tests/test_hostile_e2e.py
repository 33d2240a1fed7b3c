"""No commit can hurt a reader: a hostile corpus of 10,000 commits, pushed once, then every reader."""

from __future__ import annotations

import json
import os
import re
import subprocess

import hostile
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agora_testing import agora, git, make_clone
from git_agora.contribution import Contribution, ContributionError
from git_agora.index import reader
from git_agora.refs.store import Repository

LOGS = [  # read last by each clone, after its index was rebuilt and checked: the valid rows, the rejected ones
    ["log", "--limit", "100000", "--json"],
    ["log", "--rejected", "--limit", "100000", "--json"],
]
READERS = [
    ["fetch"],
    ["analyze", "--json", "--model", "hashing"],
    ["analyze", "--model", "hashing"],
    ["stats"],
    ["search", "--model", "hashing", "deep", "meta"],
    ["whoami"],
    ["sync"],
    ["index", "--rebuild"],
    ["index", "--check"],
    *LOGS,
]
FIRST_READ = [["fetch"], ["analyze", "--json", "--model", "hashing"], ["index", "--check"], *LOGS]  # a fresh clone's


@pytest.mark.slow
def test_ten_thousand_hostile_commits_hurt_no_reader(tmp_path, remote, project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    corpus = hostile.write(m, setup, 10_000)
    tree = git(m, "rev-parse", f"{setup}^{{tree}}").strip()
    literal = [
        hostile.literal_commit(m, tree, setup, when, hostile.message(f"time {when}", hostile.trailers()))
        for when in ("-5", "99999999999999999999", "18446744073709551617", "")
    ]
    Repository.discover(m).append_to_log("mallory", literal)
    git(m, "push", "-q", "origin", "refs/agora/log/mallory")

    shown_kinds = False
    stall = {"AGORA_COMMIT_GRAPH_STALL_SECONDS": "2"}  # git's writer spins on the hostile times: give up sooner
    for clone in (project, make_clone(tmp_path, "fresh", str(remote), "nora")):
        readers = READERS if clone == project else FIRST_READ  # the rest read the same index
        read = {}
        for args in readers:
            result = agora(clone, *args, check=False, timeout=600, env=stall)
            assert result.returncode == 0 and "Traceback" not in result.stderr, (args, result.stderr[-2000:])
            if args == ["fetch"]:
                assert "commit-graph writer made no progress for 2 s" in result.stderr, result.stderr[-2000:]
            read[tuple(args)] = result
        rejected = {row["sha"]: row["reasons"] for row in read[tuple(LOGS[1])].json()}
        missing = [sha for sha in corpus.bad + literal if not rejected.get(sha)]
        assert not missing, f"{len(missing)} hostile commits were not rejected with a reason"
        valid = {row["sha"] for row in read[tuple(LOGS[0])].json()}
        assert set(corpus.shas.values()) <= valid | set(rejected)  # nothing vanishes
        unsigned = "unsigned, and the project requires signatures"  # plain-git commits of a signed project
        assert sum(unsigned in reasons for reasons in rejected.values()) > corpus.good // 2
        if not shown_kinds:  # one of each kind of rejection: both clones hold the same rows
            kinds = one_per_kind(rejected, corpus.bad)
            assert len(kinds) >= 10, kinds
            for sha in [*kinds, *literal]:
                shown = agora(clone, "show", sha, check=False)
                assert shown.returncode in (0, 1) and "Traceback" not in shown.stderr, shown
            shown_kinds = True


def one_per_kind(rejected: dict[str, list[str]], shas: list[str]) -> list[str]:
    """The first of `shas` rejected for each kind of reason (its first reason with quoted values, object
    ids and numbers left out: the same rule broken by another value is the same kind; 16 kinds here)."""
    kinds: dict[str, str] = {}
    for sha in shas:
        kind = re.sub(r"'[^']*'|\"[^\"]*\"|\b[0-9a-f]{7,}\b|\d+", "#", rejected[sha][0])
        kinds.setdefault(kind, sha)
    return list(kinds.values())


def test_the_observed_attacks_one_by_one(tmp_path, remote, project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    r = agora(project, "post", "-m", "deep", "--tag", "insight", "--meta", "x=" + hostile.deep_json(980), check=False)
    assert r.returncode == 1 and "nests deeper" in r.stderr
    r = agora(project, "post", "-m", "d" * (70 * 1024), "--tag", "insight", check=False)
    assert r.returncode == 1 and "over 64 KiB" in r.stderr
    scissors = agora(project, "post", "-m", f"a\n{hostile.CUT}\nb", "--tag", "insight", "--json").json()
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=git(project, "log", "-1", "--format=%B", scissors["sha"]),
        capture_output=True,
        text=True,
    ).stdout
    assert "Agora-Account: alice" in parsed  # git sees the trailers the tool wrote
    assert agora(project, "show", scissors["sha"], "--json").json()["description"] == f"a\n{hostile.CUT}\nb"
    assert setup


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_the_parser_is_total(data):
    text = data.decode("utf-8", "surrogateescape")
    try:
        Contribution.from_message(text)
    except ContributionError:
        pass
    record = b"%s %s %s\n" % (b"a" * 40, b"b" * 40, data[:12]) + data
    raw = reader._raw_commit(record)
    assert reader.parse(raw) is not None


def test_deep_json_never_reaches_the_json_parser():
    text = "Agora-Meta: " + "[" * 10_000
    msg = f"x\n\nAgora-Format: 1\nAgora-Account: a\nAgora-Tag: insight\n{text}\n"
    with pytest.raises(ContributionError, match="nests deeper"):
        Contribution.from_message(msg)
    assert json.dumps({"ok": os.sep})
