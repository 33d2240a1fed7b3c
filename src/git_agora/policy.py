"""The policy in force: which agora.toml and which evaluator files judge a contribution.

The setup fixes the project's policy: its `agora.toml` and the evaluator files that `[eval] files`
names in its tree. A *policy amendment* (a contribution tagged `policy` by the setup's account) may
change them; every contribution is judged by the policy in force on its first-parent line. A
contribution whose tree changes a protected file (agora.toml or an evaluator file) is invalid unless it
is itself an amendment, and `run`, `push --check` and `verify` always evaluate with the policy's files.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property

from .amendments import POLICY_MEMO, account_of, is_amendment, policy_sha_for  # noqa: F401 (the policy's names)
from .config import CONFIG_FILE, ConfigError, ProjectConfig
from .refs.store import Repository

_GLOB = set("*?[")


@dataclass(frozen=True)
class Policy:
    sha: str  # the setup, or the amendment in force
    tree: str
    config: ProjectConfig
    protected: Mapping[str, str]  # path -> object id in the policy's tree: agora.toml and the evaluator files

    @cached_property
    def evaluator_files(self) -> dict[str, str]:
        return {path: oid for path, oid in self.protected.items() if path != CONFIG_FILE}

    @cached_property
    def evaluator_key(self) -> str:
        """What scores a result under this policy, as one digest: the evaluator files' object ids, the
        commands, the scorer packages and their pins, the metric and its direction. Two policies with the
        same key score alike (one evaluator epoch); an amendment of the brief, the members, `[ucb]` or
        `[ci]` keeps the key."""
        spec, config = self.config.evaluation, self.config
        scoring = {
            "files": sorted(self.evaluator_files.items()),
            "command": spec.command,
            "build": spec.build,
            "score": spec.score,
            "scorer": list(spec.scorer),
            "pins": sorted(spec.pins.items()),
            "metric": [config.metric, config.direction],
        }
        return hashlib.sha256(json.dumps(scoring, sort_keys=True).encode()).hexdigest()


def load_policy(repo: Repository, sha: str) -> Policy:
    """The policy a setup or amendment commit declares (its agora.toml and evaluator files)."""
    info = repo.commit_info(sha)
    assert info is not None, sha
    return load_policy_of_tree(repo, info.tree, sha)


def load_policy_of_tree(repo: Repository, tree: str, sha: str = "") -> Policy:
    """The policy a tree declares; raises ConfigError for a broken agora.toml or unmatched files."""
    text = repo.file_text(tree, CONFIG_FILE)
    config = ProjectConfig.parse(text) if text else ProjectConfig()
    return Policy(sha, tree, config, protected_entries(repo, tree, config.evaluation.files))


def protected_entries(repo: Repository, tree: str, patterns: Iterable[str]) -> dict[str, str]:
    """agora.toml and every evaluator file (a path, a directory, or a glob over the tree's files) with
    its object id; a pattern that matches nothing in the tree is a ConfigError."""
    entries = dict(_object_ids(repo, tree, [CONFIG_FILE]))
    listing: list[str] | None = None
    for pattern in patterns:
        pattern = pattern.strip("/")
        if _GLOB.intersection(pattern):
            if listing is None:
                listing = repo.git.run("ls-tree", "-r", "--name-only", "-z", tree).split("\0")
            matched = [path for path in listing if path and fnmatch.fnmatchcase(path, pattern)]
        else:
            matched = [pattern]
        found = _object_ids(repo, tree, matched)
        if not found:
            raise ConfigError(f"[eval] files: {pattern!r} matches nothing in the setup's tree")
        entries.update(found)
    return entries


def _object_ids(repo: Repository, tree: str, paths: list[str]) -> dict[str, str]:
    ids = lookup_paths(repo, [(tree, path) for path in paths])
    return {path: oid for path, oid in zip(paths, ids) if oid is not None}


SPLIT = 8192  # questions above which `lookup_path_column` shares them among processes, one per core
PART = 65536  # questions at most that one of those processes answers


def lookup_paths(repo: Repository, queries: list[tuple[str, str]]) -> list[str | None]:
    """Object id at `tree:path` for each query (None when absent), through one `git cat-file` process
    (a few paths of a few trees; `lookup_path_column` asks about many trees at once)."""
    if not queries:
        return []
    text = "".join(f"{tree}:{path}\n" for tree, path in queries)
    out = subprocess.run(
        ["git", "cat-file", "--batch-check=%(objectname)", "--buffer"],  # answers in large writes
        cwd=repo.worktree_path,
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [None if " " in line else line for line in out]


def _cores() -> int:

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def changed_protected_files(repo: Repository, tree: str, policy: Policy) -> list[str]:
    """Protected paths whose content in `tree` differs from the policy's (changed, removed or replaced)."""
    paths = list(policy.protected)
    ids = lookup_paths(repo, [(tree, path) for path in paths])
    return [path for path, oid in zip(paths, ids) if oid != policy.protected[path]]


def load_policy_config(repo: Repository, sha: str) -> ProjectConfig:
    """Only the agora.toml of the setup or amendment `sha` (what `load_policy` reads, without listing the
    evaluator files)."""
    info = repo.commit_info(sha)
    assert info is not None, sha
    text = repo.file_text(info.tree, CONFIG_FILE)
    return ProjectConfig.parse(text) if text else ProjectConfig()


@dataclass(frozen=True)
class Answers:
    """The object ids of one policy's protected paths in a set of trees, asked before it is known which
    rows need them (a rebuild asks while it applies the graph rules)."""

    policy: str
    trees: object  # an Arrow string array of distinct trees
    ids: Mapping[str, object]  # path -> an Arrow array of object ids, one per tree (null: absent)

    def of(self, path: str, trees):
        """The object ids at `path` in `trees`, or None when some tree was not asked about."""
        import pyarrow.compute as pc

        at = pc.index_in(trees, value_set=self.trees)
        if pc.any(pc.and_(pc.is_null(at), pc.is_valid(trees))).as_py():
            return None
        return pc.take(self.ids[path], at)


def answers_ahead(repo: Repository, policy_sha: str, trees) -> Answers | None:
    """`Answers` of the policy `policy_sha` in these trees (an Arrow string array); None when the policy
    is broken (`evaluator_violations` then says so for each row)."""
    import pyarrow.compute as pc

    try:
        policy = load_policy(repo, policy_sha)
    except ConfigError:
        return None
    distinct = pc.unique(trees).drop_null()
    return Answers(policy_sha, distinct, {path: lookup_path_column(repo, distinct, path) for path in policy.protected})


def evaluator_violations(
    repo: Repository, shas, trees, policies, root: str | None, ahead: Answers | None = None
) -> dict[int, list[str]]:
    """Problems of the rows given as columns (Arrow string arrays: sha, tree, policy sha), by row
    position: a tree that changes a file its policy fixes; an amendment (policy sha == sha) whose own
    policy is broken. Each protected path is looked up for all the rows at once (`lookup_path_column`),
    or taken from `ahead` where it holds them; only the rows with a problem become Python values."""
    import pyarrow.compute as pc

    problems: dict[int, list[str]] = {}
    owner: list[str | None] = []  # the setup account, read once a message needs it
    for policy_sha in pc.unique(policies).drop_null().to_pylist():
        under = pc.indices_nonzero(pc.fill_null(pc.equal(policies, policy_sha), False))
        try:
            policy = load_policy(repo, policy_sha)
        except ConfigError as exc:
            for at, sha in zip(under.to_pylist(), shas.take(under).to_pylist()):
                what = "the amended policy" if policy_sha == sha else f"its policy {policy_sha[:12]}"
                problems[at] = [f"{what} is broken: {exc}"]
            continue
        checked = under.filter(pc.fill_null(pc.not_equal(shas.take(under), policy_sha), True))
        checked_trees = trees.take(checked)
        changed: dict[int, list[str]] = {}
        for path, expected in policy.protected.items():
            known = ahead.of(path, checked_trees) if ahead is not None and ahead.policy == policy_sha else None
            ids = known if known is not None else lookup_path_column(repo, checked_trees, path)
            kept = pc.fill_null(pc.equal(ids, expected), False)
            for at in checked.filter(pc.invert(kept)).to_pylist():
                changed.setdefault(at, []).append(path)
        if changed and not owner:
            owner.append(account_of(repo, root) if root else None)
        for at, paths in changed.items():
            problems[at] = [
                f"changes {', '.join(paths)}, which the policy fixes (only a policy amendment by "
                f"{owner[0] or 'the setup account'} may)"
            ]
    return problems


_NO_TREE = "0" * 40  # asked for a row without a tree: git answers "missing"


def lookup_path_column(repo: Repository, trees, path: str):
    """The object id at `tree:path` for each tree of an Arrow string array (null where absent), through
    `git cat-file`: the questions are written and the answers read as whole columns, shared among
    processes, as many at once as there are cores, each asked at most `PART` (a rebuild at a million
    contributions asks 660,000: in parts, the questions and answers held at once stay near 100 MB)."""
    import pyarrow as pa

    cores = _cores()
    if cores < 2 or len(trees) < 2 * SPLIT:
        return _path_column(repo, trees, path)

    size = min(PART, -(-len(trees) // cores))
    with ThreadPoolExecutor(cores) as pool:
        parts = pool.map(lambda at: _path_column(repo, trees.slice(at, size), path), range(0, len(trees), size))
        return pa.concat_arrays(list(parts))


def _path_column(repo: Repository, trees, path: str):
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(trees):
        return pa.array([], pa.string())
    questions = pc.binary_join_element_wise(pc.fill_null(trees, _NO_TREE), pa.scalar(f":{path}\n"), "")
    text = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(questions)], pa.int32()), questions), "")
    answers = subprocess.run(
        ["git", "cat-file", "--batch-check=%(objectname)", "--buffer"],
        cwd=repo.worktree_path,
        input=text[0].as_buffer().to_pybytes(),
        capture_output=True,
        check=True,
    ).stdout
    lines = pc.list_flatten(pc.split_pattern(pa.array([answers.decode("utf-8", "replace")]), "\n"))
    if len(lines) != len(trees) + 1:  # the text ends with a newline: one empty line more
        raise RuntimeError(f"git cat-file answered {len(lines) - 1} of {len(trees)} questions")
    lines = lines.slice(0, len(trees))
    return pc.if_else(pc.match_substring(lines, " "), pa.scalar(None, pa.string()), lines)
