"""The rows of the commits an update adds, through the one row pipeline (`parallel`), with what Git
answers about them: which commits are new (`discover`, or a `git log` walk), the already indexed
parents they name, the files their policy fixes and `.git` paths (`policy`, `refs.trees`), and their
signatures (`signatures`). Nothing here writes the index (`store` does)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ..contribution import DOTGIT_REASON, SETUP
from ..refs.store import Repository
from ..refs.trees import dotgit_paths
from . import build, discover, listing, packed, parallel, reader, segments, signatures
from .segments import Manifest, Segment

if TYPE_CHECKING:
    from ..policy import Answers


@dataclass(frozen=True)
class IndexRules:
    """What the rows depend on besides the commits: the project's metric (agora.toml), copied into each
    row's `primary_metric`, and the setup this clone pinned as its root."""

    primary_metric: str | None = None
    root: str | None = None
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # trusted public keys per account
    signatures_required: bool = False
    pinned: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # keys the policies pin ([ci] keys)

    def recorded(self) -> dict:
        """The rules a stored index was built under (a change means a rebuild)."""
        recorded: dict = {"metric": self.primary_metric, "root": self.root}
        recorded["signatures_required"] = self.signatures_required
        if self.pinned:  # the keys of these accounts come from the policy, not from this clone's first use
            recorded["pinned"] = {account: list(keys) for account, keys in sorted(self.pinned.items())}
        return recorded


def _parse_walk(
    repo: Repository,
    base: Manifest,
    tips: dict[str, str],
    rules: IndexRules,
    now: int,
    progress: Callable[[int], None] | None,
) -> tuple[pa.Table, Mapping[str, set[str]], bool]:
    """The own fields of the commits a `git log` walk finds (`parallel.WORK`, canonical order), what
    the accounts' logs list, and whether the walk was large: then parsed by worker processes, and the
    log listing of a rebuild read from the same walk (it printed every log commit)."""
    walked = _walk(repo, base, tips)
    head, in_bulk = parallel.take(walked, parallel.THRESHOLD)

    def listed_by(links: pa.Table) -> Mapping[str, set[str]]:
        if base.tips:
            return listing.new_entries(repo.common_path, base.tips, tips)
        return listing.entries_from_walk(repo.common_path, tips, links)

    blocks = chain(head, walked)
    work, listed = parallel.parse_all(blocks, rules.primary_metric, now, listed_by, progress, in_workers=in_bulk)
    return work, listed, in_bulk


def new_rows(
    repo: Repository,
    directory: Path,
    base: Manifest,
    tips: dict[str, str],
    rules: IndexRules,
    now: int,
    progress: Callable[[int], None] | None,
) -> tuple[pa.Table, pa.Table, Mapping[str, set[str]]]:
    """The contributions and cross references of the commits the tips add, and what the accounts' logs
    list. One pipeline for one commit or a million: each commit's own fields (`parallel.WORK`), then
    the rules that need the other commits over whole columns: the graph rules, the evaluator policy,
    the signatures. In bulk, git answers about the root policy's files and `.git` paths while the graph
    rules run."""
    discovered = _discovered(repo, directory, base, tips)
    listed: Mapping[str, set[str]]
    with parallel.cyclic_gc_paused(), parallel.bulk_memory_pool():
        if discovered is not None:
            work = parallel.parse_here(reader.read(repo.common_path, discovered), rules.primary_metric, now)
            listed, in_bulk = listing.new_entries(repo.common_path, base.tips, tips), False
        else:
            work, listed, in_bulk = _parse_walk(repo, base, tips, rules, now, progress)
        known = _known_parents_of(repo, directory, base, work, rules.root)
        root_format = _declared_format(repo, rules.root)
        if not in_bulk:
            table, refs = parallel.graph_rows(work, known, rules.root, listed, root_format)
            table = _evaluator_policy_table(repo, table, rules.root)
        else:
            # the contributions' trees, read by git while the graph rules run here: the `.git` check in a
            # process aside (its Python work shares no lock with this one; its answer is small), the
            # policy's files on a thread (git does that work; its answer, a column as long as the trees,
            # would cost a copy through a pipe and 300 MB of this process's peak at a million)
            trees = pc.unique(work.column("tree").filter(pc.is_valid(work.column("account")))).drop_null()
            parallel.hand_back_freed_memory()  # each phase's peak is its own (also in the process forked now)
            dotgit = parallel.Aside(_dotgit_of, repo.common_path, trees)  # forked before any thread starts
            with ThreadPoolExecutor(max_workers=1) as aside:
                ahead = aside.submit(_answers_ahead, repo, rules.root, trees)
                del trees
                table, refs = parallel.graph_rows(work, known, rules.root, listed, root_format)
                del work  # the rows are held once
                parallel.hand_back_freed_memory()
                table = _evaluator_policy_table(repo, table, rules.root, ahead.result(), dotgit.result())
            parallel.hand_back_freed_memory()
        return _signatures_table(repo, table, rules), refs, listed


