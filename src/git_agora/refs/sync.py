"""Exchanging account logs with a remote through git's own transport.

Push sends the local log of one account as a fast-forward. When the remote log moved on (another
process of the same account published), the queued entries are re-appended on top of the remote tip
and the push is retried. Fetch copies every remote log into `refs/agora/remotes/<remote>/log/*`; a log
that moved backwards or sideways keeps its old tip under `refs/agora/quarantine/`.
"""

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Callable
from enum import Enum
from typing import NamedTuple

from ..contribution import valid_account
from .alternates import object_directories
from .catfile import CatFile, message, parents
from .git import NEGOTIATED_PUSH, stall_seconds
from .names import IDENTITY_PREFIX, LOG_PREFIX, REMOTES_PREFIX, LogRef, fetch_refspec, identity_refspec
from .quarantine import RewrittenLog, quarantine_rewritten_logs
from .store import LOG_ENTRY_KEY, MAX_REF_ATTEMPTS, Repository
from .upkeep import maintain_when_loose

MAX_PUSH_ATTEMPTS = 40
_STALE = re.compile(r"fetch first|non-fast-forward|stale info|cannot lock ref|failed to update ref", re.IGNORECASE)


class PushOutcome(Enum):
    PUSHED = "pushed"
    UP_TO_DATE = "up-to-date"
    NOTHING = "nothing-to-push"
    NO_REMOTE = "no-remote"
    UNREACHABLE = "queued-unreachable"
    REJECTED = "queued-rejected"

    @property
    def queued(self) -> bool:
        return self in (PushOutcome.UNREACHABLE, PushOutcome.REJECTED, PushOutcome.NO_REMOTE)


class PushResult(NamedTuple):
    outcome: PushOutcome
    queued: int  # contributions still waiting for the remote
    detail: str = ""


class FetchResult(NamedTuple):
    remote: str
    new_contributions: int
    updated_logs: tuple[str, ...] = ()
    rewritten: tuple[RewrittenLog, ...] = ()
    notes: tuple[str, ...] = ()


class RemoteError(RuntimeError):
    pass


def queued_entries(repo: Repository, account: str, remote: str | None) -> list[str]:
    """Contributions in the local log that the remote-tracking copy of it does not have."""
    log = LogRef(account)
    tip = repo.ref(log.local)
    if tip is None:
        return []
    tracked = repo.ref(log.tracking(remote)) if remote else None
    return repo.log_entries(tip, stop=tracked)


def push_log(repo: Repository, account: str, remote: str | None) -> PushResult:
    """Send the local log of `account`; retry on contention; report what stays queued."""
    log = LogRef(account)
    if remote is None:
        queued = len(queued_entries(repo, account, None))
        return PushResult(PushOutcome.NO_REMOTE if queued else PushOutcome.NOTHING, queued)
    push_identity(repo, account, remote)
    for attempt in range(MAX_PUSH_ATTEMPTS):
        tip = repo.ref(log.local)
        if tip is None:
            return PushResult(PushOutcome.NOTHING, 0)
        if repo.ref(log.tracking(remote)) == tip:
            return PushResult(PushOutcome.UP_TO_DATE, 0)
        negotiated = NEGOTIATED_PUSH if _large_history(repo.objects_path) else ()
        push = ("push", "--porcelain", "--progress", "--no-verify", remote, f"{tip}:{log.local}")
        proc = repo.git.transfer(*negotiated, *push)
        if proc.returncode == 0:
            repo.set_ref(log.tracking(remote), tip)
            return PushResult(PushOutcome.PUSHED, 0)
        report = proc.stdout + proc.stderr
        if _STALE.search(report):
            if not _fetch_account(repo, remote, log):
                return _queued(repo, account, remote, PushOutcome.UNREACHABLE, report)
            _rebase_queue(repo, account, remote)
            time.sleep(_jitter(min(0.02 * 2**attempt, 0.5)))
            continue
        if "[remote rejected]" in report or "[rejected]" in report:
            return _queued(repo, account, remote, PushOutcome.REJECTED, report)
        return _queued(repo, account, remote, PushOutcome.UNREACHABLE, report)
    return _queued(repo, account, remote, PushOutcome.REJECTED, "gave up after repeated contention")


