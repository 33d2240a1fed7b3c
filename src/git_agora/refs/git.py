"""A thin wrapper around the `git` executable: bulk reads, transport and working-tree plumbing.

Git itself is the fastest reader of history and the most compatible transport (it speaks to every
remote the user's git speaks to, with their credentials). Single objects: `objects` and `catfile`.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence


class GitError(RuntimeError):
    def __init__(self, args: Sequence[str], returncode: int, stderr: str):
        self.git_args = list(args)
        self.returncode = returncode
        self.stderr = stderr
        last = next((ln for ln in reversed(stderr.strip().splitlines()) if ln.strip()), "")
        super().__init__(f"git {' '.join(args[:2])} failed: {last or f'exit {returncode}'}")


class Git:
    """Runs git in one work tree (or bare repository)."""

    def __init__(self, cwd: str | os.PathLike[str]) -> None:
        self.cwd = cwd
        self._config: dict[str, str] = {}  # read once, on first use

    def __repr__(self) -> str:
        return f"Git({str(self.cwd)!r})"

    def run(
        self,
        *args: str,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> str:
        return self.run_bytes(*args, input=input, env=env, check=check, timeout=timeout).decode(
            "utf-8", "surrogateescape"
        )

    def run_bytes(
        self,
        *args: str,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> bytes:
        data = input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input
        full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
        proc = subprocess.run(
            ["git", *args],
            cwd=self.cwd,
            input=data,
            capture_output=True,
            env=full_env,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        return proc.stdout

    def attempt(self, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
        """Run git without raising; the caller reads returncode, stdout and stderr (text)."""
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}
        try:
            return subprocess.run(
                ["git", *args], cwd=self.cwd, capture_output=True, text=True, env=env, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(["git", *args], 124, "", f"timed out after {timeout} s")

    def transfer(self, *args: str, on_line: Callable[[str], None] | None = None) -> subprocess.CompletedProcess:
        """A fetch or push that is never killed while it makes progress: git reports progress on stderr
        (`--progress`), and only a transfer silent for `stall_seconds()` is stopped (exit 124). HTTP
        transfers also abort below 1 KB/s for that long (git's low-speed limit); ssh sends keepalives.
        `on_line` gets each progress line as it comes."""
        stall = stall_seconds()
        proc = self.watched(
            *TRANSFER_CONFIG, "-c", f"http.lowSpeedTime={int(stall)}", *args, stall=stall, on_line=on_line
        )
        if proc.returncode == 124:
            proc.stderr += " (set AGORA_STALL_SECONDS to wait longer)"
        return proc

    def watched(
        self, *args: str, stall: float, on_line: Callable[[str], None] | None = None, new_lines_only: bool = False
    ) -> subprocess.CompletedProcess:
        """Run git (asked for `--progress` by the caller) until it finishes, or until it has said nothing
        on stderr (`new_lines_only`: nothing but repeats) for `stall` seconds: then it is stopped with its
        helpers (exit 124). A transfer counts any word from the remote as life; a local job only moving
        counters."""
        command = ["git", *args]
        env = {
            **os.environ,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=4",
        }
        proc = subprocess.Popen(
            command, cwd=self.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
        )
        watch = _Watch(proc, on_line, new_lines_only)
        try:
            stalled = watch.wait(stall)
        except BaseException:  # an interrupt stops git and its helpers too (they have their own session)
            watch.stop()
            raise
        stderr = watch.stderr()
        if stalled:
            stderr += f"\nno progress for {stall:.0f} s: stopped"
        return subprocess.CompletedProcess(command, 124 if stalled else proc.returncode, watch.stdout(), stderr)

    def ok(self, *args: str, input: str | None = None) -> bool:
        """Whether git exits 0 (what it prints is dropped); `input` goes to its stdin."""
        data = input.encode("utf-8", "surrogateescape") if input is not None else None
        return subprocess.run(["git", *args], cwd=self.cwd, input=data, capture_output=True).returncode == 0

    def config_get(self, key: str) -> str | None:
        """The value git would give for `key` (the last one set), from one read of every config scope."""
        if not self._config:
            self._config.update(_read_config(self.cwd))
        return self._config.get(_config_key(key)) or None

    def config_set(self, key: str, value: str, check: bool = True) -> None:
        self.run("config", key, value, check=check)
        if self._config:
            self._config[_config_key(key)] = value.strip()

    def for_each_ref(self, prefix: str) -> dict[str, str]:
        """Ref name -> commit sha for every ref under prefix."""
        out = self.run("for-each-ref", "--format=%(objectname) %(refname)", prefix)
        return {name: sha for sha, name in (line.split(" ", 1) for line in out.splitlines())}

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.ok("merge-base", "--is-ancestor", ancestor, descendant)


_LOADED = "\0loaded"  # marks the cache as read even when git has no config at all


def _read_config(cwd: str | os.PathLike[str]) -> dict[str, str]:
    return _parse_config(subprocess.run(["git", "config", "--list", "-z"], cwd=cwd, capture_output=True).stdout)


def _parse_config(listed: bytes) -> dict[str, str]:
    values = {_LOADED: "1"}
    for entry in listed.decode("utf-8", "surrogateescape").split("\0"):
        key, _, value = entry.partition("\n")
        if key:
            values[_config_key(key)] = value.strip()
    return values


def _config_key(key: str) -> str:
    """Git's spelling of a key: section and name are case-insensitive, a subsection is not."""
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    return ".".join(filter(None, [section.lower(), subsection, name.lower()]))


LOG_OPTIONS = ("--no-show-signature", "--encoding=UTF-8")
"""Options every `git log` this package reads takes, so that a user's settings change nothing it reads:
`log.showSignature` would have git check each signed commit (every commit git-agora writes is) and
print the outcome before it, whatever the format; `i18n.logOutputEncoding` would re-encode messages."""
STALL_SECONDS = 300.0  # a transfer that reports nothing for this long is stopped
TRANSFER_CONFIG = (
    "-c",
    "http.lowSpeedLimit=1000",
    # A new account's first contribution builds on old work: with git's default negotiation the client
    # sends its history newest first until it reaches that parent (4.7-6.9 s for one commit at 100,000
    # contributions); skipping reaches it in a few rounds (0.06-0.08 s, measured on the same clone).
    "-c",
    "fetch.negotiationAlgorithm=skipping",
)
NEGOTIATED_PUSH = ("-c", "push.negotiate=true")
"""The same contribution's push, in a large history (`refs.sync.push_log`): git's pack-objects proves the
old parent is on the remote by walking the history from every remote tip down to it (9.6 s and 1 GB at
1,000,000 contributions with a commit-graph, 20 s without); negotiating first (one fetch round: 5-8 ms
on the same machine, a connection more over a network) names the parent as common, and the pack is
found in milliseconds."""


def stall_seconds(variable: str = "AGORA_STALL_SECONDS", default: float = STALL_SECONDS) -> float:
    """How long a watched git process may make no progress: `variable` in the environment, else `default`."""
    try:
        return float(os.environ.get(variable, default))
    except ValueError:
        return default


_LINE_END = re.compile(rb"[\r\n]")


class _Watch:
    """Reads a child's stdout and stderr as they come, in this thread (one `select` loop), noting when
    stderr last said anything (with `new_lines_only`, anything new: git repeats an unchanged progress
    line every second)."""

    def __init__(self, proc: subprocess.Popen, on_line: Callable[[str], None] | None, new_lines_only: bool = False):
        self.proc, self.on_line, self.new_lines_only = proc, on_line, new_lines_only
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self.last = time.monotonic()
        self.said = b""

    def _heard(self, chunk: bytes) -> None:
        self.err.append(chunk)
        lines = [line.strip() for line in _LINE_END.split(chunk) if line.strip()]
        if not self.new_lines_only or any(line != self.said for line in lines):
            self.last = time.monotonic()
        if lines:
            self.said = lines[-1]
        if self.on_line is not None:
            for line in lines:
                self.on_line(line.decode("utf-8", "replace"))

    def wait(self, stall: float) -> bool:
        """Read until the child closes both streams, then reap it; True when it was stopped for saying
        nothing for `stall` seconds. The reads block (no polling: a 20 ms push must not wait out a
        sleep); silence is checked at least once a second."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        stalled = False
        with selectors.DefaultSelector() as streams:
            streams.register(self.proc.stdout, selectors.EVENT_READ, self.out.append)
            streams.register(self.proc.stderr, selectors.EVENT_READ, self._heard)
            while streams.get_map():
                for key, _ in streams.select(timeout=min(1.0, stall)):
                    chunk = os.read(key.fd, 1 << 16)
                    if chunk:
                        key.data(chunk)
                    else:
                        streams.unregister(key.fileobj)
                if not stalled and time.monotonic() - self.last > stall:
                    stalled = True
                    self._kill()  # its streams close, which ends the loop
        self.proc.wait()
        return stalled

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def stop(self) -> None:
        """Kill the child and every helper it started (ssh, remote helpers, upload-pack)."""
        self._kill()
        self.proc.wait()

    def stdout(self) -> str:
        return b"".join(self.out).decode("utf-8", "replace")

    def stderr(self) -> str:
        return b"".join(self.err).decode("utf-8", "replace")
