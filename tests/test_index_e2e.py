"""The Parquet index: validation in the reader, automatic updates, damage and concurrency."""

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pyarrow.parquet as pq
import pytest

from agora_testing import agora, forge, forge_root, git, make_clone, publish_forged_log
from git_agora.contribution import Contribution, Verdict
from git_agora.index.state import FORMAT_VERSION


def test_invalid_commits_are_indexed_with_reasons(tmp_path, remote, project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    own = Contribution(account="mallory", tags=("result",), description="mine", parents=(setup,), metrics={"bpc": 1.0})
    own_sha = forge(m, own.to_message(), [setup])
    self_check = Contribution(
        account="mallory",
        tags=("verification",),
        description="I confirm myself",
        parents=(own_sha,),
        target=own_sha,
        verdict=Verdict.CONFIRMED,
    )
    hypothesis = Contribution(
        account="mallory", tags=("hypothesis",), description="h", parents=(setup,), metrics={"bpc": 0.1}
    )
    not_ours = "just a commit\n"
    entries = [
        own_sha,
        forge(m, self_check.to_message(), [own_sha]),
        forge(m, hypothesis.to_message(), [setup]),
        forge(m, not_ours, [setup]),
    ]
    second_setup = Contribution(account="mallory", tags=("setup",), description="another root")
    empty_tree = subprocess.run(["git", "mktree"], cwd=m, input="", capture_output=True, text=True).stdout.strip()
    entries.append(forge_root(m, second_setup.to_message(), empty_tree))
    publish_forged_log(m, "mallory", entries)

    agora(project, "fetch")
    rejected = agora(project, "log", "--rejected", "--json").json()
    reasons = {r["title"]: r["reasons"] for r in rejected}
    assert "a verification of one's own work" in reasons["I confirm myself"]
    assert "a hypothesis carries no metric" in reasons["h"]
    assert "unsigned, and the project requires signatures" in reasons["h"]  # forged with plain git
    assert any("not a contribution" in r for r in reasons["just a commit"])
    assert any("second setup" in r for r in reasons["another root"])
    assert reasons["mine"] == ["unsigned, and the project requires signatures"]  # otherwise fine
    text = agora(project, "log", "--rejected").stdout
    assert "rejected: a verification of one's own work" in text
    agora(project, "index", "--check")


def test_a_plain_git_fetch_is_noticed(tmp_path, remote, project):
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    agora(project, "post", "-m", "fresh insight", "--tag", "insight")
    git(b, "fetch", "-q", "origin", "+refs/agora/log/*:refs/agora/remotes/origin/log/*")
    titles = [row["title"] for row in agora(b, "log", "--json").json()]
    assert "fresh insight" in titles


def test_incremental_updates_equal_a_rebuild_byte_for_byte(tmp_path, remote, project):
    b = make_clone(tmp_path, "b", str(remote), "bob")
    for n in range(3):
        agora(project, "post", "-m", f"insight {n}", "--tag", "insight")
        agora(b, "fetch")
        agora(b, "post", "-m", f"reply {n}", "--tag", "insight")
    agora(b, "index", "--check")


def test_a_rewritten_log_is_quarantined_and_reported(tmp_path, remote, project):
    agora(project, "post", "-m", "first insight", "--tag", "insight")
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    old_tip = git(remote, "rev-parse", "refs/agora/log/alice").strip()
    # alice's log on the remote is rewound by someone with write access
    git(remote, "update-ref", "refs/agora/log/alice", f"{old_tip}~1")
    result = agora(b, "fetch", "--json")
    assert "was rewritten" in result.stderr
    quarantined = git(b, "for-each-ref", "--format=%(refname) %(objectname)", "refs/agora/quarantine/").split()
    assert quarantined[1] == old_tip
    [reported] = result.json()["rewritten_logs"]
    assert (reported["account"], reported["old_tip"], reported["quarantine_ref"]) == ("alice", old_tip, quarantined[0])
    titles = [row["title"] for row in agora(b, "log", "--json").json()]
    assert "first insight" in titles, "nothing once fetched disappears"


def segment_files(clone):
    return sorted((clone / ".git" / "agora" / "index" / "segments").glob("*[0-9].parquet"))


def test_damaged_and_future_indexes(project):
    agora(project, "index")
    index_dir = project / ".git" / "agora" / "index"
    [segment] = segment_files(project)
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: the checksum notices
    segment.write_bytes(bytes(data))
    r = agora(project, "log", "--json")
    assert "rebuilt it from Git" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert [f.name for f in segment_files(project)] > [segment.name]  # a rebuild never reuses a name
    agora(project, "post", "-m", "after damage", "--tag", "insight")
    segment_files(project)[0].write_bytes(b"PAR1")  # truncated
    r = agora(project, "log", "--json")
    assert "rebuilt it from Git" in r.stderr
    assert "after damage" in [row["title"] for row in r.json()]
    agora(project, "index", "--check")

    manifest = index_dir / "manifest.json"
    data = json.loads(manifest.read_text())
    data["format_version"] = 99
    manifest.write_text(json.dumps(data))
    r = agora(project, "log", check=False)
    assert r.returncode == 1 and "newer than this git-agora understands" in r.stderr


PLAIN_FETCH = (
    "+refs/agora/log/*:refs/agora/remotes/origin/log/*",
    "+refs/agora/identity/*:refs/agora/remotes/origin/identity/*",
)


def test_concurrent_updates_do_not_corrupt(tmp_path, remote, project):
    for n in range(5):
        agora(project, "post", "-m", f"insight {n}", "--tag", "insight")
    b = make_clone(tmp_path, "b", str(remote), "bob")
    git(b, "fetch", "-q", "origin", *PLAIN_FETCH)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: agora(b, "log", "--json", "--limit", "100"), range(6)))
    assert all(len(r.json()) == 6 for r in results)
    agora(b, "index", "--check")
    assert sum(pq.read_metadata(f).num_rows for f in segment_files(b)) == 6


