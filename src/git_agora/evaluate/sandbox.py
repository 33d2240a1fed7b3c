"""The sandbox one evaluation step runs in: bubblewrap over an allow-list of the host.

Nothing of the host is visible inside unless it is listed here (`Box` and `system_mounts`):
- the step's own folders: the exported tree (read-only; a build copies it into a writable tmpfs),
  the artifact (a tmpfs for the build, a read-only copy for the score), a private /tmp and an empty
  HOME, each writable folder a size-bounded tmpfs, the rest of the file system read-only;
- the interpreters on PATH with their packages, and the scorer packages, read-only, wherever they live
  (a virtualenv under a temporary folder too);
- the system paths a program needs (`/usr`, the loader's files of `/etc`), never `/root`, `/home`,
  `/etc/ssh` or any folder of signing keys (`refuse_secret_folders`);
- GPU device nodes when present; the read-only paths the setup names (`[eval] mounts`).
The environment is PATH, a locale, HOME, TMPDIR and the variables the setup lists (`[eval] env`). No
network, loopback included, unless `[eval] network = true`. Its own PID, IPC, UTS and cgroup
namespaces: when the step's top process ends, every process it started is gone.

Run as an ordinary user, bubblewrap maps the user to the unprivileged `SANDBOX_UID` in a new user
namespace and drops every capability. Run as root, it builds the namespaces with root's powers, then
`setpriv` switches to the host's unprivileged `SANDBOX_UID` with no capabilities and no new privileges
before anything of the contribution runs: an escape lands as nobody, not as root (a user namespace
would map the sandbox onto root itself).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import AgoraError

SANDBOX_UID = 65534  # nobody
SANDBOX_HOME = "/agora/home"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TURN_OFF = "pass --no-sandbox, or git config agora.sandbox off, to run contribution code unsandboxed as you"
_ETC = (  # what the dynamic loader, the C library and Python read from /etc
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/os-release",
    "/etc/mime.types",
)
_NETWORK_ETC = ("/etc/resolv.conf", "/etc/hosts", "/etc/ssl", "/etc/ca-certificates", "/etc/nsswitch.conf")
_PASSWD = (
    f"root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:{SANDBOX_UID}:{SANDBOX_UID}:nobody:{SANDBOX_HOME}:/bin/sh\n"
)
_GROUP = f"root:x:0:\nnogroup:x:{SANDBOX_UID}:\n"


class SandboxUnavailable(AgoraError):
    """The sandbox cannot start here. `reason` says why and what to install; the message adds how to
    run unsandboxed instead (`TURN_OFF`), which callers that never do (`git agora ci`) leave out."""

    def __init__(self, reason: str, joiner: str = "; "):
        super().__init__(f"{reason}{joiner}{TURN_OFF}")
        self.reason, self.joiner = reason, joiner

    def __reduce__(self):  # across processes, as made: not the message as a new reason
        return type(self), (self.reason, self.joiner)


@dataclass(frozen=True)
class Box:
    """What one step sees: read-only binds (host path, path inside), size-bounded tmpfs folders (path
    inside, bytes), the working directory, the environment, and whether it may use the network."""

    readonly: tuple[tuple[str, str], ...]
    scratch: tuple[tuple[str, int], ...]
    cwd: str
    env: Mapping[str, str]
    network: bool = False
    extra_readonly: tuple[str, ...] = field(default=())  # host paths bound at the same path


def bwrap_argv(box: Box, command: Sequence[str], etc_dir: str, info_fd: int, as_root: bool | None = None) -> list[str]:
    """The bubblewrap command line that runs `command` in `box`. `etc_dir` holds the sandbox's own
    passwd and group files; bubblewrap writes a line to `info_fd` once the sandbox is up. `as_root`
    (default: whether this process is root) picks how the unprivileged user is reached."""
    bwrap = require_bwrap()
    root = os.geteuid() == 0 if as_root is None else as_root
    argv = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "agora"]
    if not box.network:
        argv.append("--unshare-net")
    if not root:
        argv += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns"]
        argv += ["--cap-drop", "ALL"]
    argv += ["--die-with-parent", "--new-session", "--clearenv"]
    for name, value in sorted(box.env.items()):
        argv += ["--setenv", name, value]
    argv += system_mounts(box.network)
    argv += ["--ro-bind", os.path.join(etc_dir, "passwd"), "/etc/passwd"]
    argv += ["--ro-bind", os.path.join(etc_dir, "group"), "/etc/group"]
    for folder in _parents(inside for inside, _ in box.scratch):
        argv += ["--perms", "0755", "--dir", folder]  # else made 0700 as root: hidden from the sandbox's user
    for inside, size in box.scratch:
        argv += ["--perms", "1777", "--size", str(size), "--tmpfs", inside]
    binds = [(path, path) for path in sorted(set(box.extra_readonly))] + list(box.readonly)
    for folder in _parents(inside for _, inside in binds):  # after the tmpfs: a venv under /tmp stays seen
        argv += ["--perms", "0755", "--dir", folder]
    for source, inside in binds:
        argv += ["--ro-bind", source, inside]
    argv += ["--remount-ro", "/", "--chdir", box.cwd, "--info-fd", str(info_fd), "--"]
    if root:
        argv += [_setpriv(), f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups"]
        argv += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return argv + list(command)


def require_bwrap() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "the sandbox needs bubblewrap (bwrap), which is not installed here: install it (apt-get install "
            "bubblewrap, dnf install bubblewrap)",
            ", or ",
        )
    if os.geteuid() == 0:
        _setpriv()
    return bwrap


def _parents(paths: Iterable[str]) -> list[str]:
    """Every folder above these paths inside the sandbox, outermost first (not the top folders that
    the system mounts make)."""
    found: set[str] = set()
    for path in paths:
        folder = os.path.dirname(path.rstrip("/"))
        while folder not in ("", "/"):
            found.add(folder)
            folder = os.path.dirname(folder)
    return sorted(found - {"/usr", "/etc", "/dev", "/proc", "/sys", "/tmp"}, key=lambda p: (p.count("/"), p))


@functools.lru_cache(maxsize=1)
def _setpriv() -> str:
    found = shutil.which("setpriv", path="/usr/bin:/bin")
    if found is None:
        raise SandboxUnavailable(
            "the sandbox, run as root, needs setpriv (util-linux) to drop to an unprivileged user: install it",
            ", or ",
        )
    return found


def write_etc(folder: str) -> None:
    """The sandbox's /etc/passwd and /etc/group: root and nobody, nothing of the host's users."""
    os.makedirs(folder, exist_ok=True)
    for name, text in (("passwd", _PASSWD), ("group", _GROUP)):
        with open(os.path.join(folder, name), "w") as handle:
            handle.write(text)
        os.chmod(os.path.join(folder, name), 0o644)


def system_mounts(network: bool) -> list[str]:
    """/usr and what a merged-/usr system links to it; the loader's files in /etc; a new /proc and
    /dev (with a small /dev/shm) and, read-only, the CPU topology numeric libraries read; GPU nodes."""
    argv: list[str] = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for path in _ETC + (_NETWORK_ETC if network else ()):
        argv += ["--ro-bind-try", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/dev/shm"]
    gpus = sorted(p for p in _listdir("/dev") if p.startswith("nvidia")) + (
        ["dri"] if os.path.isdir("/dev/dri") else []
    )
    for node in gpus:
        argv += ["--dev-bind-try", f"/dev/{node}", f"/dev/{node}"]
    argv += (
        ["--ro-bind-try", "/sys", "/sys"]
        if gpus
        else ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    )
    return argv


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


# --- what Python code needs: interpreters and packages, read-only --------------------------------


def interpreter_paths() -> tuple[list[str], list[str]]:
    """(folders to mount read-only, bin folders for PATH): the interpreter running git-agora and the
    `python3` on PATH, each with its prefix (a virtualenv and its base), the folders their `.pth`
    files add (editable installs) and the site-packages folders."""
    executables = [sys.executable] + [p for p in (shutil.which("python3"), shutil.which("python")) if p]
    mounts: list[str] = []
    bins: list[str] = []
    for executable in dict.fromkeys(executables):
        prefix = _python_prefix(executable)
        if prefix is None:
            continue
        bins.append(os.path.dirname(os.path.abspath(executable)))
        mounts.append(prefix)
        real = os.path.realpath(executable)
        base = _python_prefix(real)
        if base is not None:
            mounts.append(base)
        mounts += _site_paths(prefix)
    for entry in sys.path:
        if entry and os.path.isabs(entry) and ("site-packages" in entry or "dist-packages" in entry):
            if os.path.isdir(entry):
                mounts.append(entry)
    return outermost(p for p in mounts if p not in ("/usr", "/")), list(dict.fromkeys(bins))


def _python_prefix(executable: str) -> str | None:
    """The folder above `bin/` of a Python executable: a virtualenv (pyvenv.cfg) or an installation;
    None for a shim script or a file that is not under a `bin` folder."""
    folder = os.path.dirname(os.path.abspath(executable))
    if os.path.basename(folder) != "bin":
        return None
    prefix = os.path.dirname(folder)
    if os.path.exists(os.path.join(prefix, "pyvenv.cfg")) or os.path.isdir(os.path.join(prefix, "lib")):
        return prefix
    return None


def _site_paths(prefix: str) -> list[str]:
    """The folders the `.pth` files of a prefix's site-packages add (editable installs)."""
    found: list[str] = []
    lib = os.path.join(prefix, "lib")
    for version in _listdir(lib):
        site = os.path.join(lib, version, "site-packages")
        for name in _listdir(site):
            if not name.endswith(".pth"):
                continue
            try:
                with open(os.path.join(site, name), encoding="utf-8", errors="replace") as handle:
                    lines = handle.read().splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if line and not line.startswith(("#", "import ")) and os.path.isabs(line) and os.path.isdir(line):
                    found.append(os.path.normpath(line))
    return found


