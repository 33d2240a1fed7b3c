"""A founder starts from a ready project: `git agora init --template NAME` copies the template's files,
publishes the setup they make (fixing the scorer, and saying so), and an agent's result on it is
scored by the project's evaluator in the sandbox; an unknown template or a file in the way is refused
in one line, with nothing written and nothing published."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from agora_testing import agora, git, make_clone

TEMPLATES = Path(__file__).resolve().parents[1] / "src" / "git_agora" / "templates"


def founded(tmp_path, remote, template: str, *options: str) -> tuple[Path, str]:
    """A clone of alice's that ran `init --template`; and what init said on stderr."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    said = agora(a, "init", "--template", template, *options).stderr
    return a, said


def setup_of(clone: Path) -> str:
    return agora(clone, "whoami", "--json").json()["setup"]


def tree_files(clone: Path, sha: str) -> set[str]:
    return set(git(clone, "ls-tree", "-r", "--name-only", sha).split())


def agent(tmp_path, remote) -> Path:
    """bob joins the project: his clone holds the setup's files."""
    agora(tmp_path, "clone", str(remote), "b", "--account", "bob")
    return tmp_path / "b"


def edit(path: Path, pattern: str, replacement: str) -> None:
    text, count = re.subn(pattern, replacement, path.read_text(), flags=re.M)
    assert count == 1, (path, pattern)
    path.write_text(text)


def published_result(clone: Path, message: str) -> dict:
    """`push --check` of the work tree as a result; the published contribution, as `show --json` has it."""
    agora(clone, "push", "--check", "-m", message, "--tag", "result")
    (latest, *_) = agora(clone, "log", "--json").json()
    assert latest["title"] == message, latest
    return agora(clone, "show", latest["sha"], "--json").json()


def refused(clone: Path, *args: str, says: str) -> None:
    r = agora(clone, *args, check=False)
    assert r.returncode == 1 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r


@pytest.mark.slow
def test_autoresearch_publishes_a_setup_that_scores_train_py_with_the_fixed_prepare_py(tmp_path, remote):
    a, said = founded(tmp_path, remote, "autoresearch")
    assert (
        "copied the autoresearch template: .gitignore, agora.toml, prepare.py, program.md, scorer.lock, train.py"
        in said
    )
    assert "fixed: prepare.py" in said and "fixed: agora.toml" in said and "self-scored" not in said
    setup = setup_of(a)
    assert tree_files(a, setup) == {".gitignore", "agora.toml", "prepare.py", "program.md", "scorer.lock", "train.py"}
    assert git(a, "show", f"{setup}:train.py") == (TEMPLATES / "autoresearch" / "train.py").read_text()
    assert "autoresearch" in git(a, "show", f"{setup}:program.md")
    spec = tomllib.loads(git(a, "show", f"{setup}:agora.toml"))["eval"]
    assert spec["build"] == "python3 train.py {artifact}" and spec["score"] == "python3 prepare.py score {artifact}"
    assert spec["files"] == ["prepare.py", "scorer.lock"] and spec["scorer"] == ["numpy"]

    amended = shrink_the_budget(a, 60)  # to keep the test short
    b = agent(tmp_path, remote)
    agora(b, "checkout", amended)
    edit(b / "train.py", r"^HIDDEN = .*", "HIDDEN = (64,)")
    result = published_result(b, "a narrower hidden layer")
    assert result["account"] == "bob" and 2.0 < result["metrics"]["val_bpb"] < 8.0, result
    check = result["metadata"]["check"]
    assert check["sandbox"] is True and set(check["evaluator"]["files"]) == {"prepare.py", "scorer.lock"}

    edit(b / "prepare.py", r"^VAL_BYTES = .*", "VAL_BYTES = 100  # an easier validation set")
    refused(b, "push", "--check", "-m", "score less text", "--tag", "result", says="prepare.py")


def shrink_the_budget(clone: Path, steps: int) -> str:
    """The setup's account amends the policy: prepare.py's STEPS (the budget, fixed by the setup)."""
    edit(clone / "prepare.py", r"^STEPS = \d+", f"STEPS = {steps}")
    return agora(clone, "push", "-m", f"a budget of {steps} steps", "--tag", "policy", "--json").json()["sha"]