def _dotgit_of(git_dir: str, trees: pa.Array) -> dict[str, str]:
    """`refs.trees.dotgit_paths` of an Arrow column of trees (a rebuild's: hundreds of thousands, made
    Python strings only where they are read)."""
    return dotgit_paths(git_dir, trees.to_pylist())


def _declared_format(repo: Repository, root: str | None) -> int:
    """The Agora-Format the root setup declares (1 without a readable root: no contribution is older)."""
    contribution = repo.contribution(root) if root is not None else None
    return int(contribution.format) if contribution is not None else 1


def _answers_ahead(repo: Repository, root: str | None, trees: pa.Array) -> Answers | None:
    """The root policy's protected files in these trees, asked before the graph rules say which rows
    need them: nearly every judged row is under the root policy, and its trees are among these."""
    from ..policy import answers_ahead

    return answers_ahead(repo, root, trees) if root is not None else None


def _evaluator_policy_table(
    repo: Repository,
    table: pa.Table,
    root: str | None,
    ahead: Answers | None = None,
    dotgit: Mapping[str, str] | None = None,
) -> pa.Table:
    """Mark invalid the code-bearing rows whose tree changes a file their policy fixes or adds a `.git`
    path, and the amendments whose policy is broken (`policy.evaluator_violations`, `_dotgit_reasons`);
    the rows judged are picked over whole columns (with the answers asked `ahead`, if any)."""
    from ..policy import evaluator_violations

    sha, policy = table.column("sha"), table.column("policy")
    own = pc.equal(policy, sha)
    judged = pc.and_(table.column("code_bearing"), pc.invert(own))
    setups = pa.array(build.tagged(table, SETUP), pa.int64())
    amends = pc.and_(own, pc.invert(pc.is_in(pa.array(range(table.num_rows), pa.int64()), value_set=setups)))
    if root is not None:
        amends = pc.and_(amends, pc.not_equal(sha, root))
    picked = pc.indices_nonzero(pc.fill_null(pc.or_(judged, amends), False))
    columns = [table.column(c).take(picked).combine_chunks() for c in ("sha", "tree", "policy")]
    problems = evaluator_violations(repo, columns[0], columns[1], columns[2], root, ahead)
    rows = picked.to_numpy()
    found = {int(rows[at]): reasons for at, reasons in problems.items()}
    code_bearing = pc.fill_null(table.column("code_bearing"), False)
    if dotgit is None:
        dotgit = dotgit_paths(repo.common_path, table.column("tree").filter(code_bearing).to_pylist())
    for at, reason in _dotgit_reasons(table.column("tree"), code_bearing, dotgit):
        found[at] = found.get(at, []) + [reason]
    return _append_reasons(table, found)


def _dotgit_reasons(trees, code_bearing, paths: Mapping[str, str]) -> Iterator[tuple[int, str]]:
    """(row, reason) of each code-bearing row whose tree holds a `.git` path (`paths`: tree -> the path,
    from `refs.trees.dotgit_paths`): git refuses to check such a tree out, so the contribution could be
    neither evaluated nor verified. Only those rows become Python values."""
    if not paths:
        return
    holding = pc.and_(code_bearing, pc.is_in(trees, value_set=pa.array(list(paths), pa.string())))
    rows = pc.indices_nonzero(pc.fill_null(holding, False))
    for at, tree in zip(rows.to_pylist(), trees.take(rows).to_pylist()):
        yield at, f"the tree holds {paths[tree]!r}: {DOTGIT_REASON}"


def _signatures_table(repo: Repository, table: pa.Table, rules: IndexRules) -> pa.Table:
    """`signatures.check_rows` over a table: the rows that can fail a check (`_may_fail_signature`) as
    small dicts, their new reasons appended. An unsigned open project has none."""
    members = _members(repo)
    rows_at = _may_fail_signature(table, rules, members)
    if not rows_at:
        return table
    picked = table.take(pa.array(rows_at, pa.int64()))
    columns = [picked.column(name).to_pylist() for name in ("sha", "account", "policy")]
    rows = [
        {"sha": sha, "account": account, "policy": policy, "reasons": [], "valid": True}
        for sha, account, policy in zip(*columns)
    ]
    signatures.check_rows(repo.common_path, rows, rules.keys, rules.signatures_required, members)
    return _append_reasons(table, {i: row["reasons"] for i, row in zip(rows_at, rows) if row["reasons"]})


