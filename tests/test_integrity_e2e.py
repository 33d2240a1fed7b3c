"""Integrity: what is published is what ran, and every evaluation uses the project's own evaluator.

Each attack is tried the way an attacker would: through `git agora` (refused), then with plain git
(`git commit-tree` + a forged log push), after which every reader marks the commit invalid and a
verification by someone else runs the project's evaluator, never the contribution's.
"""

from __future__ import annotations

import os
import shutil
from importlib.resources import files
from pathlib import Path

import pytest

from agora_testing import agora, demo_task_clone, forge, git, make_clone, publish_forged_log, worktree_tree
from git_agora.contribution import Contribution

TASK = files("git_agora") / "demo" / "task"
FAKE_SCORE = 'import json; print(json.dumps({"bpc": 0.001}))\n'


def attack(clone: Path, account: str, parent: str, path: str, content: str, claim: dict[str, float]) -> str:
    """Replace an evaluator file, publish the result with plain git, and return its sha."""
    (clone / path).write_text(content)
    tampered = Contribution(
        account=account, tags=("result",), description=f"rewrote {path}", parents=(parent,), metrics=claim
    )
    sha = forge(clone, tampered.to_message(), [parent], tree=worktree_tree(clone))
    publish_forged_log(clone, account, [sha])
    return sha


def rejected_reasons(clone: Path) -> dict[str, list[str]]:
    return {row["sha"]: row["reasons"] for row in agora(clone, "log", "--rejected", "--json").json()}


