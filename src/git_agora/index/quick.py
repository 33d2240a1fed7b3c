"""The row of a commit written exactly as this package writes contributions (`Contribution.to_message`)
and with nothing to report, read with one regular expression instead of decoding it as a `Contribution`.

A rebuild reads every commit once, and nearly all of them are such commits: this path costs a third of the
general one (`reader.parse` + `build.local_values`). It answers only where the general path would give
the very same values; anything else (another trailer order or spelling, a scissors or `---` line, an
escape, a problem of any kind, a metric Python reads differently) is None, and the caller takes the
general path. Its pattern is generated from the protocol's grammar (`contribution.GRAMMAR`), so a new
trailer is matched here at once; the tests hold the two paths to the same values, and a contribution
that uses every trailer to this path.
"""

from __future__ import annotations

import math
import re

from ..contribution import (
    GRAMMAR,
    LIMITS,
    POLICY,
    READABLE_FORMATS,
    SETUP,
    ContributionError,
    Trailer,
    decode_metadata,
    identity_problems,
    kind_problems,
    storable_account,
    time_problems,
)
from ..leaks import secret_in
from ..records import carries_run
from .build import Row
from .reader import RawCommit


def _fast_pattern(grammar: tuple[Trailer, ...]) -> re.Pattern[str]:
    """The trailer block after `Agora-Format`, exactly as writers order and spell it (`GRAMMAR`): a
    single trailer's value is a group named after it, the lines of a repeated one a group."""
    parts = []
    for trailer in grammar:
        line = f"{re.escape(trailer.key)}: "
        if trailer.occurs in ("1", "?"):
            part = f"{line}(?P<{trailer.field}>{trailer.value})\n"
            parts.append(part if trailer.occurs == "1" else f"(?:{part})?")
        else:
            parts.append(f"(?P<{trailer.field}>(?:{line}(?:{trailer.value})\n){trailer.occurs})")
    return re.compile("".join(parts))


_TRAILERS = _fast_pattern(GRAMMAR[1:])
TRAILER_PATTERN = _TRAILERS.pattern  # also read by `columnar`, with RE2
_GROUPS = ("account", "target", "verdict", "meta", "tag", "metric", "ref")
_LINES = {t.field: (len(t.key) + 2, f"\n{t.key}: ") for t in GRAMMAR}  # where a run's values start, and part
_STARTS = {f"\n\n{GRAMMAR[0].key}: {version}\n": version for version in reversed(READABLE_FORMATS)}


def row_values(raw: RawCommit, primary_metric: str | None, now: int) -> Row | None:
    """`build.local_values` of this commit, or None when the general path must read it: the rules are
    the contribution's own (`storable_account`, `identity_problems`, `kind_problems`), and any problem
    leaves the commit to the general path, which words it."""
    head, start, tail = _trailer_block(raw.message)
    if not start or raw.problem or "---" in head or "\0" in head or not head.strip():
        return None  # `---` covers escaped lines and the scissors
    if secret_in(raw.message) is not None:
        return None  # the general path redacts it
    if len(head) * 4 > LIMITS.description_bytes or len(raw.parents) > LIMITS.parents:
        return None
    found = _TRAILERS.fullmatch(tail)
    if found is None:
        return None
    account, target, verdict, meta, tag_lines, metric_lines, ref_lines = found.group(*_GROUPS)
    declared = _STARTS[start]
    if not storable_account(account) or identity_problems(declared, account, raw.author, raw.committer):
        return None
    tags = _values(tag_lines, *_LINES["tag"])
    metrics = _metrics(_values(metric_lines, *_LINES["metric"]))
    refs = _values(ref_lines, *_LINES["ref"])
    if metrics is None or len(tags) > LIMITS.tags or len(refs) > LIMITS.cross_refs:
        return None
    try:
        metadata = decode_metadata(meta) if meta is not None else {}
    except ContributionError:
        return None
    targets = (target,) if target is not None else ()
    if kind_problems(tags, raw.parents, metrics, targets, verdict, metadata):
        return None
    return Row(
        sha=raw.sha,
        account=account,
        timestamp=raw.timestamp,
        title=head.partition("\n")[0],
        description=head,
        tags=tags,
        metrics=list(metrics.items()),
        primary_metric=metrics.get(primary_metric) if primary_metric else None,
        metadata=meta if meta is not None else "{}",
        parents=list(raw.parents),
        tree=raw.tree,
        target=target,
        verdict=verdict,
        reasons=time_problems(raw.timestamp, now),
        run_backed=carries_run(metadata) if verdict else None,
        refs=refs,
        parsed_account=account,
        setup=SETUP in tags,
        amends=POLICY in tags,
        verifies=target,
        declared_format=int(declared),
    )


def _trailer_block(message: str) -> tuple[str, str, str]:
    """The description, the `Agora-Format` line that starts the trailer block, and the rest of the block
    (the first two empty when no format this reader reads starts one)."""
    for start in _STARTS:
        head, found, tail = message.rpartition(start)
        if found:
            return head, found, tail
    return "", "", message


def _values(lines: str, start: int, between: str) -> list[str]:
    """The values of a run of `key: value` lines (each ending in a newline): `_LINES` of the key."""
    return lines[start:-1].split(between) if lines else []


def _metrics(lines: list[str]) -> dict[str, float] | None:
    """The metrics of the trailer values, None when a name repeats or a value is not finite."""
    metrics = {}
    for line in lines:
        name, _, value = line.partition("=")
        number = float(value)
        if name in metrics or not math.isfinite(number):
            return None
        metrics[name] = number
    return metrics if len(metrics) <= LIMITS.metrics else None
