"""git's own upkeep of the object store, where git agora writes objects without a git command that
would have started it.

`git fetch` and `git commit` end with `git maintenance run --auto`, which packs the loose objects once
there are too many. A post writes its commits itself (`objects.write_loose`), and a fetch the probe
answered adopts the probe's objects loose and runs no `git fetch` in this clone (`boundary.probe`):
without this, nothing ever packs them (a reader of a million contributions held 1,114 loose objects
after 150 such fetches, and every git command that looks an object up searches them).

Asking git costs a process, so it is asked only when the store is past git's own default limits,
estimated as git estimates them (a listing of one folder): then git decides with its configuration
(`gc.auto`, `gc.autoPackLimit`, `maintenance.auto`) and packs in the background (`gc.autoDetach`).
"""

from __future__ import annotations

import os
import re

from .git import Git

GC_AUTO = 6700
"""git's default `gc.auto`: more loose objects than this, and `gc --auto` packs them."""
GC_AUTO_PACK_LIMIT = 50
"""git's default `gc.autoPackLimit`: more packs than this, and `gc --auto` packs them into one."""
_LOOSE_NAME = re.compile(r"[0-9a-f]{38}")
_SAMPLED = "17"  # the one folder git counts, and scales by 256


def maintain_when_loose(git: Git, objects: str) -> bool:
    """`git maintenance run --auto --quiet` when the object directory `objects` is past git's default
    limits (`past_git_limits`); whether git was asked. A failure to ask changes nothing: the objects
    stay as they were, readable."""
    if not past_git_limits(objects):
        return False
    git.run("maintenance", "run", "--auto", "--quiet", check=False)
    return True


def past_git_limits(objects: str) -> bool:
    """Whether `gc --auto` at git's defaults would pack: more than `GC_AUTO` loose objects, estimated as
    git does from the folder `17` (more than `GC_AUTO / 256` rounded up), or more than
    `GC_AUTO_PACK_LIMIT` packs without a `.keep`."""
    return _loose_in_sample(objects) > -(-GC_AUTO // 256) or _packs(objects) > GC_AUTO_PACK_LIMIT


def _loose_in_sample(objects: str) -> int:
    try:
        names = os.listdir(os.path.join(objects, _SAMPLED))
    except OSError:
        return 0
    return sum(1 for name in names if _LOOSE_NAME.fullmatch(name))


def _packs(objects: str) -> int:
    try:
        names = set(os.listdir(os.path.join(objects, "pack")))
    except OSError:
        return 0
    return sum(1 for name in names if name.endswith(".pack") and name[:-5] + ".keep" not in names)