def _large_history(objects: str) -> bool:
    """Whether this clone's history is long enough that git's walks cost more than a round trip to the
    remote: its packs hold twice `PROBE_FROM_COMMITS` objects (a contribution is at least a commit and its
    log's; what a clone fetches is packed, and a commit-graph may not be written yet)."""
    return packed_objects(objects) >= 2 * PROBE_FROM_COMMITS


_PACK_INDEX = b"\xfftOc\x00\x00\x00\x02"  # a version-2 pack index: then 256 fanout counts, the last the total


def packed_objects(objects: str) -> int:
    """How many objects the version-2 pack indexes of an object directory and its alternates list (what
    their headers say: nothing else is read)."""
    total = 0
    size = len(_PACK_INDEX) + 256 * 4
    for directory in object_directories(objects) or [objects]:
        with contextlib.suppress(OSError):
            for entry in os.scandir(os.path.join(directory, "pack")):
                if entry.name.endswith(".idx"):
                    head = b""
                    with contextlib.suppress(OSError), open(entry.path, "rb") as fh:
                        head = fh.read(size)
                    if len(head) == size and head.startswith(_PACK_INDEX):
                        total += int.from_bytes(head[-4:], "big")
    return total


def _jitter(most: float) -> float:
    import random  # only under contention

    return random.uniform(0.0, most)


def push_identity(repo: Repository, account: str, remote: str) -> str | None:
    """Publish the account's identity ref when the remote copy differs (never forced: a remote that holds
    another identity for the account keeps it, and readers judge the signatures). None when the remote
    has it now, else git's reason."""
    local = IDENTITY_PREFIX + account
    tip = repo.ref(local)
    tracking = f"{REMOTES_PREFIX}{remote}/identity/{account}"
    if tip is None or repo.ref(tracking) == tip:
        return None
    proc = repo.git.transfer("push", "--porcelain", "--progress", "--no-verify", remote, f"{tip}:{local}")
    if proc.returncode == 0:
        repo.set_ref(tracking, tip)
        return None
    return _last_line(proc.stdout + proc.stderr) or "the push failed"


def _queued(repo: Repository, account: str, remote: str, outcome: PushOutcome, report: str) -> PushResult:
    return PushResult(outcome, len(queued_entries(repo, account, remote)), _last_line(report))


def _last_line(report: str) -> str:
    lines = [ln.strip() for ln in report.splitlines() if ln.strip() and not ln.startswith(("To ", "Done"))]
    errors = [ln for ln in lines if ln.startswith(("fatal:", "error:", "!", "remote:"))]
    return (errors or lines or [""])[-1][:300]


def _fetch_account(repo: Repository, remote: str, log: LogRef) -> bool:
    proc = repo.git.transfer(
        "fetch", "--progress", "--no-tags", "--no-write-fetch-head", remote, f"+{log.local}:{log.tracking(remote)}"
    )
    return proc.returncode == 0


def _rebase_queue(repo: Repository, account: str, remote: str) -> None:
    """Put the entries the remote log lacks on top of the remote tip (compare-and-swap, retried)."""
    log = LogRef(account)
    for _ in range(MAX_REF_ATTEMPTS):
        local, remote_tip = repo.ref(log.local), repo.ref(log.tracking(remote))
        if local is None or remote_tip is None:
            return
        missing = [e for e in repo.log_entries(local, stop=remote_tip) if not repo.git.is_ancestor(e, remote_tip)]
        if repo.rebuild_log(account, remote_tip, missing, expected=local) is not None:
            return


