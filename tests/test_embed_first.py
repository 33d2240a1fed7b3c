"""No silent embedding: analyze embeds what the frontier reads first and a bounded slice more, later runs
and `git agora index --embed` complete the cache, search says its coverage, and the cache grows by
appends that a crash cannot tear."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pexpect
import pyarrow as pa
import pytest
from test_faults_e2e import read_only, restore

import git_agora
from agora_testing import agora
from git_agora.embedding import cache as cache_module
from git_agora.embedding import incremental
from git_agora.embedding.backends import EmbeddingBackend, hashing_model_id
from git_agora.embedding.cache import VECTORS_FILE, append_embeddings, read_embeddings
from git_agora.embedding.incremental import encode_plan
from git_agora.embedding.plan import EmbedBudget, EmbedPlan, plan_embedding
from git_agora.frontier.analyze import AnalyzeConfig, frame_for
from git_agora.frontier.clusters import ClusterParams
from git_agora.frontier.embeddings import rows_table
from git_agora.frontier.needs import vectors_needed
from git_agora.ops.analyze import analyze, search
from git_agora.ops.embedding import embed_everything
from git_agora.ops.indexing import load
from site_projects import load_tracegen

SIZE = 600
WINDOW = ClusterParams(window=100)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A fetched clone of a generated 600-contribution project, no vectors cached."""
    base = tmp_path_factory.mktemp("embed-first")
    load_tracegen().generate(base / "origin.git", SIZE, 10, seed=5)
    clone = base / "clone"
    clone.mkdir()
    for args in (["init", "-q"], ["remote", "add", "origin", str(base / "origin.git")]):
        subprocess.run(["git", *args], cwd=clone, check=True)
    agora(
        clone, "fetch", env={"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    )  # module scope
    return clone


@pytest.fixture
def clone(generated, tmp_path):
    copy = tmp_path / "clone"
    shutil.copytree(generated, copy, symlinks=True)
    return copy


def cached(path: Path) -> int:
    project = git_agora.open_project(path)
    table = read_embeddings(project.repo)
    return 0 if table is None else table.num_rows


def needed_count(path: Path) -> int:
    project = git_agora.open_project(path)
    config = AnalyzeConfig.from_project(project.config, clusters=WINDOW)
    frame = frame_for(load(project).contributions, config)
    return len(vectors_needed(frame, config.clusters, config.ucb))


# --- the policy ---------------------------------------------------------------------------------


def test_the_plan_puts_the_needed_rows_first_and_the_rest_newest_first():
    table = pa.table(
        {
            "sha": [f"s{i}" for i in range(8)],
            "valid": [True, True, False, True, True, True, True, True],
            "timestamp": [10, 11, 12, 13, 14, 15, 16, 17],
        }
    )
    plan = plan_embedding(table, cached=["s1"], needed=["s6", "s3", "s2"])
    assert plan == EmbedPlan(first=("s6", "s3"), later=("s7", "s5", "s4", "s0"), total=7, cached=1)
    assert plan_embedding(table, ["s1"], everything=True).first == ("s7", "s6", "s5", "s4", "s3", "s0")


def test_the_budget_comes_from_the_environment():
    assert EmbedBudget.from_env({}) == EmbedBudget(seconds=5.0)
    assert EmbedBudget.from_env({"AGORA_EMBED_BUDGET": "0"}).none
    assert EmbedBudget.from_env({"AGORA_EMBED_BUDGET": "inf"}).unlimited
    for bad in ("soon", "-1", "nan"):
        with pytest.raises(ValueError, match="AGORA_EMBED_BUDGET"):
            EmbedBudget.from_env({"AGORA_EMBED_BUDGET": bad})


def fake_backend(calls: list[int]) -> EmbeddingBackend:
    def encode(texts):
        calls.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32)

    return EmbeddingBackend("fake", "fake-4", 4, encode)


def test_a_time_budget_stops_between_batches_after_the_needed_rows():
    plan = EmbedPlan(
        first=tuple(f"n{i}" for i in range(300)), later=tuple(f"o{i}" for i in range(2000)), total=0, cached=0
    )
    texts = {sha: sha for sha in (*plan.first, *plan.later)}
    calls: list[int] = []
    ticks = iter(range(1000))  # each clock reading is one second later
    encoded = encode_plan(plan, texts, fake_backend(calls), EmbedBudget(seconds=3), clock=lambda: next(ticks))
    assert encoded.first == 300 and calls[:2] == [256, 44]  # the needed rows whatever the budget
    assert 0 < encoded.later < 2000 and encoded.later % 256 == 0
    assert encoded.rows["sha"].to_pylist()[300:] == list(plan.later[: encoded.later])  # newest first
    nothing_more = encode_plan(plan, texts, fake_backend([]), EmbedBudget(seconds=0))
    assert (nothing_more.first, nothing_more.later) == (300, 0)
    counted = encode_plan(plan, texts, fake_backend([]), EmbedBudget(seconds=float("inf"), rows=700))
    assert counted.later == 700


def test_a_long_run_hands_its_rows_to_the_cache_a_slice_at_a_time(monkeypatch):
    monkeypatch.setattr(incremental, "FLUSH_ROWS", 512)
    plan = EmbedPlan(first=tuple(f"n{i}" for i in range(2000)), later=(), total=0, cached=0)
    stored: list[int] = []
    calls: list[int] = []
    backend = fake_backend(calls)

    def interrupted(texts):
        if len(calls) == 5:
            raise KeyboardInterrupt
        return fake_backend(calls).encode(texts)

    with pytest.raises(KeyboardInterrupt):
        encode_plan(
            plan,
            {s: s for s in plan.first},
            replace(backend, encode=interrupted),
            EmbedBudget(),
            store=lambda rows: stored.append(rows.num_rows),
        )
    assert stored == [512, 512]  # an interrupted run keeps every whole slice it encoded
    stored.clear()
    encoded = encode_plan(
        plan, {s: s for s in plan.first}, backend, EmbedBudget(), store=lambda rows: stored.append(rows.num_rows)
    )
    assert stored == [512, 512, 512, 464] and encoded.first == 2000 and encoded.rows.num_rows == 0


# --- analyze, index --embed ---------------------------------------------------------------------


def test_a_first_analyze_embeds_what_the_frontier_needs_then_the_budget_and_later_runs_complete(clone):
    project = git_agora.open_project(clone)
    needed = needed_count(clone)
    assert WINDOW.window <= needed < SIZE - 300
    analyze(project, model="hashing", budget=EmbedBudget(seconds=float("inf"), rows=100), clusters=WINDOW)
    assert cached(clone) == needed + 100
    assert any("`git agora index --embed` embeds the rest" in n for n in project.feedback.notices)
    runs = 0
    while cached(clone) < SIZE:
        before = cached(clone)
        analyze(project, model="hashing", budget=EmbedBudget(seconds=float("inf"), rows=100), clusters=WINDOW)
        assert cached(clone) == min(SIZE, before + 100)
        runs += 1
    assert runs == -(-(SIZE - needed - 100) // 100)
    project.feedback.notices.clear()
    result = analyze(project, model="hashing", clusters=WINDOW)
    assert result.diversity.available and not any("index --embed" in n for n in project.feedback.notices)


def test_index_embed_completes_the_cache_and_json_is_a_dict_without_progress(clone):
    project = git_agora.open_project(clone)
    analyze(project, model="hashing", budget=EmbedBudget(seconds=0), clusters=WINDOW)
    assert cached(clone) == needed_count(clone)
    result = agora(clone, "index", "--embed", "--model", "hashing", "--json")
    data = result.json()["embeddings"]
    assert data["embedded"] == SIZE - needed_count(clone) and data["coverage"] == {"embedded": SIZE, "total": SIZE}
    assert data["model"] == hashing_model_id() and data["runtime"].startswith("hashing") and data["rate"] > 0
    assert result.stderr == "" and cached(clone) == SIZE
    again = embed_everything(git_agora.open_project(clone), "hashing")
    assert again.embedded == 0 and again.coverage.complete and again.runtime is None  # no encoder loaded


def spawn(clone: Path, *args: str, env: dict | None = None) -> tuple[int, str]:
    environment = {**os.environ, "COLUMNS": "120", **(env or {})}
    child = pexpect.spawn("git", ["agora", *args], cwd=str(clone), env=environment, encoding="utf-8", timeout=300)
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before


def test_progress_shows_on_a_terminal_and_never_under_json(clone):
    code, shown = spawn(clone, "analyze", "--summary", "--model", "hashing", env={"AGORA_EMBED_BUDGET": "0"})
    assert code == 0 and "embedding descriptions" in shown and "/s" in shown  # the 600 recent ones
    shutil.rmtree(clone / ".git" / "agora" / "index")
    agora(clone, "index")
    code, shown = spawn(clone, "index", "--embed", "--model", "hashing")
    assert code == 0 and "embedding descriptions" in shown and f"{SIZE}/{SIZE}" in shown
    assert f"embedded {SIZE} descriptions with {hashing_model_id()} (hashing" in shown
    (clone / ".git" / "agora" / "index" / VECTORS_FILE).unlink()
    code, shown = spawn(clone, "index", "--embed", "--model", "hashing", "--json")
    assert code == 0 and "embedding descriptions" not in shown
    assert json.loads(shown)["embeddings"]["embedded"] == SIZE


# --- search -------------------------------------------------------------------------------------


def test_search_states_its_coverage_and_finds_the_unembedded_by_keyword(clone):
    project = git_agora.open_project(clone)
    analyze(project, model="hashing", budget=EmbedBudget(seconds=0), clusters=WINDOW)
    embedded = needed_count(clone)
    result = search(project, "pythia attention", model="hashing", budget=EmbedBudget(seconds=0))
    assert (result.coverage.embedded, result.coverage.total) == (embedded, SIZE)
    assert {hit.method for hit in result.hits} == {"embedding", "keyword"}
    assert result.note == (
        f"embeddings cover {embedded} of {SIZE} contributions; the others are matched by keyword; "
        "run `git agora index --embed` for the rest"
    )
    unembedded = set(plan_embedding(load(project).contributions, read_embeddings(project.repo)["sha"]).later)
    assert all(hit.sha in unembedded for hit in result.hits if hit.method == "keyword")
    assert cached(clone) == embedded  # a search with no budget embeds nothing
    text = agora(clone, "search", "pythia", "attention", "--model", "hashing", env={"AGORA_EMBED_BUDGET": "0"})
    assert f"note: embeddings cover {embedded} of {SIZE} contributions" in text.stdout and "(keyword)" in text.stdout
    data = agora(clone, "search", "pythia", "--model", "hashing", "--json", env={"AGORA_EMBED_BUDGET": "0"}).json()
    assert data["coverage"] == {"embedded": embedded, "total": SIZE}
    agora(clone, "index", "--embed", "--model", "hashing")
    data = agora(clone, "search", "pythia", "--model", "hashing", "--json").json()
    assert data["coverage"] == {"embedded": SIZE, "total": SIZE} and data["note"] is None
    assert {hit["method"] for hit in data["hits"]} == {"embedding"}


def test_search_embeds_at_most_its_budget(clone):
    project = git_agora.open_project(clone)
    result = search(project, "pythia", model="hashing", budget=EmbedBudget(seconds=float("inf"), rows=50))
    assert cached(clone) == 50 and result.coverage.embedded == 50


# --- the cache file -----------------------------------------------------------------------------


class Killed(BaseException):
    """What a kill between two steps looks like to the code after it: nothing more runs."""


def vectors(shas: list[str], seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return rows_table(shas, "m", rng.standard_normal((len(shas), 8)).astype(np.float32))


def as_dict(table: pa.Table | None) -> dict:
    assert table is not None
    return {
        (s, m): tuple(np.round(v, 6)) for s, m, v in zip(*(table[c].to_pylist() for c in ("sha", "model", "vector")))
    }


def test_appends_write_only_the_new_vectors_and_skip_cached_ones(clone):
    repo = git_agora.open_project(clone).repo
    path = clone / ".git" / "agora" / "index" / VECTORS_FILE
    append_embeddings(repo, vectors(["a", "b"], 1))
    old_bytes = path.read_bytes()
    table = append_embeddings(repo, pa.concat_tables([vectors(["b"], 9), vectors(["c", "d", "e"], 2)]))
    assert path.stat().st_size == 5 * 8 * 4 and path.read_bytes()[: len(old_bytes)] == old_bytes
    assert table["sha"].to_pylist() == ["a", "b", "c", "d", "e"]
    assert as_dict(table)[("b", "m")] == as_dict(vectors(["a", "b"], 1))[("b", "m")]  # never recomputed


@pytest.mark.parametrize("step", ["_write_keys", "_replace"])
def test_a_kill_between_the_append_and_the_keys_leaves_the_old_cache(clone, monkeypatch, step):
    repo = git_agora.open_project(clone).repo
    path = clone / ".git" / "agora" / "index" / VECTORS_FILE
    before = as_dict(append_embeddings(repo, vectors(["a", "b"], 1)))

    def killed(*args):
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(cache_module, step, killed)
        with pytest.raises(Killed):
            append_embeddings(repo, vectors(["c", "d", "e"], 2))
    assert path.stat().st_size == 5 * 8 * 4  # the vectors were written...
    assert as_dict(read_embeddings(repo)) == before  # ...but the keys name only the old ones
    after = append_embeddings(repo, vectors(["f"], 3))  # the next append writes over the torn tail
    assert path.stat().st_size == 3 * 8 * 4
    assert as_dict(after) == {**before, **as_dict(vectors(["f"], 3))}


def test_a_read_only_agora_dir_embeds_for_the_run_and_says_so(clone):
    agora_dir = clone / ".git" / "agora"
    prefix = read_only(agora_dir)
    try:
        command = [*prefix, "git", "agora", "analyze", "--json", "--model", "hashing"]
        r = subprocess.run(command, cwd=clone, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "the new embeddings are not cached" in r.stderr and "Traceback" not in r.stderr
        assert json.loads(r.stdout)["diversity"]["available"]
    finally:
        if not prefix:
            restore(agora_dir)
    assert cached(clone) == 0
