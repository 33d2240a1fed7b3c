"""Limits on one evaluation step: memory, processes and disk, and how each was enforced.

Memory and processes are capped by a cgroup made for the step where this process may make one (as
root, with the `memory` and `pids` controllers; cgroup v1 or v2), else by rlimits (`RLIMIT_AS`,
`RLIMIT_NPROC`), which are weaker: address space is not memory, and the process count is per user.
Disk is capped by the size of the sandbox's tmpfs folders (unsandboxed: `RLIMIT_FSIZE`, per file).
Wall time is the setup's timeout (`process.run_step`). What applied is recorded with every result
and verdict (`Applied.to_dict`).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..config import GiB, KiB, Limits, MiB  # noqa: F401 (MiB: the evaluation's sizes)
from .sandbox import SANDBOX_UID


@dataclass
class Applied:
    """How one step's limits were enforced, and which were hit."""

    limits: Limits
    timeout_s: float
    memory_by: str = "none"  # cgroup | rlimit | none
    processes_by: str = "none"
    disk_by: str = "none"  # tmpfs | rlimit
    hit: set[str] = field(default_factory=set)  # "memory", "processes"

    def to_dict(self) -> dict[str, Any]:
        return {
            "time_s": self.timeout_s,
            "memory": {"bytes": self.limits.memory, "by": self.memory_by},
            "processes": {"count": self.limits.processes, "by": self.processes_by},
            "disk": {"bytes": self.limits.disk, "by": self.disk_by},
        }


# --- cgroups ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    """One cgroup directory made for a step, in one hierarchy (v1: one controller; v2: both)."""

    path: str
    version: int
    controllers: frozenset[str]

    def write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w") as handle:
            handle.write(value)

    def read(self, name: str) -> str:
        try:
            with open(os.path.join(self.path, name)) as handle:
                return handle.read()
        except OSError:
            return ""

    def events(self, name: str, key: str) -> int:
        for line in self.read(name).splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
                return int(parts[1])
        return 0

    def pids(self) -> list[int]:
        return [int(p) for p in self.read("cgroup.procs").split() if p.isdigit()]


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root inside the hierarchy, fs type, super options) of each cgroup mount."""
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((_unescape(fields[4]), _unescape(fields[3]), tail[0], set(tail[2].split(","))))
    return found


def _unescape(path: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per controller ("" for the v2 hierarchy)."""
    own: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as handle:
        for line in handle:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for controller in parts[1].split(",") if parts[1] else [""]:
                    own[controller] = parts[2]
    return own


def _inside(mount_point: str, root: str, path: str) -> str | None:
    if root != "/" and not (path == root or path.startswith(root + "/")):
        return None
    relative = path[len(root) :] if root != "/" else path
    return mount_point + relative.rstrip("/") if relative not in ("", "/") else mount_point


def _make_groups(limits: Limits) -> list[_Group]:
    """A fresh cgroup per hierarchy that caps memory and processes, where this process may make one."""
    own, groups, name = _own_cgroups(), [], f"agora-{os.getpid()}-{secrets.token_hex(4)}"
    mounts = _mounts()
    for controller in ("memory", "pids"):
        for point, root, kind, options in mounts:
            if kind == "cgroup" and controller in options and controller in own:
                parent = _inside(point, root, own[controller])
                group = _try_group(parent, name, 1, frozenset({controller}), limits)
                if group is not None:
                    groups.append(group)
                break
    missing = {"memory", "pids"} - {c for g in groups for c in g.controllers}
    if missing and "" in own:
        for point, root, kind, _ in mounts:
            if kind == "cgroup2":
                parent = _inside(point, root, own[""])
                if parent is not None and _enable_v2(parent, missing):
                    group = _try_group(parent, name, 2, frozenset(missing), limits)
                    if group is not None:
                        groups.append(group)
                break
    return groups


def _enable_v2(parent: str, controllers: set[str]) -> bool:
    try:
        with open(os.path.join(parent, "cgroup.controllers")) as handle:
            offered = set(handle.read().split())
        if not controllers <= offered:
            return False
        with open(os.path.join(parent, "cgroup.subtree_control"), "w") as handle:
            handle.write(" ".join(f"+{c}" for c in sorted(controllers)))
        return True
    except OSError:  # not ours to change, or a cgroup with processes of its own (v2's "no internal processes")
        return False