def fetch(
    repo: Repository,
    remote: str,
    on_progress: Callable[[str], None] | None = None,
    on_moved: Callable[[], object] | None = None,
    write_graph: bool = True,
) -> FetchResult:
    """Fetch every account log of `remote`; count new contributions; quarantine rewritten logs.
    `on_progress` gets git's progress lines (a transfer is stopped only when it stops progressing);
    `on_moved` is called once a large clone's listing shows refs that moved, before their transfer.
    Without `write_graph` the caller keeps the commit-graph current (`write_commit_graph`), when it
    likes: beside the index update, say."""
    from concurrent.futures import ThreadPoolExecutor  # a publish loads neither

    from .boundary import commit_graph_size

    prefix = f"{REMOTES_PREFIX}{remote}/log/"
    with ThreadPoolExecutor(max_workers=1) as aside:  # a large clone's listing comes while its refs are read
        large = commit_graph_size(repo.objects_path) >= PROBE_FROM_COMMITS
        listing = aside.submit(repo.git.transfer, "ls-remote", remote, *LISTED) if large else None
        refs = repo.git.for_each_ref("refs/")
    before = {ref: sha for ref, sha in refs.items() if ref.startswith(prefix)}
    moved = _fetch_moved(repo, remote, refs, listing.result(), on_progress, on_moved) if before and listing else None
    if isinstance(moved, dict):  # stored from the probe: exactly these tracking refs moved
        after = {**before, **{ref: sha for ref, sha in moved.items() if ref.startswith(prefix)}}
        if moved:  # its objects were adopted loose, and no `git fetch` ran to pack them
            maintain_when_loose(repo.git, repo.objects_path)
    else:
        proc = moved or repo.git.transfer(
            "fetch",
            "--progress",
            "--no-tags",
            "--no-write-fetch-head",
            "--prune",  # a log deleted on the remote disappears here too, and is quarantined below
            remote,
            fetch_refspec(remote),
            identity_refspec(remote),
            on_line=on_progress,
        )
        if proc.returncode != 0:
            reason = proc.stderr.strip().splitlines()[-1] if proc.returncode == 124 else _last_line(proc.stderr)
            raise RemoteError(f"could not fetch from {remote}: {reason}")
        after = repo.git.for_each_ref(prefix)
    changed = {ref: sha for ref, sha in after.items() if before.get(ref) != sha}
    rewritten = quarantine_rewritten_logs(repo, before, after)
    if write_graph:
        new_contributions, graph_note = _count_while_writing_the_graph(repo, remote, before, changed)
    else:
        new_contributions, graph_note = (_count_new_entries(repo, remote, before, changed) if changed else 0), None
    return FetchResult(
        remote=remote,
        new_contributions=new_contributions,
        updated_logs=tuple(LogRef.from_tracking(ref, remote).account for ref in changed),
        rewritten=tuple(rewritten),
        notes=(graph_note,) if graph_note else (),
    )


PROBE_FROM_COMMITS = 100_000
"""The probe costs a listing and a shallow fetch, two more connections than one `git fetch`: below
about 50,000 contributions git's own walks cost less than those round trips over a network."""
MAX_MOVED_REFS = 256  # more moved refs than this: one plain fetch of every log (a clone catching up)
BOUNDARY_PREFIX = "refs/agora-boundary/"  # parents proven connected, standing as refs during one fetch


LISTED = (f"{LOG_PREFIX}*", f"{IDENTITY_PREFIX}*")  # what a large clone asks the remote to list


def _fetch_moved(
    repo: Repository,
    remote: str,
    refs: dict[str, str],
    listing: subprocess.CompletedProcess,
    on_progress: Callable[[str], None] | None,
    on_moved: Callable[[], object] | None = None,
) -> dict[str, str] | subprocess.CompletedProcess | None:
    """Fetch only the refs that moved, sending as haves the commits they rest on (`boundary.probe`), so
    that an old parent costs neither side a walk of the whole graph (`refs`: every ref, read once;
    `listing`: `git ls-remote` of the `LISTED` refs). The
    tracking refs it stored when the probe brought everything ({} when nothing moved); else git
    fetch's process, or a failed listing (the caller reports it); None when a plain fetch of every log
    must do it: a log or identity deleted on
    the remote (pruned and quarantined there), a name git would refuse, too many moved refs, a probe
    that did not find where the new commits rest, or a ref that vanished meanwhile."""
    kinds = (f"{REMOTES_PREFIX}{remote}/log/", f"{REMOTES_PREFIX}{remote}/identity/")
    tracking = {ref: sha for ref, sha in refs.items() if ref.startswith(kinds)}
    if listing.returncode != 0:
        return listing
    theirs: dict[str, str] = {}
    for line in listing.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        name = ref.removeprefix(LOG_PREFIX).removeprefix(IDENTITY_PREFIX)
        if ref.startswith((LOG_PREFIX, IDENTITY_PREFIX)):
            if not valid_account(name) or len(sha) != 40:
                return None
            theirs[ref] = sha
    if set(tracking) - {_tracking(remote, ref) for ref in theirs}:
        return None
    moved = {ref: sha for ref, sha in theirs.items() if tracking.get(_tracking(remote, ref)) != sha}
    if not moved:
        return {}
    if on_moved is not None:
        on_moved()
    if len(moved) > MAX_MOVED_REFS:
        return None
    from .boundary import probe, proven

    below = probe(repo.common_path, remote, moved)
    if below is None:
        return None
    _replace_refs(repo, {ref for ref in refs if ref.startswith(BOUNDARY_PREFIX)}, {})  # a killed fetch's
    tips = set(refs.values())
    firm = proven(repo.common_path, below, tips)  # a commit merely present may lack its history
    if firm == below and _store_probed(repo, remote, moved, tracking, firm):
        return {_tracking(remote, ref): sha for ref, sha in moved.items()}
    standing = {BOUNDARY_PREFIX + sha: sha for sha in firm - tips}
    _replace_refs(repo, set(), standing)
    try:
        proc = repo.git.transfer(
            "fetch",
            "--progress",
            "--no-tags",
            "--no-write-fetch-head",
            *(f"--negotiation-tip={sha}" for sha in sorted(firm)),
            remote,
            *(f"+{ref}:{_tracking(remote, ref)}" for ref in sorted(moved)),
            on_line=on_progress,
        )
    finally:
        _replace_refs(repo, set(standing), {})
    if proc.returncode != 0 and "couldn't find remote ref" in proc.stderr:
        return None
    return proc


