"""Projects for the site tests: a small one whose contributions try to inject HTML and scripts, the
demo project and the paper-scale trace; and a headless Chromium (Debian's `chromium`, driven by
Playwright) that records console errors, failed requests and dialogs."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import git_agora as agora
from agora_testing import make_clone

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Every one of these would set window.__pwned (or open a dialog) if it ever ran.
SCRIPT = '<script>window.__pwned = "script"; alert("script")</script>'
IMG = "<img src=x onerror=\"window.__pwned = 'img'; alert('img')\">"
BREAKOUT = '</script><script>window.__pwned = "json"</script><!--'
ATTRIBUTE = '"><svg onload="window.__pwned = \'attr\'">'
HOSTILE_FILE = "<img src=x onerror=alert(1)>.txt"
SCORER = (
    "import json, re\n"
    'order = int(re.search(r"\\d+", open("model.py").read()).group())\n'
    'print(json.dumps({"bpc": 10.0 / order}))\n'
)


@contextlib.contextmanager
def isolated_env(home: Path) -> Iterator[None]:
    """What conftest's autouse fixture sets, for module-scoped fixtures (they run before it)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text('[init]\n\tdefaultBranch = main\n[protocol "file"]\n\tallow = always\n')
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
        mp.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
        for key in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
            mp.setenv(key, "t")
        for key in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
            mp.setenv(key, "t@t")
        mp.delenv("AGORA_ACCOUNT", raising=False)
        yield


@dataclass
class Hostile:
    """A project whose every free-text field tries to run a script."""

    clone: Path
    results: dict[str, str] = field(default_factory=dict)  # name -> sha


def hostile_project(base: Path, metric: bool = True) -> Hostile:
    remote = base / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    a = make_clone(base, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 2\n")
    (a / "score.py").write_text(SCORER)
    alice = agora.open_project(a)
    if not metric:
        agora.init_project(alice)
        agora.post(alice, f"An idea {SCRIPT}\n\n{IMG}", ["hypothesis"], meta={"note": SCRIPT})
        return Hostile(a)
    agora.init_project(
        alice, name=f"pwn {SCRIPT}", metric="bpc", direction="min", eval_command=f"{sys.executable} score.py",
        tolerance=1e-9,
    )  # fmt: skip
    out = Hostile(a)
    baseline = agora.Push(f"Baseline {SCRIPT}\n\n{IMG}\n{ATTRIBUTE}", check_claim=True, rerun=True)
    out.results["baseline"] = agora.publish_worktree(alice, baseline).sha
    b = make_clone(base, "b", str(remote), "bob")
    bob = agora.open_project(b)
    agora.fetch(bob)
    agora.checkout(bob, out.results["baseline"])
    (b / "model.py").write_text("order = 5\n")
    (b / HOSTILE_FILE).write_text("a file whose name is HTML\n")
    better = agora.Push(f"Order 5 {BREAKOUT}\n\n{IMG}", check_claim=True, meta={"note": SCRIPT})
    out.results["better"] = agora.publish_worktree(bob, better).sha
    out.results["insight"] = agora.post(bob, f"Insight {IMG}", ["insight"], parents=[out.results["better"]]).sha
    (b / "model.py").write_text("order = 4\n")
    out.results["unscored"] = agora.publish_worktree(bob, agora.Push(f"wip {ATTRIBUTE}", ["wip"])).sha
    agora.sync(bob)
    agora.fetch(alice)
    out.results["verification"] = agora.verify(alice, out.results["better"]).published.sha
    agora.fetch(alice)
    return out


def demo_project(base: Path) -> Path:
    """`git agora demo` with two workers and two rounds (the founder's clone)."""
    from git_agora.demo.run import DemoPlan, run_demo

    summary = run_demo(DemoPlan.create(base / "demo", 2, 2, 3), lambda event: None)
    return summary.founder


def load_tracegen():
    """eval/bench/tracegen.py as a module."""
    if "tracegen" in sys.modules:
        return sys.modules["tracegen"]
    spec = importlib.util.spec_from_file_location("tracegen", ROOT / "eval" / "bench" / "tracegen.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["tracegen"] = module
    spec.loader.exec_module(module)
    return module


def paper_project(base: Path) -> Path:
    """The paper-scale synthetic trace (1,703 contributions, 17 accounts), fetched into a clone,
    with its description vectors cached (the lexical model)."""
    tracegen = load_tracegen()
    tracegen.generate(base / "origin.git", tracegen.PAPER_CONTRIBUTIONS, tracegen.PAPER_ACCOUNTS, seed=0)
    clone = base / "paper"
    clone.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    subprocess.run(["git", "remote", "add", "origin", str(base / "origin.git")], cwd=clone, check=True)
    project = agora.open_project(clone)
    agora.fetch(project)
    agora.analyze(project, model="hashing")
    return clone


# --------------------------------------------------------------------------- the browser


def browser_or_skip():
    """Playwright's Chromium on the system browser. Missing: a skip, except where the CI script asks
    for the browser tests (AGORA_REQUIRE_BROWSER=1), where it is a failure."""
    problem = None
    if importlib.util.find_spec("playwright") is None:
        problem = "playwright is not installed (pip install playwright)"
    elif not CHROMIUM.exists() and not shutil.which("chromium"):
        problem = "chromium is not installed (apt-get install chromium)"
    if problem:
        if os.environ.get("AGORA_REQUIRE_BROWSER"):
            pytest.fail(f"browser tests are required here: {problem}")
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    return sync_playwright, str(CHROMIUM if CHROMIUM.exists() else shutil.which("chromium"))


class Watched:
    """A page that records console errors, uncaught exceptions, failed requests and dialogs."""

    def __init__(self, context):
        self.page = context.new_page()
        self.problems: list[str] = []
        self.dialogs: list[str] = []
        page = self.page
        page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url} {r.failure}"))
        page.on("response", lambda r: self.problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
        page.on("dialog", self._dialog)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def visit(self, url: str):
        response = self.page.goto(url, wait_until="load")
        assert response is None or response.ok, f"{url}: HTTP {response.status}"
        return self.page


@contextlib.contextmanager
def served(project: Path, site: Path) -> Iterator[str]:
    """The preview server of `git agora site --serve` on a free port, in a thread."""
    from git_agora.ops.site_server import site_server

    server = site_server(agora.open_project(project), site, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
