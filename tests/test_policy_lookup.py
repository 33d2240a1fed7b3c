"""`policy.lookup_paths` answers the same, in query order, whether one `git cat-file` or several share
the queries."""

from __future__ import annotations

from agora_testing import git
from git_agora import policy
from git_agora.refs.store import Repository


def test_queries_shared_among_processes_answer_as_one_process(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    trees = []
    for n in range(5):
        (tmp_path / "agora.toml").write_text(f"n = {n}\n")
        (tmp_path / "eval").mkdir(exist_ok=True)
        (tmp_path / "eval" / f"e{n % 2}.py").write_text(f"x = {n}\n")
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-q", "-m", f"c{n}")
        trees.append(git(tmp_path, "rev-parse", "HEAD^{tree}").strip())
    paths = ["agora.toml", "eval/e0.py", "eval/e1.py", "missing.py", "eval"]
    queries = [(tree, path) for tree in trees for path in paths] * 3
    repo = Repository.discover(tmp_path)
    alone = policy.lookup_paths(repo, queries)
    assert alone[3] is None and alone[0] is not None and len(set(alone[: len(paths) * 5])) > 5
    monkeypatch.setattr(policy, "SPLIT", 4)
    monkeypatch.setattr(policy, "_cores", lambda: 4)
    shared, calls = [], []
    one = policy._lookup_paths
    monkeypatch.setattr(policy, "_lookup_paths", lambda r, q: calls.append(len(q)) or one(r, q))
    shared = policy.lookup_paths(repo, queries)
    assert shared == alone and len(calls) == 4 and sum(calls) == len(queries)