def _store_probed(
    repo: Repository, remote: str, moved: dict[str, str], tracking: dict[str, str], firm: set[str]
) -> bool:
    """Point the tracking refs at what the probe brought, once git finds every object under the new tips
    down to commits whose history is whole (git fetch's own check, without its walk from every ref);
    False when something is missing or a tracking ref moved meanwhile (a fetch then does it)."""
    check = "\n".join([*moved.values(), *(f"^{sha}" for sha in sorted(firm))]) + "\n"  # git 2.39: no --not
    if not repo.git.ok("rev-list", "--objects", "--quiet", "--stdin", input=check):
        return False
    updates = []
    for ref, sha in sorted(moved.items()):
        name = _tracking(remote, ref)
        old = tracking.get(name)
        updates.append(f"update {name} {sha} {old}" if old else f"create {name} {sha}")
    return repo.git.ok("update-ref", "--stdin", input="\n".join(updates) + "\n")


def _tracking(remote: str, ref: str) -> str:
    return REMOTES_PREFIX + remote + "/" + ref.removeprefix("refs/agora/")


def _replace_refs(repo: Repository, delete: set[str], create: dict[str, str]) -> None:
    """Delete some refs and create others (ref -> sha) in one transaction; one that another fetch created
    meanwhile fails it all, which costs only time: the boundary refs merely shorten git's check."""
    commands = [f"delete {ref}" for ref in sorted(delete)] + [f"create {r} {s}" for r, s in create.items()]
    if commands:
        repo.git.run("update-ref", "--stdin", input="\n".join(commands) + "\n", check=False)


COMMIT_GRAPH_STALL_S = 10  # AGORA_COMMIT_GRAPH_STALL_SECONDS overrides it (a slow disk may need more)
COMMIT_GRAPH_OFF = "commit-graph-off"  # under .git/agora: the writer hung once here; do not try again


def _count_while_writing_the_graph(
    repo: Repository, remote: str, before: dict[str, str], changed: dict[str, str]
) -> tuple[int, str | None]:
    """The new entries (`_count_new_entries`), counted while git writes the commit-graph on the other
    core (each takes over a second for a first fetch of 100,000 contributions; the count reads objects
    through cat-file, which the graph file does not change)."""
    if not changed:
        return 0, None
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        graph = pool.submit(write_commit_graph, repo)
        count = _count_new_entries(repo, remote, before, changed)
        return count, graph.result()


LOOSE_REFS_PACKED_AT = 256
"""Loose refs under refs/agora from which a fetch packs them, as `git gc` would: every log a fetch moves
leaves its tracking ref in a file of its own, and every read of the refs opens each (at 1,032 of them
`for-each-ref` took 16.8 ms, 3.2 ms once packed)."""


