"""A founder's first day: `git agora init` sets up a one-command or a two-phase evaluation from the
command line, says every file it fixes, and refuses what cannot run."""

from __future__ import annotations

import tomllib

import pytest

from agora_testing import agora, git, make_clone

TRAIN = "import json, sys\nopen(sys.argv[2] + '/model.txt', 'w').write(open('knob.txt').read())\n"
SCORE = "import json, sys\nv = float(open(sys.argv[1] + '/model.txt').read())\nprint(json.dumps({'loss': v, 'n': 3}))\n"


def founder(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "knob.txt").write_text("2.5\n")
    (a / "train.py").write_text(TRAIN)
    (a / "score.py").write_text(SCORE)
    (a / "data.txt").write_text("fixed data\n")
    return a


def setup_toml(clone) -> dict:
    setup = agora(clone, "whoami", "--json").json()["setup"]
    return tomllib.loads(git(clone, "show", f"{setup}:agora.toml"))


def test_one_command_freezes_nothing_and_says_results_are_self_scored(tmp_path, remote):
    a = founder(tmp_path, remote)
    (a / "train.py").write_text("import json\nprint(json.dumps({'loss': float(open('knob.txt').read())}))\n")
    said = agora(a, "init", "--metric", "loss", "--eval", "python3 train.py").stderr
    assert "results are self-scored" in said and "--build/--score" in said and "--eval-files" in said
    assert "fixed: agora.toml" in said and "fixed: train.py" not in said
    assert setup_toml(a)["eval"]["files"] == []
    (a / "train.py").write_text((a / "train.py").read_text() + "# a change to the training script\n")
    agora(a, "push", "--check", "-m", "the command's own script changed", "--tag", "result")  # not refused


def init_two_phases(clone, *options: str) -> str:
    """`init` with the build and score commands of the two-phase fixture; what it said on stderr."""
    build, score = "python3 train.py --out {artifact}", "python3 score.py {artifact}"
    return agora(clone, "init", "--metric", "loss", "--build", build, "--score", score, *options).stderr


def test_two_phases_from_the_command_line(tmp_path, remote):
    a = founder(tmp_path, remote)
    said = init_two_phases(a, "--eval-files", "data.txt", "--quick", "--fast", "--output", "n")
    assert "fixed: data.txt" in said and "fixed: agora.toml" in said and "self-scored" not in said
    spec = setup_toml(a)["eval"]
    assert spec["build"] == "python3 train.py --out {artifact}" and spec["score"] == "python3 score.py {artifact}"
    assert spec["files"] == ["data.txt", "score.py"] and spec["quick"] == "--fast" and spec["output"] == ["n"]
    assert spec["format"] == 2  # output is a format-2 key
    assert agora(a, "run", "--json").json()["metrics"] == {"loss": 2.5, "n": 3.0}


def test_two_phases_fix_what_the_score_command_names_by_default(tmp_path, remote):
    a = founder(tmp_path, remote)
    said = init_two_phases(a)
    assert "fixed: score.py" in said and setup_toml(a)["eval"]["files"] == ["score.py"]


def test_init_refuses_what_cannot_run_and_publishes_nothing(tmp_path, remote):
    a = founder(tmp_path, remote)
    for args, said in [
        (["--build", "nosuchtool --out {artifact}", "--score", "python3 score.py {artifact}"], "'nosuchtool'"),
        (
            [
                "--build",
                "python3 train.py --out {artifact}",
                "--score",
                "python3 score.py {artifact}",
                "--eval-files",
                "missing.py",
            ],
            "'missing.py' matches nothing",
        ),
        (["--eval", "python3 train.py", "--build", "python3 train.py {artifact}"], "choose one form"),
        (["--build", "python3 train.py --out {artifact}"], "build and score go together"),
    ]:
        r = agora(a, "init", "--metric", "loss", *args, check=False)
        assert r.returncode == 1 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert git(a, "for-each-ref", "refs/agora/").strip() == ""


def test_a_command_that_starts_with_a_shell_word_is_not_refused(tmp_path):
    from git_agora.config import ProjectConfig
    from git_agora.errors import AgoraError
    from git_agora.ops.init import _check_programs

    for command in ("cd . && python3 x.py", "FOO=1 python3 x.py", "exec python3 x.py"):
        _check_programs(ProjectConfig.parse(f'[eval]\ncommand = "{command}"\n'), tmp_path)
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    _check_programs(ProjectConfig.parse('[eval]\ncommand = "run.sh"\n'), tmp_path)  # a file of the tree
    with pytest.raises(AgoraError, match="'nosuch'"):
        _check_programs(ProjectConfig.parse('[eval]\ncommand = "nosuch x"\n'), tmp_path)


def test_init_refuses_ucb_settings_no_reader_accepts_and_publishes_nothing(tmp_path, remote):
    a = founder(tmp_path, remote)
    for table, said in [
        ('format = 2\nexploit_rank = "best"\n', "exploit_rank must be one of ucb, quality, not 'best'"),
        ('exploit_rank = "quality"\n', "exploit_rank need format = 2"),
        ("c0 = 20.0\ncee = 1.0\n", "unknown key(s) cee"),
    ]:
        (a / "agora.toml").write_text(f'[metric]\nname = "loss"\n\n[ucb]\n{table}')
        r = agora(a, "init", "--eval", "python3 score.py", check=False)
        assert r.returncode == 1 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert git(a, "for-each-ref", "refs/agora/").strip() == ""
    (a / "agora.toml").write_text('[metric]\nname = "loss"\n\n[ucb]\nformat = 2\nexploit_rank = "quality"\n')
    agora(a, "init", "--eval", "python3 score.py")
    assert setup_toml(a)["ucb"] == {"format": 2, "exploit_rank": "quality"}


def test_a_new_setup_gets_the_slots_that_met_the_comparison_and_the_papers_stay_one_line_away(tmp_path, remote):
    """Without `[ucb]`, init writes the tenth question's setting (format 3); `format = 1` keeps the paper's."""
    a = founder(tmp_path, remote)
    (a / "agora.toml").write_text('[metric]\nname = "loss"\n')
    agora(a, "init", "--eval", "python3 score.py")
    ucb = setup_toml(a)["ucb"]
    assert ucb["format"] == 3 and ucb["verify"] == "leaders" and ucb["explore_slots"] == "novel"
    assert ucb["explore_scored"] is True and ucb["explore_quality"] == "lineage" and ucb["c0"] == 20.0
    params = agora(a, "analyze", "--json").json()["slots"]["params"]
    assert params["verify"] == "leaders" and params["explore_slots"] == "novel"
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "paper.git"))
    paper = make_clone(tmp_path, "p", str(tmp_path / "paper.git"), "alice")
    (paper / "score.py").write_text(SCORE)
    (paper / "agora.toml").write_text('[metric]\nname = "loss"\n\n[ucb]\nformat = 1\n')
    agora(paper, "init", "--eval", "python3 score.py")
    assert setup_toml(paper)["ucb"] == {"format": 1}
    params = agora(paper, "analyze", "--json").json()["slots"]["params"]
    assert "verify" not in params and "explore_slots" not in params and params["c0"] == 20.0  # format 1