def package_paths(names: Iterable[str]) -> list[str]:
    """Where each installed package (a scorer) lives: its package folder or module file."""

    found = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name.replace("-", "_"))
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        if spec.submodule_search_locations:
            found += [os.path.abspath(p) for p in spec.submodule_search_locations if os.path.isdir(p)]
        elif spec.origin and os.path.isfile(spec.origin):
            found.append(os.path.abspath(spec.origin))
    return found


def outermost(paths: Iterable[str]) -> list[str]:
    """The paths without those inside another of them (a bind of the outer one shows them already)."""
    kept: list[str] = []
    for path in sorted({os.path.normpath(p) for p in paths}):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


# --- folders that must never be visible -----------------------------------------------------------


def secret_folders(extra: Iterable[str] = ()) -> list[str]:
    """Folders that hold keys or a user's private files: HOME and the config folder, ~/.ssh, /root,
    /home, /etc/ssh, the default signing keys, and `extra` (a configured signing key's folder, the
    clone's own git folder)."""
    home = os.path.expanduser("~")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = [home, os.path.join(home, ".ssh"), config, os.path.join(config, "git-agora"), "/root", "/home"]
    found += ["/etc/ssh", "/etc", "/"]
    return [os.path.realpath(p) for p in [*found, *extra] if p]


def refuse_secret_folders(paths: Iterable[str], secrets: Sequence[str]) -> None:
    """A path to mount that is (or holds) a secret folder is refused in one line."""
    for path in paths:
        real = os.path.realpath(path)
        for secret in secrets:
            if real == secret or secret.startswith(real.rstrip("/") + "/"):
                raise AgoraError(
                    f"the sandbox would show {path}, which holds {secret}: mount a folder inside it instead "
                    "([eval] mounts), or move the interpreter or package out of it"
                )


def sandbox_path(bins: Sequence[str]) -> str:
    return ":".join([*bins, SYSTEM_PATH])
