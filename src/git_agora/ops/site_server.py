"""The preview server of `git agora site --serve`: a built site's files on 127.0.0.1, and what a static
build leaves out at large sizes rendered on demand (the diff of a contribution that is not a scored
result, the lineage page of a result without a prebuilt one)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..project import Project
from ..web import pages
from .site_data import SiteData, lineage_view


def site_server(
    project: Project, out_dir: Path | str, port: int = 0, data: SiteData | None = None
) -> ThreadingHTTPServer:
    """An HTTP server (standard library) for a built site on 127.0.0.1: the files as they are, plus
    `/_diff/SHA.html` (any contribution's diff against its first parent) and `/lineage/SHA.html` for a
    result without a prebuilt page. The caller runs `serve_forever()`; port 0 picks a free port."""
    directory = str(Path(out_dir).resolve())
    state: dict[str, SiteData] = {} if data is None else {"data": data}
    lock = threading.Lock()

    def loaded() -> SiteData:
        with lock:
            if "data" not in state:
                state["data"] = SiteData.collect(project)
            return state["data"]

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            path = self.path.split("?", 1)[0].split("#", 1)[0]
            diff = re.fullmatch(r"/_diff/([0-9a-f]{40})\.html", path)
            lineage = re.fullmatch(r"/lineage/([0-9a-f]{40})\.html", path)
            if diff:
                return self._page(lambda: _diff_page(loaded(), diff.group(1)))
            if lineage and not (Path(directory) / "lineage" / f"{lineage.group(1)}.html").exists():
                return self._page(lambda: _lineage_page(loaded(), lineage.group(1)))
            return super().do_GET()

        def _page(self, render: Callable[[], str | None]) -> None:
            try:
                text = render()
            except Exception as exc:  # a preview server answers every request
                self.send_error(500, f"{type(exc).__name__}: {exc}")
                return
            if text is None:
                self.send_error(404, "not a contribution of this project")
                return
            body = text.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def _diff_page(data: SiteData, sha: str) -> str | None:
    from ..refs.diffs import diff_one

    row = data.rows.row(sha)
    if row is None:
        return None
    parent = data.first_parent(row)
    diff = diff_one(data.project.repo.worktree_path, sha, parent)
    files = [(f.word, f.path) for f in diff.files]
    patch = diff.patch or ""
    if diff.truncated:
        patch += f"\n[{diff.truncated} more bytes left out]"
    return pages.diff_page(data.info, sha, parent, files, patch)


def _lineage_page(data: SiteData, sha: str) -> str | None:
    row = data.rows.row(sha)
    node = -1 if row is None else int(data.node_of_row[row])
    if node < 0:
        return None
    return pages.lineage(data.info, lineage_view(data, node))
