"""`git agora ci` is loud when it cannot do its job (issue 45): claims it leaves unverified because of
its runner (here a scorer that differs from the project's pins) end the run with exit 4, one line saying
why and a summary listing each claim, in the job log and in the forge's step summary; a failed claim is
a verdict and the job exits 0. docs/ci.md, "Exit status and summary"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agora_testing import agora, git, make_clone

CI = '\n[ci]\naccounts = ["ci"]\n'
NOT_INSTALLED = "0" * 64  # a scorer digest no installed numpy has
PINNED = f"""[metric]
name = "m"
direction = "min"
[eval]
format = 2
build = "python3 build.py --out {{artifact}}"
score = "python3 score.py {{artifact}}"
files = ["score.py"]
scorer = ["numpy"]
pins = {{ numpy = "{NOT_INSTALLED}" }}
"""
ONE_COMMAND = '[metric]\nname = "m"\ndirection = "min"\n[eval]\ncommand = "python3 e.py"\nfiles = ["e.py"]\n'


def ci_key(tmp: Path) -> str:
    secrets = tmp / "secrets"  # outside every work tree
    if not (secrets / "ci").exists():
        secrets.mkdir()
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", secrets / "ci"], check=True)
    return (secrets / "ci").read_text()


def ci_public(tmp: Path) -> str:
    ci_key(tmp)
    return (tmp / "secrets" / "ci.pub").read_text().strip()


def claim(clone: Path, value: str, title: str) -> str:
    (clone / "work.txt").write_text(title + "\n")
    return agora(clone, "push", "-m", title, "--tag", "result", "--metric", f"m={value}", "--json").json()["sha"]


def run_ci(clone: Path, secret: str, *args: str, summary: Path | None = None):
    env = {"AGORA_CI_KEY": secret, "AGORA_ACCOUNT": "ci"}
    if summary is not None:
        env["GITHUB_STEP_SUMMARY"] = str(summary)
    return agora(clone, "ci", "--no-site", *args, env=env, check=False, timeout=300)


def founded(tmp: Path, toml: str, files: dict[str, str]) -> tuple[Path, Path]:
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    alice = make_clone(tmp, "alice", str(remote), "alice")
    for name, text in files.items():
        (alice / name).write_text(text)
    (alice / "agora.toml").write_text(toml + CI + f'keys = {{ ci = "{ci_public(tmp)}" }}\n')
    agora(alice, "init")
    return remote, alice


def test_a_scorer_that_differs_from_the_pins_ends_the_run_with_exit_4_and_says_why(tmp_path):
    build = "import os, sys\nopen(os.path.join(sys.argv[2], 'x'), 'w').write('1')\n"
    remote, alice = founded(tmp_path, PINNED, {"build.py": build, "score.py": "print('{\"m\": 1.0}')\n"})
    shas = [claim(alice, "1", "first"), claim(alice, "2", "second")]
    ci, secret, summary = make_clone(tmp_path, "ci", str(remote), "ci"), ci_key(tmp_path), tmp_path / "summary.md"
    summary.write_text("earlier steps\n")

    run = run_ci(ci, secret, "--json", summary=summary)
    assert run.returncode == 4, run
    errors = [line for line in run.stderr.splitlines() if line.startswith("git agora: error:")]
    assert len(errors) == 1, run.stderr
    assert "2 claims not rerun because of this runner, not of the claims: the installed numpy differs" in errors[0]
    out = run.json()
    assert out["outcome"] == "unverified" and out["exit_code"] == 4 and "fix the runner" in out["exit_meaning"]
    (group,) = out["summary"]["skipped"]
    assert group["cause"] == "environment" and group["count"] == 2 and sorted(group["targets"]) == sorted(shas)
    assert "the installed numpy differs from the project's" in group["reason"]
    assert out["summary"]["verified"] == 0 and out["summary"]["failed"] == []
    assert len(out["witness_records"]) == 1  # what it could do, it did: the witness is published
    assert "refs/agora/log/ci" in git(remote, "for-each-ref")

    markdown = summary.read_text()
    assert markdown.startswith("earlier steps\n### git agora ci: exit 4\n"), markdown  # appended
    assert "| claims | count | commits | why |\n| --- | ---: | --- | --- |\n" in markdown
    (row,) = [line for line in markdown.splitlines() if line.startswith("| not rerun (this runner)")]
    assert "the installed numpy differs" in row and "| 2 |" in row
    assert all(f"`{sha[:12]}`" in row for sha in shas), row
    assert "| confirmed | 0 |  |  |" in markdown and "| failed | 0 |  |  |" in markdown

    again = run_ci(ci, secret)  # the job log: the same claims, still unverified, in text
    assert again.returncode == 4, again
    lines = again.stdout.splitlines()
    assert "summary: 0 verified, 0 failed, 2 not rerun" in lines, again.stdout
    at = lines.index(next(line for line in lines if line.startswith("  not rerun (this runner) 2: ")))
    assert sorted(lines[at].split(": ")[1].split(", ")) == sorted(sha[:12] for sha in shas), lines[at]
    assert lines[at + 1].startswith("    why: the installed numpy differs from the project's (pinned 000000000000")
    assert any(line.startswith("exit 4: claims left unverified for a reason of this runner") for line in lines)


def test_a_failed_verdict_is_the_job_done_exit_0(tmp_path):
    remote, alice = founded(tmp_path, ONE_COMMAND, {"e.py": "print('{\"m\": 1.0}')\n"})
    honest, inflated = claim(alice, "1", "honest"), claim(alice, "0.5", "inflated")
    ci, secret, summary = make_clone(tmp_path, "ci", str(remote), "ci"), ci_key(tmp_path), tmp_path / "summary.md"

    run = run_ci(ci, secret, "--json", summary=summary)
    assert run.returncode == 0, run
    assert "git agora: error" not in run.stderr
    out = run.json()
    verdicts = {c["target"]: c["verdict"] for c in out["checked"]}
    assert verdicts == {honest: "confirmed", inflated: "failed"}, out
    assert out["outcome"] == "done" and out["exit_code"] == 0
    assert out["summary"]["confirmed"] == [honest] and out["summary"]["failed"] == [inflated]
    assert out["summary"]["verified"] == 1 and out["summary"]["skipped"] == []
    markdown = summary.read_text()
    assert markdown.startswith("### git agora ci: exit 0\n") and f"| failed | 1 | `{inflated[:12]}` |  |" in markdown
    assert f"| confirmed | 1 | `{honest[:12]}` |  |" in markdown and "not rerun" not in markdown


def test_the_step_summary_shows_a_reason_as_literal_text_in_its_cell():
    """A reason quotes what the runner found (a path, a package): in the Markdown table it stays one
    cell of plain text, whatever it holds (a cell break, HTML, markup, a line break)."""
    from git_agora.cli.render import ci_summary_markdown
    from git_agora.ops.ci import Checked
    from git_agora.ops.ci_summary import NotRerun, summarise

    reason = "[eval] mounts names /data|x <img src=x> *bold* `code`\nnext line, which does not exist here"
    checked = [Checked("a" * 40, "bob", "t", None, reason, cause=NotRerun.ENVIRONMENT)]
    markdown = ci_summary_markdown(summarise(checked, 0, 0, 0))
    (row,) = [line for line in markdown.splitlines() if line.startswith("| not rerun")]
    assert row.count(" | ") == 3 and row.endswith(" |"), row  # four cells, none broken by the reason's |
    assert "<img" not in markdown and "&lt;img src=x&gt;" in row and "\\*bold\\*" in row and "\\`code\\`" in row
    assert "\\[eval\\] mounts names /data\\|x" in row and "next line" in row