def failed_after_its_notes(clone: Path, *args: str, says: str) -> None:
    """Exit 1, and after the evaluation's notes one error line: `says`."""
    r = agora(clone, *args, check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and lines[-1] == f"git agora: error: {says}", r
    assert all(line.startswith("git agora: note: ") for line in lines[:-1]), r


@pytest.mark.slow
def test_autoresearch_does_not_score_a_run_that_stops_short_of_the_setups_budget(tmp_path, remote):
    a, _ = founded(tmp_path, remote, "autoresearch")
    amended = shrink_the_budget(a, 40)
    b = agent(tmp_path, remote)
    agora(b, "checkout", amended)
    edit(b / "train.py", r"^MAX_STEPS = .*", "MAX_STEPS = 20  # stops at half the budget")
    said = "the run is incomplete (the evaluator found the run short of its budget: 20 of 40 steps)"
    failed_after_its_notes(b, "run", says=f"evaluation failed: {said}")
    before = agora(b, "log", "--json").json()
    push = ("push", "--check", "-m", "half the steps", "--tag", "result")
    failed_after_its_notes(b, *push, says=f"push --check: {said}; nothing published")
    assert agora(b, "log", "--json").json() == before  # nothing published
    quick = agora(b, "run", "--quick").stdout  # a debugging run scores it, never comparable
    assert "val_bpb = " in quick and "not comparable" in quick, quick


@pytest.mark.slow
def test_two_phase_pins_the_installed_numpy_and_scores_solve_py_with_the_fixed_score_py(tmp_path, remote):
    from git_agora.evaluate.identity import package_identity

    a, said = founded(tmp_path, remote, "two-phase", "--name", "sine", "--tolerance", "1e-6")
    assert "fixed: score.py" in said and "pinned: numpy" in said
    setup = setup_of(a)
    assert tree_files(a, setup) == {".gitignore", "agora.toml", "program.md", "score.py", "scorer.lock", "solve.py"}
    config = tomllib.loads(git(a, "show", f"{setup}:agora.toml"))
    assert config["project"]["name"] == "sine" and config["metric"]["tolerance"] == 1e-6  # the options override
    assert config["eval"]["pins"] == {"numpy": package_identity("numpy")["sha256"]}
    assert config["eval"]["files"] == ["score.py", "scorer.lock"] and config["eval"]["format"] == 3

    b = agent(tmp_path, remote)
    edit(b / "solve.py", r"^def coefficients\(\):\n    return .*$", LEAST_SQUARES)
    result = published_result(b, "least squares on a grid instead of the Taylor series")
    assert result["metrics"]["max_error"] < 0.01, result  # the Taylor series at 0 is off by 0.52 at pi
    assert result["metadata"]["check"]["evaluator"]["scorer"]["numpy"]["sha256"] == config["eval"]["pins"]["numpy"]

    edit(b / "score.py", r"^GRID = .*", "GRID = 3  # fewer points, smaller errors")
    refused(b, "push", "--check", "-m", "a coarser grid", "--tag", "result", says="score.py")


LEAST_SQUARES = """def coefficients():
    import numpy as np

    x = np.linspace(0.0, math.pi, 2001)
    return [float(c) for c in np.polynomial.polynomial.polyfit(x, np.sin(x), 5)]"""


def test_an_unknown_template_or_a_file_in_the_way_is_refused_with_nothing_written(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    refused(
        a, "init", "--template", "nosuch", says="there is no template 'nosuch': choose one of autoresearch, two-phase"
    )
    assert [p.name for p in a.iterdir()] == [".git"]

    (a / "train.py").write_text("mine\n")
    refused(a, "init", "--template", "autoresearch", says="would overwrite train.py")
    assert sorted(p.name for p in a.iterdir()) == [".git", "train.py"] and (a / "train.py").read_text() == "mine\n"

    (a / "train.py").unlink()  # a failure after the copy takes it back: here a build that cannot run
    build, score = "nosuchtool {artifact}", "python3 score.py {artifact}"
    refused(a, "init", "--template", "two-phase", "--build", build, "--score", score, says="'nosuchtool'")
    assert [p.name for p in a.iterdir()] == [".git"]
    assert git(a, "for-each-ref", "refs/agora/").strip() == "" and git(remote, "for-each-ref").strip() == ""


def test_a_ci_table_written_first_goes_into_the_template_and_anything_else_is_refused(tmp_path, remote):
    """docs/ci.md places [ci] before `init --template`: an agora.toml holding a [ci] table alone is taken
    into the template's agora.toml (and the setup's); one holding anything else, or no valid TOML, is
    refused in one line with nothing written."""
    import subprocess

    a = make_clone(tmp_path, "a", str(remote), "alice")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", tmp_path / "ci_ed25519"], check=True)
    line = " ".join((tmp_path / "ci_ed25519.pub").read_text().split()[:2])
    ci = f'[ci]\nformat = 2\naccounts = ["ci"]\nkeys = {{ ci = "{line}" }}\n'
    for text, says in (
        (
            ci + '\n[metric]\nname = "m"\n',
            "would overwrite agora.toml, which holds more than a [ci] table (metric): keep only a [ci] table in "
            "it (the template's agora.toml takes it in), or move it away",
        ),
        ("[ci\naccounts = 1\n", "the agora.toml here is not valid TOML ("),
        ('name = "x"\n', "which holds more than a [ci] table (name)"),
    ):
        (a / "agora.toml").write_text(text)
        refused(a, "init", "--template", "two-phase", says=says)
        assert sorted(p.name for p in a.iterdir()) == [".git", "agora.toml"] and (a / "agora.toml").read_text() == text

    (a / "agora.toml").write_text(ci)
    agora(a, "init", "--template", "two-phase")
    published = tomllib.loads(git(a, "show", f"{setup_of(a)}:agora.toml"))
    assert published["ci"] == {"format": 2, "accounts": ["ci"], "keys": {"ci": line}}, published
    assert published["eval"]["score"] == "python3 score.py {artifact}" and published["metric"]["name"] == "max_error"
    assert {"score.py", "solve.py", "scorer.lock", "agora.toml"} <= tree_files(a, setup_of(a))


def test_an_existing_gitignore_is_kept_and_completed_and_help_lists_the_templates(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    assert "autoresearch or two-phase" in agora(a, "init", "-h").stdout.replace("\n", " ").replace("  ", " ")
    (a / ".gitignore").write_text("*.log")
    agora(a, "init", "--template", "two-phase")
    assert (a / ".gitignore").read_text() == "*.log\n__pycache__/\n"
