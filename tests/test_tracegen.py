"""The synthetic trace generator (eval/bench/tracegen.py) makes projects the real CLI accepts as valid."""

from __future__ import annotations

import collections
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_agora.contribution import Contribution, intrinsic_problems

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _load_tracegen():
    spec = importlib.util.spec_from_file_location("tracegen", ROOT / "eval" / "bench" / "tracegen.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["tracegen"] = module
    spec.loader.exec_module(module)
    return module


tracegen = _load_tracegen()
sys.path.insert(0, str(ROOT / "eval" / "bench"))
import signed  # noqa: E402 - the signed twin writer lives beside tracegen


def _env(home: Path) -> dict[str, str]:
    """What conftest's autouse fixture sets, for module-scoped fixtures that run before it."""
    (home / ".gitconfig").write_text('[init]\n\tdefaultBranch = main\n[protocol "file"]\n\tallow = always\n')
    env = {k: v for k, v in os.environ.items() if k != "AGORA_ACCOUNT"}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
    )
    return env


def run(cwd: Path, env: dict, *args: str) -> str:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def clone(parent: Path, name: str, url: Path, env: dict) -> Path:
    path = parent / name
    path.mkdir()
    run(path, env, "git", "init", "-q")
    run(path, env, "git", "remote", "add", "origin", str(url))
    return path


def all_messages(repo: Path) -> list[tuple[str, list[str], str]]:
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "--all", "-z", "--format=%H %P%n%B"], capture_output=True, text=True, check=True
    ).stdout
    commits = []
    for record in filter(None, out.split("\0")):
        header, _, message = record.partition("\n")
        sha, *parents = header.split()
        commits.append((sha, parents, message))
    return commits


# --- small, in-process checks ------------------------------------------------------------------