def test_index_tables_are_readable_by_plain_tools(tmp_path, project):
    insight = agora(project, "post", "-m", "an insight", "--tag", "insight", "--json").json()
    agora(project, "index", "--export", str(tmp_path / "export"))
    edges = pq.read_table(tmp_path / "export" / "edges.parquet").to_pylist()
    assert [(e["child"], e["cross_account"]) for e in edges] == [(insight["sha"], False)]
    assert pq.read_table(tmp_path / "export" / "accounts.parquet").to_pylist()[0]["contributions"] == 2
    contributions = pq.read_table(tmp_path / "export" / "contributions.parquet").to_pylist()
    assert {r["title"] for r in contributions} == {"Setup: a", "an insight"}
    assert all(r["valid"] for r in contributions)
    segments = [pq.read_table(f) for f in segment_files(project)]  # each segment is plain Parquet too
    assert sum(t.num_rows for t in segments) == 2


def test_an_index_of_the_old_format_is_rebuilt_once(project):
    agora(project, "post", "-m", "an insight", "--tag", "insight")
    index_dir = project / ".git" / "agora" / "index"
    agora(project, "index")
    shutil.rmtree(index_dir / "segments")
    (index_dir / "manifest.json").unlink()
    (index_dir / "state.json").write_text(json.dumps({"format_version": 2, "tips": {}}))  # format 2: whole tables
    (index_dir / "contributions.parquet").write_bytes(b"PAR1 old")
    r = agora(project, "log", "--json")
    assert "an insight" in [row["title"] for row in r.json()]
    assert r.stderr.strip() == f"git agora: note: the index format changed (2 -> {FORMAT_VERSION}); rebuilt it from Git"
    assert not (index_dir / "state.json").exists() and not (index_dir / "contributions.parquet").exists()
    assert agora(project, "log").stderr == ""


@pytest.mark.parametrize("old_format", [3, 4, 5, 8])
def test_an_index_of_an_older_format_is_rebuilt_once_with_one_line(project, old_format):
    """Format 4 was judged by older rules (a day's future window), format 8 by an older `.git` check:
    their rows are not reused."""
    agora(project, "post", "-m", "an insight", "--tag", "insight")
    index_dir = project / ".git" / "agora" / "index"
    agora(project, "index")
    tips = dict(
        line.split(" ")[::-1] for line in git(project, "for-each-ref", "--format=%(objectname) %(refname)").splitlines()
    )
    old = {"format_version": old_format, "tips": tips, "accounts": {}, "segments": [], "checksum": 0}
    (index_dir / "manifest.json").write_text(json.dumps(old))
    r = agora(project, "log", "--json")
    assert "an insight" in [row["title"] for row in r.json()]
    assert (
        r.stderr.strip()
        == f"git agora: note: the index format changed ({old_format} -> {FORMAT_VERSION}); rebuilt it from Git"
    )
    assert json.loads((index_dir / "manifest.json").read_text())["format_version"] == FORMAT_VERSION
    assert agora(project, "log").stderr == ""