@pytest.fixture
def demo_project(tmp_path, remote):
    a = demo_task_clone(tmp_path, remote)
    baseline = agora(a, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()
    return a, baseline["sha"]


def test_a_replaced_scorer_is_refused_invalid_and_never_confirmed(tmp_path, remote, demo_project):
    a, baseline = demo_project
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    agora(m, "checkout", baseline)
    (m / "score.py").write_text(FAKE_SCORE)
    refused = agora(m, "push", "-m", "better", "--tag", "result", "--metric", "bpc=0.001", check=False)
    assert refused.returncode == 1 and "changes score.py" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert git(m, "for-each-ref", "refs/agora/log/").strip() == ""

    run = agora(m, "run", "--json").json()  # a local run ignores the replaced scorer, and says so
    assert run["ok"] and run["metrics"]["bpc"] > 2.0

    tampered = attack(m, "mallory", baseline, "score.py", FAKE_SCORE, {"bpc": 0.001})
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    assert any("changes score.py" in r for r in rejected_reasons(c)[tampered])
    summary = agora(c, "analyze", "--json").json()["summary"]
    assert summary["best"]["sha"] == baseline
    verdict = agora(c, "verify", tampered, "--json").json()
    assert verdict["verdict"] == "failed" and verdict["reproduced"]["bpc"] > 2.0, verdict
    assert git(c, "show", f"{tampered}:score.py") == FAKE_SCORE  # the tree still holds the fake


def test_a_build_cannot_write_the_score(tmp_path, remote, demo_project):
    """Two phases: the contribution's code writes an artifact; only the fixed scorer prints the metric."""
    a, baseline = demo_project
    (a / "train.py").write_text(
        "import json, os, sys\nprint(json.dumps({'bpc': 0.001}))\n"
        "json.dump({'bpc': 0.001}, open(sys.argv[2] + '/model.json', 'w'))\n"
    )
    r = agora(a, "run", "--json", check=False)
    assert r.returncode == 1 and r.json()["reason"] == "score failed"


def test_a_one_command_project_pins_the_evaluator_files_it_names(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("quality = 3\n")
    (a / "evaluate.py").write_text(
        "import json, re\nq = int(re.search(r'\\d+', open('model.py').read()).group())\n"
        "print(json.dumps({'score': 1.0 / q}))\n"
    )
    args = ["--metric", "score", "--direction", "min", "--eval", "python3 evaluate.py", "--eval-files", "evaluate.py"]
    said = agora(a, "init", *args).stderr
    assert "fixed: evaluate.py" in said and "self-scored" not in said
    setup = agora(a, "whoami", "--json").json()["setup"]
    assert 'files = ["evaluate.py"]' in git(a, "show", f"{setup}:agora.toml")
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    agora(m, "checkout", setup)
    tampered = attack(m, "mallory", setup, "evaluate.py", "print('{\"score\": 0.0}')\n", {"score": 0.0})
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    assert any("changes evaluate.py" in r for r in rejected_reasons(c)[tampered])
    verdict = agora(c, "verify", tampered, "--json").json()
    assert verdict["verdict"] == "failed" and verdict["reproduced"]["score"] == pytest.approx(1 / 3), verdict


def test_agora_toml_is_fixed_too(tmp_path, remote, demo_project):
    a, baseline = demo_project
    toml = (a / "agora.toml").read_text().replace("python3 score.py {artifact}", "echo '{\"bpc\": 0.001}' {artifact}")
    (a / "agora.toml").write_text(toml)
    r = agora(a, "push", "-m", "x", "--tag", "result", check=False)
    assert r.returncode == 1 and "changes agora.toml" in r.stderr


def test_policy_amendments_by_the_setup_account_move_the_evaluator(tmp_path, remote, demo_project, monkeypatch):
    a, baseline = demo_project
    fixed = (a / "score.py").read_text().replace("round(bits / len(test), 6)", "round(bits / len(test), 5)")
    (a / "score.py").write_text(fixed)
    amendment = agora(a, "push", "-m", "score.py: 5 decimals", "--tag", "policy", "--json").json()
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    agora(m, "checkout", amendment["sha"])
    (m / "score.py").write_text(FAKE_SCORE)
    r = agora(m, "push", "-m", "my own policy", "--tag", "policy", check=False)
    assert r.returncode == 1 and "only the setup's account (alice)" in r.stderr
    forged = attack(m, "mallory", amendment["sha"], "score.py", FAKE_SCORE, {"bpc": 0.001})
    git(m, "reset", "-q", "--hard")
    agora(m, "checkout", amendment["sha"])
    (m / "choices.py").write_text((m / "choices.py").read_text().replace("ORDER = 2", "ORDER = 3"))
    on_amendment = agora(m, "push", "--check", "-m", "order 3", "--tag", "result", "--json").json()
    claimed = agora(m, "show", on_amendment["sha"], "--json").json()["metrics"]["bpc"]
    assert claimed == round(claimed, 5)  # scored by the amended score.py

    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    reasons = rejected_reasons(c)
    assert amendment["sha"] not in reasons and on_amendment["sha"] not in reasons
    assert any("changes score.py" in r for r in reasons[forged])
    assert agora(c, "verify", on_amendment["sha"], "--json").json()["verdict"] == "confirmed"
    agora(c, "checkout", baseline)  # the old line keeps the old policy: the amended score.py is a change there
    (c / "score.py").write_text(fixed)
    r = agora(c, "push", "-m", "x", "--tag", "result", check=False)
    assert r.returncode == 1 and "changes score.py" in r.stderr
    git(c, "checkout", "-q", "--", "score.py")
    # verify across the policy boundary, both ways: each result under its own line's evaluator
    verdict = agora(c, "verify", on_amendment["sha"], "--no-publish", "--json").json()
    assert verdict["verdict"] == "confirmed", verdict
    agora(c, "checkout", amendment["sha"])
    verdict = agora(c, "verify", baseline, "--no-publish", "--json").json()
    assert verdict["verdict"] == "confirmed", verdict
    assert_the_parallel_rebuild_equals_the_serial_one(c, tmp_path, monkeypatch)


def assert_the_parallel_rebuild_equals_the_serial_one(clone, tmp_path, monkeypatch) -> None:
    """The policies in force (amendments, forged ones) come out the same in worker processes, and the
    same as a writer finds them with a walk of git's first-parent line (`amendments.policy_sha_for`)."""
    from git_agora.amendments import policy_sha_for
    from git_agora.index import parallel, store
    from git_agora.ops.indexing import _rules
    from git_agora.project import Project

    p = Project.open(clone)
    tables = []
    for threshold in (10**9, 0):
        monkeypatch.setattr(parallel, "THRESHOLD", threshold)
        store.update_index(p.repo, _rules(p), rebuild=True, directory=tmp_path / f"rebuild-{threshold}")
        tables.append(store._read(tmp_path / f"rebuild-{threshold}", None)[1])
    assert tables[0].equals(tables[1])
    assert len(set(tables[0].column("policy").to_pylist())) > 1
    root = p.setup
    for sha, policy in zip(*(tables[0].column(c).to_pylist() for c in ("sha", "policy"))):
        if policy is not None:
            assert policy_sha_for(p.repo, sha, root) == policy, sha


def test_bad_evaluator_declarations_are_one_line_errors(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "agora.toml").write_text('[eval]\ncommand = "python3 e.py"\nfiles = ["e.py", "nope/*.py"]\n')
    (a / "e.py").write_text("print('{}')\n")
    r = agora(a, "init", check=False)
    assert r.returncode == 1 and "'nope/*.py' matches nothing" in r.stderr
    assert git(a, "for-each-ref", "refs/agora/").strip() == ""
    (a / "agora.toml").write_text('[eval]\nbuild = "true"\nscore = "true {artifact}"\n')
    r = agora(a, "init", check=False)
    assert r.returncode == 1 and "must name the artifact directory" in r.stderr
    (a / "agora.toml").write_text(
        '[metric]\nname = "m"\n[eval]\nbuild = "touch {artifact}/x"\nscore = "true {artifact}"\n'
    )
    agora(a, "init")
    r = agora(a, "run", check=False)
    assert r.returncode == 1 and "no metric in the output (the evaluator printed no JSON object" in r.stderr


def test_a_verification_has_exactly_one_parent(project):
    setup = agora(project, "whoami", "--json").json()["setup"]
    (project / "model.py").write_text("order = 4\n")
    result = agora(project, "push", "-m", "r", "--tag", "result", "--metric", "bpc=2", "--json").json()
    r = agora(
        project,
        "post",
        "-m",
        "v",
        "--target",
        result["sha"],
        "--parent",
        setup,
        "--verdict",
        "failed",
        "--account",
        "bob",
        check=False,
    )
    assert r.returncode == 1 and "exactly one parent, its target" in r.stderr


@pytest.mark.slow
@pytest.mark.torch
def test_the_weight_transfer_kit_scores_with_the_installed_hybridlm(tmp_path, remote):
    pytest.importorskip("torch")
    kit = Path(__file__).resolve().parents[1] / "eval" / "weight_transfer"
    a = make_clone(tmp_path, "a", str(remote), "alice")
    for path in filter(Path.is_file, kit.iterdir()):  # the kit's files, not recipes/ or __pycache__/
        shutil.copyfile(path, a / path.name)
    small = (a / "agora.toml").read_text()
    small = small.replace("--out {artifact}", "--out {artifact} --config tiny --threads 1")
    small = small.replace(
        "hybridlm score {artifact} --json",
        "hybridlm score {artifact} --json --config tiny --texts 2 --chunk 128 --threads 1",
    )
    (a / "agora.toml").write_text(small)
    agora(a, "init")
    baseline = agora(
        a, "push", "--check", "--rerun", "-m", "random init", "--tag", "result", "--json", timeout=600
    ).json()
    shown = agora(a, "show", baseline["sha"], "--json").json()
    evaluator = shown["metadata"]["check"]["evaluator"]
    assert evaluator["scorer"]["hybridlm"]["sha256"] and "data_sha256" in shown["metadata"]["check"]["output"]

    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    agora(m, "checkout", baseline["sha"])
    fake = small.replace("hybridlm score {artifact}", "echo '{\"bpb\": 0.5}' {artifact} #")
    tampered = attack(m, "mallory", baseline["sha"], "agora.toml", fake, {"bpb": 0.5})
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    assert any("changes agora.toml" in r for r in rejected_reasons(c)[tampered])
    verdict = agora(c, "verify", tampered, "--json", timeout=600).json()
    assert verdict["verdict"] == "failed" and verdict["reproduced"]["bpb"] > 3.0, verdict
    assert verdict["same_evaluator"] is None  # the forged claim recorded no evaluator


def test_an_unchanged_result_needs_rerun_and_a_rerun_needs_an_unchanged_tree(project):
    before = git(project, "for-each-ref", "refs/agora/")
    r = agora(project, "push", "-m", "nothing", "--tag", "result", check=False)
    assert r.returncode == 1 and "nothing changed" in r.stderr and "--rerun" in r.stderr
    assert git(project, "for-each-ref", "refs/agora/") == before
    rerun = agora(project, "push", "--rerun", "-m", "same tree, measured again", "--tag", "result", "--json").json()
    assert agora(project, "show", rerun["sha"], "--json").json()["metadata"] == {"rerun": True}
    (project / "model.py").write_text("order = 9\n")
    r = agora(project, "push", "--rerun", "-m", "x", "--tag", "result", check=False)
    assert r.returncode == 1 and "differs" in r.stderr
    printed = agora(project, "push", "-m", "order 9", "--tag", "result").stdout
    assert f"  on {rerun['sha']}" in printed  # push says which parent it used


HOSTILE_BUILD = """import os, socket, sys
try:
    open(os.path.expanduser('~/pwned'), 'w').write('x')
    print('wrote outside', file=sys.stderr)
except OSError:
    print('cannot write outside', file=sys.stderr)
s = socket.socket()
s.settimeout(1)
reached = s.connect_ex(('127.0.0.1', int(os.environ.get('PROBE_PORT', '9')))) == 0
print('network' if reached else 'no network', file=sys.stderr)
exec(open('train_real.py').read())
"""


def test_unsandboxed_code_runs_as_you_and_the_sandbox_keeps_it_in(tmp_path, remote, demo_project):
    a, baseline = demo_project
    (a / "train_real.py").write_text((a / "train.py").read_text())
    (a / "train.py").write_text(HOSTILE_BUILD)
    pwned = Path(os.environ["HOME"]) / "pwned"
    r = agora(a, "push", "--check", "--no-sandbox", "-m", "same model, nosy build", "--tag", "result", "--json")
    assert "the sandbox is off (--no-sandbox)" in r.stderr
    claim = r.json()
    assert pwned.exists()  # unsandboxed, the contribution's code runs as you
    assert agora(a, "show", claim["sha"], "--json").json()["metadata"]["check"]["sandbox"] is False
    pwned.unlink()
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    verdict = agora(c, "verify", claim["sha"], "--json").json()  # sandboxed by default
    assert verdict["verdict"] == "confirmed" and verdict["sandbox"] is True, verdict
    assert not pwned.exists()


def test_sandbox_without_bubblewrap_is_a_one_line_error(tmp_path, remote, demo_project, monkeypatch):
    a, baseline = demo_project
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    tools = tmp_path / "bin"  # what the command needs, and no bwrap
    tools.mkdir()
    for name in ("git", "git-agora", "bash", "python3"):
        (tools / name).symlink_to(shutil.which(name))
    monkeypatch.setenv("PATH", str(tools))
    r = agora(c, "verify", baseline, check=False)  # the sandbox is the default
    assert r.returncode == 1 and "needs bubblewrap" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "--no-sandbox" in r.stderr
