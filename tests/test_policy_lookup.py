"""`policy.lookup_path_column` answers as `lookup_paths` does, in row order, whether one `git cat-file`
or several share the questions, with null for a path absent from a tree and for a row without a tree."""

from __future__ import annotations

import pyarrow as pa

from agora_testing import git
from git_agora import policy
from git_agora.refs.store import Repository


def _counted(path_column, calls: list[int]):
    def counted(repo, trees, path):
        calls.append(len(trees))
        return path_column(repo, trees, path)

    return counted


def test_a_column_of_trees_answers_as_single_queries_in_one_or_several_processes(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    trees = []
    for n in range(5):
        (tmp_path / "agora.toml").write_text(f"n = {n}\n")
        (tmp_path / "eval").mkdir(exist_ok=True)
        (tmp_path / "eval" / f"e{n % 2}.py").write_text(f"x = {n}\n")
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-q", "-m", f"c{n}")
        trees.append(git(tmp_path, "rev-parse", "HEAD^{tree}").strip())
    repo = Repository.discover(tmp_path)
    column = pa.array([*trees, None, *trees] * 3, pa.string())
    for path in ["agora.toml", "eval/e0.py", "eval/e1.py", "missing.py", "eval"]:
        single = [policy.lookup_paths(repo, [(tree, path)])[0] if tree else None for tree in column.to_pylist()]
        alone = policy.lookup_path_column(repo, column, path).to_pylist()
        assert alone == single and alone[5] is None
        assert (path == "missing.py") == all(oid is None for oid in alone)
        monkeypatch.setattr(policy, "SPLIT", 4)
        monkeypatch.setattr(policy, "_cores", lambda: 4)
        calls: list[int] = []
        monkeypatch.setattr(policy, "_path_column", _counted(policy._path_column, calls))
        assert policy.lookup_path_column(repo, column, path).to_pylist() == alone
        assert len(calls) == 4 and sum(calls) == len(column)
        monkeypatch.setattr(policy, "PART", 3)  # more parts than cores: answered in order all the same
        calls.clear()
        assert policy.lookup_path_column(repo, column, path).to_pylist() == alone
        assert len(calls) == -(-len(column) // 3) and max(calls) == 3 and sum(calls) == len(column)
        monkeypatch.undo()
    assert policy.lookup_path_column(repo, pa.array([], pa.string()), "agora.toml").to_pylist() == []


def test_evaluator_violations_by_row(tmp_path):
    """Per row position: a changed protected file, an amendment whose own policy is broken, a row under
    a broken policy; rows that keep the files have no problem."""
    git(tmp_path, "init", "-q")

    def commit(files: dict[str, str]) -> tuple[str, str]:
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-q", "--allow-empty", "-m", "c")
        return git(tmp_path, "rev-parse", "HEAD").strip(), git(tmp_path, "rev-parse", "HEAD^{tree}").strip()

    setup, setup_tree = commit({"agora.toml": '[eval]\nfiles = ["e.py"]\n', "e.py": "score = 1\n", "m.py": "a"})
    kept, kept_tree = commit({"m.py": "b"})
    changed, changed_tree = commit({"e.py": "score = 0\n"})
    broken, broken_tree = commit({"agora.toml": "[eval\n"})
    under_broken, under_broken_tree = commit({"m.py": "c"})
    rows = [
        (kept, kept_tree, setup),
        (changed, changed_tree, setup),
        (broken, broken_tree, broken),
        (under_broken, under_broken_tree, broken),
        (setup, None, setup),
    ]
    columns = [pa.array(column, pa.string()) for column in zip(*rows)]
    repo = Repository.discover(tmp_path)
    problems = policy.evaluator_violations(repo, *columns, None)
    for asked in ([kept_tree, changed_tree, under_broken_tree, setup_tree], [kept_tree]):  # all, or too few
        ahead = policy.answers_ahead(repo, setup, pa.array(asked * 2 + [None], pa.string()))
        assert ahead is not None and ahead.policy == setup and len(ahead.trees) == len(asked)
        assert policy.evaluator_violations(repo, *columns, None, ahead) == problems
    assert policy.answers_ahead(repo, broken, columns[1]) is None
    wrong = policy.Answers(
        setup,
        pa.array([kept_tree, changed_tree]),
        {"agora.toml": pa.array([None, None]), "e.py": pa.array([None, None])},
    )
    assert sorted(policy.evaluator_violations(repo, *columns, None, wrong)) == [0, 1, 2, 3], "the answers are used"
    assert sorted(problems) == [1, 2, 3]
    assert problems[1] == ["changes e.py, which the policy fixes (only a policy amendment by the setup account may)"]
    assert problems[2][0].startswith("the amended policy is broken: ")
    assert problems[3][0].startswith(f"its policy {broken[:12]} is broken: ")
