"""Tag and metric names a writer may have mistyped: caught before they are published for good.

A tag is known when it is reserved (`RESERVED_TAGS`), declared in the project's agora.toml (`[tags]`,
each with its weight) or already used in the project (the index's tags, kept in a small file beside it
so that a post need not load the index); a metric name is known when it is the project's metric or a
declared output field. A name that is not known but lies within `close` edit distance of one that is
is refused with the suggestion, unless the writer says it is meant (`--new-tag`, `--new-metric`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Collection, Iterable, Mapping

from ..contribution import RESERVED_TAGS
from ..errors import AgoraError
from ..index.state import index_dir, is_current, read_state
from ..project import Project

USED_TAGS_FILE = "used-tags.json"  # in .git/agora: the index's tags, with the manifest digest they match


def distance(a: str, b: str) -> int:
    """The optimal-string-alignment (Damerau-Levenshtein) distance: insertions, deletions,
    substitutions and transpositions of two neighbours, each 1."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], previous2[j - 2] + 1)
        previous2, previous = previous, row
    return previous[-1]


def close(name: str) -> int:
    """How far a name may be from a known one to be taken for a typo of it."""
    return 2 if len(name) >= 4 else 1


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to `name` within `close(name)` (ties: the first in sorted order); None
    when `name` is known or none is that close."""
    best: tuple[int, str] | None = None
    for candidate in sorted(set(known)):
        if candidate == name:
            return None
        d = distance(name, candidate)
        if d <= close(name) and (best is None or d < best[0]):
            best = (d, candidate)
    return best[1] if best else None


def refuse_mistyped_tags(
    project: Project, tags: Iterable[str], meant: Collection[str], declared: Callable[[], Iterable[str]]
) -> None:
    """Refuse (one line) a tag that is neither reserved, declared, used nor `meant`, and is close to
    one that is. Reserved tags cost nothing; a tag the kept list of used tags holds costs one small
    file (tags are never unused again); another reads `declared()` (agora.toml), and one that is not
    declared either, new or mistyped, reads the index."""
    unknown = [t for t in tags if t not in RESERVED_TAGS and t not in meant]
    if not unknown:
        return
    stored = _read_used(_used_path(project))
    unknown = [t for t in unknown if stored is None or t not in stored[1]]
    known = RESERVED_TAGS | set(declared()) if unknown else RESERVED_TAGS
    unknown = [t for t in unknown if t not in known]
    if not unknown:
        return
    known |= used_tags(project)
    for tag in unknown:
        near = nearest(tag, known)
        if near is not None:
            raise AgoraError(f"unknown tag {tag}: did you mean {near}? --new-tag {tag} to mean it; nothing published")


def remember_tags(project: Project, tags: Iterable[str]) -> None:
    """Add the tags a contribution just published to the kept list of used tags (its digest stays:
    the list holds at least the tags of the index it names)."""
    new = set(tags) - RESERVED_TAGS
    stored = _read_used(_used_path(project)) if new else None
    if stored is not None and not new <= stored[1]:
        _write_used(_used_path(project), stored[0], stored[1] | new)


def refuse_mistyped_metrics(
    names: Iterable[str], meant: Collection[str], metric: str | None, fields: Iterable[str]
) -> None:
    """Refuse (one line) a metric name close to the project's metric or a declared output field but not
    equal to it, unless `meant`."""
    known = {metric, *fields} - {None}
    for name in names:
        if name in known or name in meant:
            continue
        near = nearest(name, known)  # type: ignore[arg-type]
        if near is not None:
            what = "the project's metric" if near == metric else "an output field of the evaluator"
            raise AgoraError(
                f"unknown metric {name}: did you mean {near} ({what})? --new-metric {name} to mean it; "
                "nothing published"
            )


def used_tags(project: Project) -> frozenset[str]:
    """Every tag the index holds. Kept in .git/agora/used-tags.json with the digest of the index's
    manifest it was read under: while the index is current and that digest unchanged, the file
    answers (no pyarrow); else the index is brought up to date and its tags column read once."""
    path = _used_path(project)
    state = read_state(index_dir(project.repo))
    digest = state.tips_digest if state else None
    stored = _read_used(path)
    if digest is not None and stored is not None and stored[0] == digest and is_current(project.repo):
        return stored[1]
    from .indexing import load

    table = load(project, ["tags"]).contributions
    tags = frozenset(t for row in table["tags"].to_pylist() for t in row or ())
    state = read_state(index_dir(project.repo))
    if state and state.tips_digest:
        _write_used(path, state.tips_digest, tags)
    return tags


def suggest_tag(project: Project, tags: Iterable[str]) -> str | None:
    """The known tag closest to one of `tags` (a filter that matched nothing), for `did you mean`."""
    known = RESERVED_TAGS | used_tags(project)
    for tag in tags:
        near = nearest(tag, known)
        if near is not None:
            return near
    return None


def _used_path(project: Project) -> str:
    return os.path.join(project.repo.agora_path, USED_TAGS_FILE)


def _read_used(path: str) -> tuple[str, frozenset[str]] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, Mapping) or not isinstance(data.get("digest"), str):
        return None
    if not isinstance(data.get("tags"), list):
        return None
    return data["digest"], frozenset(t for t in data["tags"] if isinstance(t, str))


def _write_used(path: str, digest: str, tags: frozenset[str]) -> None:
    """Written to a temporary name and renamed (a reader sees the old file or the new one); a clone
    whose .git/agora is read-only just reads the index the next time."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"digest": digest, "tags": sorted(tags)}, handle)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