def _may_fail_signature(table: pa.Table, rules: IndexRules, members: signatures.Members) -> list[int]:
    """The contribution rows whose signature is checked at all: all of them when signatures are required,
    else those of accounts with keys and those under a policy that lists members (`check_rows` passes
    any other row without reading it)."""
    named = pc.is_valid(table.column("account"))
    if not rules.signatures_required:
        listing_members = [p for p in pc.unique(table.column("policy")).to_pylist() if members(p) is not None]
        keyed = pa.array(sorted(a for a, keys in rules.keys.items() if keys), pa.string())
        may_fail = pc.or_(
            pc.is_in(table.column("account"), value_set=keyed),
            pc.is_in(table.column("policy"), value_set=pa.array(listing_members, pa.string())),
        )
        named = pc.and_(named, pc.fill_null(may_fail, False))
    return pc.indices_nonzero(named).to_pylist()


def _append_reasons(table: pa.Table, found: Mapping[int, list[str]]) -> pa.Table:
    """These reasons appended to those rows' reasons; `valid` follows."""
    if not found:
        return table
    at = sorted(found)
    before = table.column("reasons").take(pa.array(at, pa.int64())).to_pylist()
    values = pa.array([reasons + found[i] for i, reasons in zip(at, before)], pa.list_(pa.string()))
    array = parallel.replace_rows(table.column("reasons"), at, values)  # only those rows become Python values
    table = table.set_column(table.schema.get_field_index("reasons"), "reasons", array)
    return table.set_column(table.schema.get_field_index("valid"), "valid", pc.equal(pc.list_value_length(array), 0))


def _walk(repo: Repository, base: Manifest, tips: dict[str, str]) -> Iterator[parallel.Task]:
    """Every commit the tips reach and the stored tips do not, as blocks of `git log` records (or, in a
    rebuild, slices of packs read by the process that parses them)."""
    new, old = sorted(set(tips.values())), sorted(set(base.tips.values()))
    if not old:  # a rebuild: read from the packs where it can be
        read = packed.blocks(repo.common_path, new, parallel.BLOCK)
        if read is not None:
            return read
    return reader.walk_blocks(repo.common_path, new, old, parallel.BLOCK)


def _discovered(repo: Repository, directory: Path, base: Manifest, tips: dict[str, str]) -> list[str] | None:
    """The commits the tips add, found from the moved refs alone when an index exists (`discover`: the
    cost is what is new); None when a `git log` walk must find them (no index, or most of the project
    is new)."""
    if not base.segments:
        return None

    def known(keys: list[tuple[int, str]]) -> set[str]:
        return set(segments.find_rows(directory, base.segments, set(keys), ["sha"]).column("sha").to_pylist())

    try:
        return discover.new_commits(repo.objects, base.tips, tips, known)
    except discover.TooMany:
        return None


def _members(repo: Repository) -> signatures.Members:
    """The members each policy lists (`[identity] members`), read once per policy commit."""

    from ..config import ConfigError
    from ..policy import load_policy

    @cache
    def members(policy_sha: str | None):
        if policy_sha is None:
            return None
        try:
            listed = load_policy(repo, policy_sha).config.sections.get("identity", {}).get("members")
        except ConfigError:
            return None
        return dict(listed) if isinstance(listed, dict) and listed else None

    return members


KNOWN_COLUMNS = ("sha", "account", "tree", "policy")


def _known_parents_of(
    repo: Repository, directory: Path, base: Manifest, work: pa.Table, root: str | None
) -> dict[str, build.Known]:
    """The already indexed commits that these new rows name as parents, and the root setup when one of
    them is tagged policy (its account says which are amendments; the root is the oldest row, whose
    row group a +1 need not read otherwise): all that validation needs, looked up by key: the commit's
    committer time from Git, then the row groups that can hold it."""
    if not base.segments:
        return {}
    amending = root is not None and pc.any(work.column("amends")).as_py()
    named = pc.unique(
        pa.concat_arrays(
            [
                pc.list_flatten(work.column("parents")).combine_chunks(),
                pa.array([root] if amending else [], pa.string()),
            ]
        )
    )
    wanted = named.filter(pc.invert(pc.is_in(named, value_set=work.column("sha")))).to_pylist()
    if not wanted:
        return {}
    keys = {(info.timestamp, sha) for sha in wanted if (info := repo.commit_info(sha)) is not None}
    rows = segments.find_rows(directory, base.segments, keys, KNOWN_COLUMNS)
    missing = set(wanted) - set(rows.column("sha").to_pylist())
    if missing:  # a time Git and the reader see differently, or a parent that is no contribution
        rows = pa.concat_tables([rows, _by_sha(directory, base.segments, missing)])
    return build.known_from_table(rows)


def _by_sha(directory: Path, found: Sequence[Segment], shas: set[str]) -> pa.Table:
    """Rows by sha alone: every segment's sha column is read (the rare path)."""
    tables = [segments.read_segment(directory, s, KNOWN_COLUMNS) for s in found]
    table = segments.newest_versions(pa.concat_tables(tables))[0]
    return table.filter(pc.is_in(table.column("sha"), value_set=pa.array(sorted(shas), pa.string())))
