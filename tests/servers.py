"""Real Git servers on 127.0.0.1 for end-to-end tests: `git daemon` and smart HTTP (`git http-backend`)."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """Serve every repository under `base` read-write over git://127.0.0.1:PORT/."""
    port = free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            f"--base-path={base}",
            "--listen=127.0.0.1",
            f"--port={port}",
            "--max-connections=64",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port)
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class _GitHttpHandler(BaseHTTPRequestHandler):
    """A minimal CGI bridge to `git http-backend` (what Apache or nginx would do in production); with
    `tokens`, a forge's token check in front of it (`smart_http`)."""

    project_root: Path
    tokens: dict[str, str] | None = None

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def _refused(self, path: str, query: str) -> bool:
        """Answer 401 to a request without a known token, 403 to a push with a read-only one."""
        if self.tokens is None:
            return False
        scheme, _, encoded = self.headers.get("Authorization", "").partition(" ")
        try:
            token = base64.b64decode(encoded, validate=True).decode().partition(":")[2]
        except ValueError:
            token = ""
        rights = self.tokens.get(token) if scheme.lower() == "basic" else None
        pushing = path.endswith("/git-receive-pack") or "service=git-receive-pack" in query
        if rights is not None and (rights == "write" or not pushing):
            return False
        self.send_response(401 if rights is None else 403)
        if rights is None:
            self.send_header("WWW-Authenticate", 'Basic realm="forge"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def _backend(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self._refused(path, query):
            return
        env = {
            **os.environ,
            "GIT_PROJECT_ROOT": str(self.project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "agora",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        proc = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = proc.stdout.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@contextmanager
def smart_http(base: Path, tokens: dict[str, str] | None = None) -> Iterator[str]:
    """Serve every repository under `base` over smart HTTP at http://127.0.0.1:PORT/. `tokens`: as a forge
    does, only requests with `Authorization: basic` of `USER:TOKEN` for a token named here are served,
    each token `read` (fetch only: a push is refused, 403) or `write`."""
    handler = type("Handler", (_GitHttpHandler,), {"project_root": base, "tokens": tokens})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
