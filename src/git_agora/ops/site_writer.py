"""The files of a site: pages written in place on a thread, the shared script and style sheet, and
what an earlier build left that this one did not write."""

from __future__ import annotations

import contextlib
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files
from pathlib import Path

MARKER = ".agora-site"
ASSETS = ("site.css", "site.js")
WRITERS = 1  # the thread that creates the files (its calls release the GIL: a second core writes)


class PageWriter:
    """Writes pages under a directory in place, keeps the counts the report gives, and leaves a page
    whose content did not change untouched (a rebuild rewrites only what changed: creating and
    deleting 100,000 files costs far more than reading them back). The file system calls run on a
    thread (they release the GIL), so a second core writes while the first renders."""

    def __init__(self, directory: Path):
        self.pool = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="agora-site-writer")
        self.pending: deque = deque()
        self.directory = directory
        self.pages = 0
        self.total = 0
        self.largest = ("", 0)
        self.written: set[str] = set()
        self.base = str(directory)
        self.fresh = not (directory / MARKER).exists()  # nothing to compare with: write straight away
        directory.mkdir(parents=True, exist_ok=True)
        (directory / MARKER).write_text("made by `git agora site`; the next build replaces what is here\n")
        # Git ignores the whole folder: a site built inside a clone never goes into a `git agora push`
        (directory / ".gitignore").write_text(
            "# made by `git agora site`: `git add -f` to commit the site on purpose\n*\n"
        )
        (directory / "assets").mkdir(exist_ok=True)
        static = files("git_agora.web") / "static"
        for name in ASSETS:
            self.put(f"assets/{name}", (static / name).read_bytes())

    def mkdir(self, relative: str) -> None:
        (self.directory / relative).mkdir(parents=True, exist_ok=True)

    def write(self, relative: str, text: str, track: bool = True) -> None:
        """`track`: remember the path for `remove_stale` (contribution pages are known by their sha)."""
        data = text.encode("utf-8")
        self.put(relative, data, track)
        self.pages += 1
        self.total += len(data)
        if len(data) > self.largest[1]:
            self.largest = (relative, len(data))

    def put(self, relative: str, data: bytes, track: bool = True) -> None:
        if track:
            self.written.add(relative)
        self.pending.append(self.pool.submit(self._store, os.path.join(self.base, relative), data))
        while len(self.pending) > 512:  # bounded: rendering never runs far ahead of the disk
            self.pending.popleft().result()

    def flush(self) -> None:
        """Wait for every write (raising the first error), then stop the writer thread."""
        try:
            while self.pending:
                self.pending.popleft().result()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _store(self, path: str, data: bytes) -> None:
        if not self.fresh:
            with contextlib.suppress(FileNotFoundError), open(path, "rb") as handle:
                if handle.read(len(data) + 1) == data:
                    return
        with open(path, "wb") as handle:
            handle.write(data)

    def remove_stale(self, rows) -> None:
        """Delete the pages an earlier build wrote that this one did not (only inside the site's folders);
        `c/SH/SHA.html` is this build's when SHA is one of `rows` (an `ops.site_rows.Rows`)."""
        if self.fresh:
            return  # the folder was empty (`ops.site._check_target`): nothing is stale
        for folder in ("", "assets", "contributions", "lineage"):
            base = self.directory / folder
            if not base.is_dir():
                continue
            for path in base.glob("*.html" if folder != "assets" else "*"):
                if path.is_file() and path.relative_to(self.directory).as_posix() not in self.written:
                    path.unlink()
        pages = [p for p in (self.directory / "c").glob("*/*.html") if p.is_file()]
        shas = [p.name[:-5] for p in pages]
        known = rows.lookup(shas) >= 0
        for path, sha, keep in zip(pages, shas, known.tolist(), strict=True):
            if not keep or path.parent.name != sha[:2]:
                path.unlink()
