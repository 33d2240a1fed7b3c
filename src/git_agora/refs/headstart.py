"""The three git processes a command in a repository needs first, started before the command's own
imports so that git runs on another core meanwhile: where the repository is (`git rev-parse`), its
config (`git config --list`) and a reader of its objects (`git cat-file --batch`).

`git agora post` starts them (`cli.quick`), then `Repository.discover` takes them over; whatever no
repository took over is stopped by `close`. Each is what `Repository` would start itself, run from the
same directory, so the answers are the same; the only difference is when git runs."""

from __future__ import annotations

import os
import subprocess

LOCATION = ["rev-parse", "--path-format=absolute", "--is-bare-repository", "--git-dir", "--git-common-dir"]
LOCATION += ["--show-object-format", "--show-toplevel"]  # the top level last: git stops before it when bare
CONFIG = ["config", "--list", "-z"]
OBJECTS = ["cat-file", "--batch"]


class HeadStart:
    """The started processes (a context manager: `close` on exit); `config` and `objects` may be left out."""

    def __init__(self, directory: str | os.PathLike[str], config: bool = True, objects: bool = True):
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        pipe, quiet = subprocess.PIPE, subprocess.DEVNULL
        self.location = _start(LOCATION, directory, env, stderr=pipe)
        self.config = _start(CONFIG, directory, env, stderr=quiet) if config else None
        self.objects = _start(OBJECTS, directory, env, stdin=pipe, stderr=quiet) if objects else None

    def __enter__(self) -> HeadStart:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take_location(self) -> bytes | None:
        """rev-parse's output (None: it could not start, so the directory is not one git can run in)."""
        proc, self.location = self.location, None
        return proc.communicate()[0] if proc is not None else None

    def take_config(self) -> bytes | None:
        proc, self.config = self.config, None
        return proc.communicate()[0] if proc is not None else None

    def take_objects(self) -> subprocess.Popen | None:
        """The cat-file process, now the caller's to close."""
        proc, self.objects = self.objects, None
        return proc

    def close(self) -> None:
        """Stop and reap what nobody took over."""
        for proc in (self.location, self.config, self.objects):
            if proc is not None:
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None:
                        stream.close()
                proc.wait()
        self.location = self.config = self.objects = None


def _start(
    args: list[str], directory: str | os.PathLike[str], env: dict[str, str], **streams
) -> subprocess.Popen | None:
    """git with `args` in `directory`, its stdout a pipe; None where git cannot start there."""
    try:
        return subprocess.Popen(["git", *args], cwd=directory, stdout=subprocess.PIPE, env=env, **streams)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
