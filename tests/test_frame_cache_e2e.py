"""The kept frame (`ops.frame_cache`) and clustering (`ops.link_cache`) through the real `git agora`: a
generated project (`tracegen`) grows by random appends (results, insights, hypotheses, reports,
verifications with verdicts, a new account's first post with its identity) fetched by a reader, and
after each the reader's `analyze --json` from the kept state equals the one computed cold (the state
files deleted first), byte for byte, and so do the states both leave. Amendments, identities the trust
root names and the other ways an old row changes are covered row by row in
`tests/frontier/test_incremental.py`."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

from agora_testing import agora, git
from git_agora.frontier.incremental import exact
from git_agora.ops.frame_cache import FRAME_FILE, read_state
from git_agora.ops.link_cache import LINK_FILE

ROOT = Path(__file__).resolve().parents[1]


def _tracegen():
    spec = importlib.util.spec_from_file_location("tracegen", ROOT / "eval" / "bench" / "tracegen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("tracegen", module)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules["tracegen"])
    return sys.modules["tracegen"]


LOGS = "refs/agora/remotes/origin/log"


def tips(clone: Path) -> list[str]:
    return git(clone, "for-each-ref", "--format=%(objectname)", "refs/agora/").split()


def restorable(clone: Path) -> bool:
    """Would the next analyze in `clone` grow the kept frame rather than build it cold?"""
    from git_agora.frontier.analyze import AnalyzeConfig
    from git_agora.frontier.incremental import restore, state_key
    from git_agora.ops.analyze import ANALYZE_COLUMNS
    from git_agora.ops.indexing import load
    from git_agora.ops.standing import root_and_config
    from git_agora.project import Project

    project = Project.open(clone)
    contributions = load(project, ANALYZE_COLUMNS).contributions
    root, _ = root_and_config(project, contributions)
    config = AnalyzeConfig.from_project(project.config, root=root)
    kept = read_state(clone / ".git" / "agora" / "index" / FRAME_FILE)
    key = state_key(config.direction, config.tolerance, config.weights, root)
    options = {"direction": config.direction, "tolerance": config.tolerance, "weights": config.weights, "root": root}
    return kept is not None and restore(kept, contributions, key, **options) is not None


def test_analysis_from_the_kept_frame_equals_a_cold_one_after_each_fetch(tmp_path):
    tracegen = _tracegen()
    origin = tmp_path / "origin.git"
    tracegen.generate(origin, 300, 6)
    reader = tmp_path / "reader"
    reader.mkdir()
    git(reader, "init", "-q")
    git(reader, "remote", "add", "origin", str(origin))
    agora(reader, "fetch")
    state = reader / ".git" / "agora" / "index" / FRAME_FILE
    quiet = {"AGORA_EMBED_BUDGET": "0"}
    args = ("analyze", "--json", "--model", "hashing")
    agora(reader, *args, env=quiet)
    assert state.exists()
    rng = random.Random(7)
    # after the newcomer's post (dated now), the generated ones are dated before it: they sort among
    # the indexed rows, as a clock behind or a log pushed late makes them, and still take the kept frame
    kinds = ["result", "insight", "hypothesis", "report", "verification", "result", "newcomer", "result", "insight"]
    seen = set()
    for step in range(len(kinds)):
        kind = kinds[step] if step < len(kinds) else rng.choice(kinds)
        seen.add(kind)
        if kind == "newcomer":  # a real post: a new account, its identity, on an old parent
            writer = tmp_path / "writer"
            if not writer.exists():
                agora(tmp_path, "clone", str(origin), "writer")
            old = git(reader, "config", "agora.setup").strip()
            agora(writer, "post", "-m", "a first insight", "--tag", "insight", "--parent", old, account="newcomer")
        else:
            tracegen.append(origin, None, n=rng.choice([1, 2, 4]), kind=kind)
        tips_before = tips(reader)
        agora(reader, "fetch")
        if kind in ("result", "insight", "hypothesis", "report"):
            assert restorable(reader), f"step {step}: {kind}s took the cold path"
        if step > kinds.index("newcomer"):  # the case itself: every new commit dated before the newcomer's
            newest = int(git(reader, "log", "-1", "--format=%ct", f"{LOGS}/newcomer").strip())
            added = git(reader, "log", "--format=%ct", *tips(reader), "--not", *tips_before).split()
            assert added and max(map(int, added)) < newest
        warm = agora(reader, *args, env=quiet).stdout
        kept = read_state(state)
        state.unlink()
        (state.parent / LINK_FILE).unlink()  # the window's clustering: linked again
        assert agora(reader, *args, env=quiet).stdout == warm, f"step {step} ({kind})"
        again = read_state(state)
        assert kept is not None and again is not None and exact(kept, again), f"step {step} ({kind})"
    assert {"result", "verification", "newcomer"} <= seen


def test_the_kept_state_is_written_beside_the_analysis_finished_and_its_failure_raised_when_it_ends():
    """`writes_aside` runs the state's write while the block goes on (here the write waits for the block,
    which could not finish if they took turns), has finished it when the block ends, and raises what it
    raised there; a state handed to it is read-only meanwhile."""
    import threading

    import numpy as np
    import pyarrow as pa
    import pytest

    from git_agora.frontier.incremental import FrameState
    from git_agora.ops.frame_cache import _frozen, writes_aside

    block_ran, written = threading.Event(), []

    def write() -> None:
        assert block_ran.wait(timeout=60), "the write ran before the block, not beside it"
        written.append(True)

    with writes_aside() as aside:
        aside(write)
        block_ran.set()
    assert written == [True]

    def failing() -> None:
        raise AssertionError("the frame state's header outgrew its room")

    with pytest.raises(AssertionError, match="outgrew"):
        with writes_aside() as aside:
            aside(failing)

    strings = pa.array([], pa.string())
    state = _frozen(FrameState("key", strings, strings, strings, {"flags": np.zeros(3, np.uint16)}))
    with pytest.raises(ValueError, match="read-only"):
        state.arrays["flags"][0] = 1