def pack_refs_when_loose(repo: Repository) -> None:
    """`git pack-refs --all` once `LOOSE_REFS_PACKED_AT` refs under refs/agora are loose files. Git's lock
    protocol keeps concurrent updates (git's, and `files.swap_ref`'s) safe; a pack that fails leaves
    them loose, as they were."""
    if _loose_refs(os.path.join(repo.common_path, "refs", "agora"), LOOSE_REFS_PACKED_AT) >= LOOSE_REFS_PACKED_AT:
        repo.git.run("pack-refs", "--all", check=False)


def _loose_refs(folder: str, enough: int) -> int:
    """How many files lie under `folder`, counted up to `enough`."""
    count = 0
    for _, _, files in os.walk(folder):
        count += len(files)
        if count >= enough:
            break
    return count


def write_commit_graph(repo: Repository) -> str | None:
    """Keep the commit-graph current (it keeps fetch negotiation short when new work has deep parents).
    git 2.39's writer can spin on hostile committer times, so it runs only while its progress moves
    (a first write at a million contributions takes minutes, all of them moving): stuck for
    `COMMIT_GRAPH_STALL_S`, it is killed, and commit-graphs stay off in this clone; the one-line note
    says so."""
    marker = os.path.join(repo.agora_path, COMMIT_GRAPH_OFF)
    if os.path.exists(marker):
        return None
    stall = stall_seconds("AGORA_COMMIT_GRAPH_STALL_SECONDS", COMMIT_GRAPH_STALL_S)
    proc = repo.git.watched(
        "commit-graph", "write", "--reachable", "--split", "--progress", stall=stall, new_lines_only=True
    )
    if proc.returncode != 124:
        return None
    for lock in ("commit-graph.lock", "commit-graphs/commit-graph-chain.lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(repo.objects_path, "info", lock))
    os.makedirs(repo.agora_path, exist_ok=True)
    with open(marker, "w") as note:
        note.write("git commit-graph write did not finish; see docs/hosting.md\n")
    return (
        f"git's commit-graph writer made no progress for {stall:g} s (a commit with a "
        "hostile committer time?); this clone stops writing commit-graphs"
    )


def _count_new_entries(repo: Repository, remote: str, before: dict[str, str], changed: dict[str, str]) -> int:
    """Contributions appended to the remote's logs since the old tips, not counting those already in a
    local log. Each moved log's first-parent chain is read back to its old tip through one cat-file
    process, every log a step at a time together: `git log NEW --not OLD` painted the whole graph when
    a new account's first entry built on an old contribution (its chain leads there), 48 s at a
    million contributions; one log after the other cost a round trip per commit (7 s for a first fetch
    of 100,000)."""
    stop = set(before.values())
    refs = list(changed)
    cat = repo.objects
    locals_ = [repo.ref(LogRef.from_tracking(ref, remote).local) for ref in refs]
    ours = _log_chains(
        cat, [(local, stop | {before[ref]} if ref in before else stop) for ref, local in zip(refs, locals_)]
    )
    theirs = _log_chains(cat, [(changed[ref], stop | set(mine)) for ref, mine in zip(refs, ours)])
    entries: set[str] = set()
    for mine, chain in zip(ours, theirs):
        entries |= set(chain.values()) - set(mine.values())
    return len(entries)


def _log_chains(cat: CatFile, starts: list[tuple[str | None, set[str]]]) -> list[dict[str, str]]:
    """For each (tip, stop): {log commit: its entry} along that log's first-parent chain from `tip`,
    down to a commit in `stop` or to the first commit that is not a log commit (below a log's first
    commit lies its first entry). The chains are walked together, one cat-file round trip a step."""
    chains: list[dict[str, str]] = [{} for _ in starts]
    at = {i: tip for i, (tip, _) in enumerate(starts) if tip}
    while at:
        live = {i: sha for i, sha in at.items() if sha not in starts[i][1] and sha not in chains[i]}
        raws = cat.commits(list(live.values()))
        at = {}
        for (i, sha), raw in zip(live.items(), raws):
            entry = _LOG_ENTRY.search(message(raw)) if raw is not None else None
            if raw is None or entry is None:
                continue
            chains[i][sha] = entry.group(1).decode()
            first = next(iter(parents(raw)), None)
            if first:
                at[i] = first
    return chains


_LOG_ENTRY = re.compile(rb"^" + re.escape(LOG_ENTRY_KEY.encode()) + rb": ([0-9a-f]{40})$", re.MULTILINE)
