"""Cross-project references (`Agora-Ref: <remote-url>#<sha>`): a contribution citing a commit of
another Agora project. Fetched read-only into `refs/agora-xref/<sha>`, outside `refs/agora/`, so the
cited commits never enter this project's graph or index."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..contribution import CrossRef
from .store import Repository

XREF_PREFIX = "refs/agora-xref/"


@dataclass(frozen=True)
class CrossRefFetch:
    ref: CrossRef
    ok: bool
    detail: str = ""


def fetch_cross_refs(repo: Repository, refs: Iterable[CrossRef]) -> list[CrossRefFetch]:
    """Fetch each referenced commit (and its history) from its project, read-only; skip ones held."""
    results = []
    for ref in dict.fromkeys(refs):
        if repo.commit_info(ref.sha) is not None:
            repo.set_ref(XREF_PREFIX + ref.sha, ref.sha)
            results.append(CrossRefFetch(ref, True, "already here"))
            continue
        proc = repo.git.transfer(
            "fetch",
            "--progress",
            "--no-tags",
            "--no-write-fetch-head",
            ref.url,
            f"{ref.sha}:{XREF_PREFIX}{ref.sha}",
        )
        detail = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
        results.append(CrossRefFetch(ref, proc.returncode == 0, "" if proc.returncode == 0 else detail))
    return results