def _try_group(parent: str | None, name: str, version: int, controllers: frozenset[str], limits: Limits):
    if parent is None:
        return None
    sweep_stale(parent, "agora-", os.rmdir)
    group = _Group(os.path.join(parent, name), version, controllers)
    try:
        os.mkdir(group.path)
    except OSError:
        return None
    try:
        if "memory" in controllers:
            if version == 1:
                group.write("memory.limit_in_bytes", str(limits.memory))
                if os.path.exists(os.path.join(group.path, "memory.memsw.limit_in_bytes")):
                    group.write("memory.memsw.limit_in_bytes", str(limits.memory))
            else:
                group.write("memory.max", str(limits.memory))
                with contextlib.suppress(OSError):
                    group.write("memory.swap.max", "0")
        if "pids" in controllers:
            group.write("pids.max", str(limits.processes))
    except OSError:
        _remove(group)
        return None
    return group


def sweep_stale(folder: str, prefix: str, remove, older_than_s: float = 0.0) -> list[str]:
    """Remove what a git-agora that was killed (SIGKILL: no cleanup ran) left in `folder`: the entries
    named `<prefix><pid>-...` of processes that are gone and not changed for `older_than_s` (a folder
    shared with another PID namespace may hold a live process's entry; `remove` fails quietly on one in
    use). Returns what could not be removed, where `remove` says (a list of lines, as
    `cleanup.remove_tree` returns)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    problems: list[str] = []
    for name in names:
        pid = name[len(prefix) :].split("-", 1)[0] if name.startswith(prefix) else ""
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                path = os.path.join(folder, name)
                if time.time() - os.lstat(path).st_mtime >= older_than_s:
                    problems += remove(path) or []
    return problems


def _remove(group: _Group) -> None:
    """Kill what is left in the group, then remove it."""
    for _ in range(200):
        left = group.pids()
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, 9)
        try:
            os.rmdir(group.path)
            return
        except OSError:
            time.sleep(0.01)


# --- one step --------------------------------------------------------------------------------------


class Enforcement:
    """The limits of one running step: `preexec` runs in the step's process before it execs."""

    def __init__(self, limits: Limits, timeout_s: float, sandboxed: bool):
        self.applied = Applied(limits, timeout_s, disk_by="tmpfs" if sandboxed else "rlimit")
        self.groups = _make_groups(limits)
        controllers = {c for g in self.groups for c in g.controllers}
        self.applied.memory_by = "cgroup" if "memory" in controllers else "rlimit"
        self.applied.processes_by = "cgroup" if "pids" in controllers else "rlimit"
        self._nproc = _nproc_limit(limits.processes) if "pids" not in controllers else None
        self._sandboxed = sandboxed

    def preexec(self) -> None:
        pid = str(os.getpid())
        for group in self.groups:
            group.write("cgroup.procs", pid)
        limits = self.applied.limits
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.applied.memory_by == "rlimit":
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
        if self._nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (self._nproc, self._nproc))
        if not self._sandboxed:
            biggest = max(limits.disk, limits.artifact)
            resource.setrlimit(resource.RLIMIT_FSIZE, (biggest, biggest))

    def finish(self) -> None:
        """Note which caps were hit; kill whatever the step left running in its groups; remove them."""
        for group in self.groups:
            if "memory" in group.controllers:
                events = "memory.oom_control" if group.version == 1 else "memory.events"
                if group.events(events, "oom_kill") > 0:
                    self.applied.hit.add("memory")
            if "pids" in group.controllers and group.events("pids.events", "max") > 0:
                self.applied.hit.add("processes")
        for group in self.groups:
            _remove(group)
        self.groups = []


def _nproc_limit(processes: int) -> int:
    """RLIMIT_NPROC counts every process of the user: allow the step `processes` more than run now.
    As root the sandbox's processes run as the unprivileged `SANDBOX_UID`, whose processes are counted."""

    uid = SANDBOX_UID if os.geteuid() == 0 else os.geteuid()
    running = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    running += entry.stat().st_uid == uid
    return running + processes


@contextmanager
def enforced(limits: Limits, timeout_s: float, sandboxed: bool) -> Iterator[Enforcement]:
    enforcement = Enforcement(limits, timeout_s, sandboxed)
    try:
        yield enforcement
    finally:
        enforcement.finish()
