"""Signature checks of the index: each new contribution's SSH signature is verified in process against
the keys this clone trusts for its account (one `git cat-file --batch` reads the raw commits).

- signed with a trusted key: fine;
- unsigned: invalid when the project requires signatures;
- signed, but the account has no identity here yet: invalid when required, and re-checked on every
  update until the identity arrives;
- signed, but not by the account's key: invalid.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the pre-receive hook reads signatures without pyarrow
    import pyarrow as pa

from ..identity.signatures import Job, split_signature, verify, verify_many

UNSIGNED = "unsigned, and the project requires signatures"
WAITING = "signed, but its account has no identity here yet"
BAD = "the signature does not verify with the key of its account"


def raw_commits(git_dir: str | os.PathLike[str], shas: list[str]) -> dict[str, bytes]:
    """The raw bytes of each commit, through one `git cat-file --batch` process."""
    if not shas:
        return {}
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch", "--buffer"],  # all asked at once: no flush each
        input="".join(f"{sha}\n" for sha in shas).encode(),
        capture_output=True,
    )
    out, raws, at = proc.stdout, {}, 0
    for sha in shas:
        end = out.find(b"\n", at)
        header = out[at:end].split()
        if len(header) != 3:  # "<sha> missing"
            at = end + 1
            continue
        size = int(header[2])
        raws[sha] = out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return raws


def problem(raw: bytes | None, keys: tuple[str, ...], required: bool) -> str | None:
    found = precheck(raw, keys, required)
    if isinstance(found, tuple):
        return None if verify(*found) else BAD
    return found


def precheck(raw: bytes | None, keys: tuple[str, ...], required: bool) -> str | None | Job:
    """The problem a commit has before any signature is verified, or the verification still to do."""
    if raw is None:
        return None
    payload, signature = split_signature(raw)
    if signature is None:
        return UNSIGNED if required else None
    if not keys:
        return WAITING if required else None
    return payload, signature, keys


NOT_A_MEMBER = "not a member of the project (its policy lists the members)"

Members = Callable[[str | None], Mapping[str, str] | None]  # policy sha -> {account: key}, None: open project


def check_rows(
    git_dir: str | os.PathLike[str],
    rows: list[dict],
    keys: Mapping[str, tuple[str, ...]],
    required: bool,
    members: Members,
) -> None:
    """Add the signature problem of every contribution row (in place). Where the row's policy lists
    members, only members count, each with the key the policy gives (signatures required)."""
    todo = [r for r in rows if r["account"] is not None]
    lists = [members(r["policy"]) for r in todo]
    # an unsigned project's rows need no commit read: without keys, members or the requirement, any
    # commit passes (`precheck`), so only the rows that can fail are read (a rebuild reads none)
    needed = [r["sha"] for r, listed in zip(todo, lists) if listed is not None or required or keys.get(r["account"])]
    raws = raw_commits(git_dir, needed)
    found: dict[int, str | None | Job] = {}
    for i, row in enumerate(todo):
        listed = lists[i]
        if listed is not None and row["account"] not in listed:
            found[i] = NOT_A_MEMBER
        elif listed is not None:
            found[i] = precheck(raws.get(row["sha"]), (listed[row["account"]],), True)
        else:
            found[i] = precheck(raws.get(row["sha"]), keys.get(row["account"], ()), required)
    jobs = {i: job for i, job in found.items() if isinstance(job, tuple)}
    for i, good in zip(jobs, verify_many(list(jobs.values()))):
        found[i] = None if good else BAD
    for i, row in enumerate(todo):
        if found[i]:
            row["reasons"] = row["reasons"] + [found[i]]
            row["valid"] = False


def recheck_waiting(git_dir: str | os.PathLike[str], table: pa.Table, keys: Mapping[str, tuple[str, ...]]) -> pa.Table:
    """Rows that waited for their account's identity: verify them now that keys are known."""
    from .build import replace_reason, rows_with_reason

    waiting = [i for i in rows_with_reason(table, WAITING) if keys.get(table.column("account")[i].as_py())]
    if not waiting:
        return table
    shas = [table.column("sha")[i].as_py() for i in waiting]
    raws = raw_commits(git_dir, shas)
    accounts = table.column("account")
    verdicts = {i: problem(raws.get(sha), keys[accounts[i].as_py()], True) for i, sha in zip(waiting, shas)}
    return replace_reason(table, WAITING, verdicts)