def test_small_trace_is_valid_and_deterministic(tmp_path):
    a = tracegen.generate(tmp_path / "a.git", 120, 5, seed=3)
    b = tracegen.generate(tmp_path / "b.git", 120, 5, seed=3)
    assert a.new == b.new, "same seed, same shas"
    commits = all_messages(tmp_path / "a.git")
    logs = [c for c in commits if "Agora-Log-Format: 1" in c[2]]
    contributions = {
        sha: Contribution.from_message(msg, sha=sha, parents=parents)
        for sha, parents, msg in commits
        if "\nAgora-Format: " in msg
    }
    assert len(contributions) == 120 and len(logs) == 120
    for c in contributions.values():
        assert intrinsic_problems(c) == [], c
        assert all(p in contributions for p in c.parents)
        if c.target:
            assert contributions[c.target].account != c.account
    assert sum(c.is_setup for c in contributions.values()) == 1
    refs = subprocess.run(
        ["git", "-C", str(tmp_path / "a.git"), "for-each-ref", "--format=%(refname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert refs and all(r.startswith("refs/agora/log/") for r in refs)


def test_append_continues_the_log(tmp_path):
    path = tmp_path / "p.git"
    info = tracegen.generate(path, 40, 3)
    tip = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "refs/agora/log/ada"], capture_output=True, text=True, check=True
    ).stdout.strip()
    more = tracegen.append(path, "ada", n=2, kind="result", parent_mode="uniform")
    assert more.contributions == info.contributions + 2 and len(more.new) == 2
    out = subprocess.run(
        ["git", "-C", str(path), "log", "--first-parent", "--format=%H %P", "-2", "refs/agora/log/ada"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    newest, older = (line.split() for line in out)
    assert newest[1:] == [older[0], more.new[1]]
    assert older[1:] == [tip, more.new[0]]


def test_the_signed_twin_verifies_with_git_and_every_reader_accepts_it(tmp_path):
    origin, twin = tmp_path / "o.git", tmp_path / "s.git"
    tracegen.generate(origin, 60, 3, seed=1)
    keys = signed.sign_project(origin, twin)
    tracegen.append(origin, "zed", n=2, kind="result")
    assert set(signed.sign_project(origin, twin)) == {"zed"}, "a second run signs only what was appended"
    allowed = tmp_path / "allowed_signers"
    keys |= {"zed": signed.AccountKey("zed")}
    allowed.write_text("".join(f'{name}@agora namespaces="git" {key.public}\n' for name, key in keys.items()))
    shas = subprocess.run(
        ["git", "-C", str(twin), "rev-list", "--exclude=refs/unsigned/*", "--all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(shas) == 2 * 62 + 4  # contributions, log commits, identities
    for sha in shas[:: len(shas) // 12]:
        subprocess.run(
            ["git", "-C", str(twin), "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", sha],
            check=True,
            capture_output=True,
        )
    (tmp_path / "home").mkdir()
    env = _env(tmp_path / "home")
    path = clone(tmp_path, "clone", twin, env)
    assert "fetched 62 new contributions" in run(path, env, "git", "agora", "fetch")
    assert "no rejected commits" in run(path, env, "git", "agora", "log", "--rejected")


def test_scaled_mix_keeps_the_paper_proportions():
    counts = tracegen._scale(tracegen.PAPER_MIX, 100_000 - 1)
    assert sum(counts.values()) == 99_999
    assert abs(counts["result"] / 99_999 - 1074 / 1702) < 1e-3


# --- the paper-scale project through the real CLI -----------------------------------------------


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    base = tmp_path_factory.mktemp("paper")
    env = _env(tmp_path_factory.mktemp("home"))
    info = tracegen.generate(base / "origin.git", tracegen.PAPER_CONTRIBUTIONS, tracegen.PAPER_ACCOUNTS, seed=0)
    path = clone(base, "clone", base / "origin.git", env)
    out = run(path, env, "git", "agora", "fetch")
    assert "fetched 1703 new contributions" in out
    return path, env, info


def test_paper_scale_index_check(paper):
    path, env, _ = paper
    assert "index ok" in run(path, env, "git", "agora", "index", "--check")


def test_paper_scale_counts(paper):
    import json

    path, env, info = paper
    rows = json.loads(run(path, env, "git", "agora", "log", "--limit", "5000", "--json"))
    assert len(rows) == 1703
    tags = collections.Counter(t for row in rows for t in row["tags"] if t in tracegen.PAPER_TAG_COUNTS)
    assert dict(tags) == tracegen.PAPER_TAG_COUNTS
    assert info.tag_counts == tracegen.PAPER_TAG_COUNTS
    assert len({row["account"] for row in rows}) == 17
    assert json.loads(run(path, env, "git", "agora", "log", "--rejected", "--json")) == []
    results = [row for row in rows if "result" in row["tags"]]
    assert sum(len(row["parents"]) > 1 for row in results) / len(results) > 0.03
    best = min(row["metrics"]["bpb"] for row in results)
    assert 0.95 < best < 1.1
    assert max(row["metrics"]["bpb"] for row in results) > 3.3
    verdicts = collections.Counter(row["verdict"] for row in rows if row["verdict"])
    assert verdicts["confirmed"] > verdicts["partial"] + verdicts["failed"] > 0


@pytest.mark.slow
def test_ten_thousand_fetched_in_steps(tmp_path):
    env = _env(tmp_path)
    origin = tmp_path / "origin.git"
    tracegen.generate(origin, 10_000, 40, seed=1)
    path = clone(tmp_path, "clone", origin, env)
    run(path, env, "git", "agora", "fetch")
    accounts = ["ada", "bayes", "newcomer"]
    for step in range(4):
        info = tracegen.append(origin, accounts[step % 3], n=1 + 7 * step, parent_mode=("recent", "uniform")[step % 2])
        out = run(path, env, "git", "agora", "fetch")
        assert f"fetched {len(info.new)} new contribution" in out
    assert "index ok" in run(path, env, "git", "agora", "index", "--check")
    import json

    assert json.loads(run(path, env, "git", "agora", "log", "--rejected", "--json")) == []
    assert (
        len(json.loads(run(path, env, "git", "agora", "log", "--limit", "20000", "--json"))) == 10_000 + 1 + 8 + 15 + 22
    )


def test_paper_scale_stats_and_analyze_agree_on_scored_results_and_the_best(paper):
    import json

    path, env, _ = paper
    summary = json.loads(run(path, env, "git", "agora", "analyze", "--json", "--model", "hashing"))["summary"]
    stats = json.loads(run(path, env, "git", "agora", "stats", "--json"))
    assert stats["scored_results"] == summary["results"] > 1000
    assert stats["best_sha"] == summary["best"]["sha"] and stats["best_value"] == summary["best"]["metric"]
