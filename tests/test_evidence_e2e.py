"""Evidence no single account can bend (issue 26), end to end: the real `git agora` against a bare remote,
on the demo's n-gram task.

- A verdict counts only when it records its rerun (`git agora verify` writes it) and comes from an
  account with standing: the setup's account, the policy's members and `[ci] accounts`, or one
  established by a counting confirmation of its own work. Other verdicts weigh nothing, and say why.
- One counting failure against a result another account confirmed contests it: it stays scored, marked.
- A contribution counts as published no earlier than one second after its latest parent: a copy of the
  best, backdated, cannot take its new-best credit.
- After a policy amendment that changes the evaluator, results scored under the old one are listed
  apart (`earlier_epoch`); an amendment of the brief alone starts no new epoch.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from agora_testing import agora, demo_task_clone, git, make_clone

OPINION = "this verdict weighs nothing: an opinion: no rerun behind it; from an account with no confirmed work"
NEWCOMER = "this verdict weighs nothing: from an account with no confirmed work yet"
KEYS = Path(".config") / "git-agora"  # under $HOME: the accounts' signing keys


@dataclass
class Founded:
    """alice founded the project (the setup's account) and published the baseline (bpc 3.048, checked);
    bob built on it and published the best, witten-bell smoothing (bpc 2.729, checked, unverified)."""

    tmp: Path
    remote: Path
    alice: Path
    bob: Path
    setup: str
    baseline: str
    best: str
    best_bpc: float

    def clone(self, name: str, account: str, at: str | None = None) -> Path:
        path = make_clone(self.tmp, name, str(self.remote), account)
        agora(path, "fetch")
        if at:
            agora(path, "checkout", at)
        return path


_TEMPLATE: dict[str, Founded] = {}  # per test process: built once, copied for each test


def _template(tmp_path_factory) -> Founded:
    if "founded" not in _TEMPLATE:
        root = tmp_path_factory.mktemp("template")
        remote = root / "remote.git"
        git(root, "init", "-q", "--bare", str(remote))
        alice = demo_task_clone(root, remote)
        setup = agora(alice, "whoami", "--json").json()["setup"]
        baseline = agora(alice, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json")
        bob = make_clone(root, "b", str(remote), "bob")
        agora(bob, "fetch")
        agora(bob, "checkout", baseline.json()["sha"])
        best = push_result(bob, "witten-bell smoothing", METHOD='"witten_bell"')
        bpc = agora(bob, "show", best, "--json").json()["metrics"]["bpc"]
        shutil.copytree(Path(os.environ["HOME"]) / KEYS, root / "keys")
        _TEMPLATE["founded"] = Founded(root, remote, alice, bob, setup, baseline.json()["sha"], best, bpc)
    return _TEMPLATE["founded"]


@pytest.fixture
def founded(tmp_path, tmp_path_factory) -> Founded:
    """A copy of the founded project (remote, alice's and bob's clones, their keys) for this test alone."""
    template = _template(tmp_path_factory)
    remote = tmp_path / "remote.git"
    shutil.copytree(template.remote, remote, symlinks=True)
    clones = []
    for clone in (template.alice, template.bob):
        shutil.copytree(clone, tmp_path / clone.name, symlinks=True)
        git(tmp_path / clone.name, "remote", "set-url", "origin", str(remote))
        clones.append(tmp_path / clone.name)
    shutil.copytree(template.tmp / "keys", Path(os.environ["HOME"]) / KEYS, dirs_exist_ok=True)
    fields = {**template.__dict__, "tmp": tmp_path, "remote": remote, "alice": clones[0], "bob": clones[1]}
    return Founded(**fields)


def set_choice(clone: Path, line_start: str, new_line: str) -> None:
    path = clone / "choices.py"
    lines = [new_line if ln.startswith(line_start) else ln for ln in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def push_result(clone: Path, message: str, **choices: str) -> str:
    """Set the knobs (`ORDER="3"`, `METHOD='"witten_bell"'`) and publish a checked result: its sha."""
    for knob, value in choices.items():
        set_choice(clone, knob, f"{knob} = {value}")
    return agora(clone, "push", "--check", "-m", message, "--tag", "result", "--json").json()["sha"]


def analysis(clone: Path) -> dict:
    agora(clone, "fetch")
    return agora(clone, "analyze", "--json").json()


def shas(view: dict) -> list[str]:
    return [row["sha"] for row in view["rows"]]


def status_in(out: dict, sha: str) -> str:
    """A contribution's verification status, as the `recent` view lists it."""
    return next(row["status"] for row in out["views"]["recent"]["rows"] if row["sha"] == sha)


def run_record(bpc: float) -> list[str]:
    """`--meta` options of a hand-written verdict that carries a rerun record like `git agora verify`'s
    (measured values, evaluator identity, sandbox flag, duration): nothing ran to produce it."""
    return [
        "--meta",
        f'reproduced={{"bpc": {bpc}}}',
        "--meta",
        'evaluator={"sha256": "' + "ab" * 32 + '"}',
        "--meta",
        "sandbox=true",
        "--meta",
        "duration_s=0.6",
    ]


def test_a_fresh_accounts_failed_verdicts_leave_the_honest_best_in_place(founded):
    """Observed: one `post --verdict failed` from an account nobody knew took the best off the leaderboard,
    the summary and the exploit slot. An opinion weighs nothing; a rerun record from a newcomer neither."""
    best = founded.best
    mallory = founded.clone("m", "mallory")
    failed = ["post", "--target", best, "--verdict", "failed", "--json"]
    opinion = agora(mallory, *failed, "-m", "does not reproduce here").json()["sha"]
    backed = agora(mallory, *failed, "--account", "eve", "-m", "reran it: bpc 3.9", *run_record(3.9)).json()["sha"]

    out = analysis(founded.alice)
    summary = out["summary"]
    assert summary["best"]["sha"] == best and summary["best"]["status"] == "unverified", summary
    assert summary["results"] == 2 and summary["contested"] == 0
    assert shas(out["views"]["leaders"]) == [best, founded.baseline]
    assert out["views"]["leaders"]["rows"][0]["status"] == "unverified"
    exploit = next(slot for slot in out["slots"]["slots"] if slot["name"] == "exploit")
    assert exploit["suggestions"][0]["sha"] == best, exploit
    assert OPINION in agora(founded.alice, "show", opinion).stdout
    assert agora(founded.alice, "show", backed, "--json").json()["run_notes"] == [NEWCOMER]


def test_confirmations_from_fresh_accounts_do_not_revive_a_failed_claim(founded):
    """Observed: three accounts made up on the spot 'confirmed' a claim the setup's account had rerun and
    found false, and it came back as the best. Their verdicts weigh nothing: it stays failed."""
    set_choice(founded.bob, "ORDER", "ORDER = 3")
    claim = ["push", "-m", "witten-bell, order 3", "--tag", "result", "--metric", "bpc=1.2345", "--json"]
    false = agora(founded.bob, *claim).json()["sha"]  # no --check: the claim is made up
    agora(founded.alice, "fetch")
    verdict = agora(founded.alice, "verify", false, "--json").json()
    assert verdict["verdict"] == "failed" and verdict["push"] == "pushed", verdict

    strangers = founded.clone("c", "carol")
    for account in ("carol", "dave", "erin"):
        extra = run_record(1.2345) if account == "erin" else []  # a rerun record of its own does not help
        post = ["post", "--account", account, "--target", false, "--verdict", "confirmed", "-m", "works for me"]
        agora(strangers, *post, *extra)

    out = analysis(founded.alice)
    summary = out["summary"]
    assert summary["best"]["sha"] == founded.best, summary
    assert summary["results"] == 2 and summary["contested"] == 0
    assert status_in(out, false) == "failed"
    assert false not in shas(out["views"]["leaders"])
    assert all(false not in [s["sha"] for s in slot["suggestions"]] for slot in out["slots"]["slots"])


def test_a_backdated_copy_of_the_best_does_not_take_its_credit(founded):
    """Observed: mallory copied bob's best (same tree, same metric) into a child of it dated years earlier
    and became the first to reach it. It counts as published one second after bob's. (The command dates
    every contribution now; the copy is written by the library's `post` with a `timestamp`, signed and
    pushed to mallory's log as a modified client would.)"""
    from git_agora.ops.publish import post
    from git_agora.project import Project

    best = founded.best
    mallory = founded.clone("m", "mallory")
    dated = int(git(mallory, "log", "-1", "--format=%ct", best)) - 5 * 365 * 86400
    copy = post(
        Project.open(mallory, account="mallory"),
        "witten-bell smoothing, first",
        ("result",),
        parents=[best],
        metrics={"bpc": founded.best_bpc},
        timestamp=dated,
    )
    assert copy.shared, copy
    assert git(mallory, "rev-parse", f"{copy.sha}^{{tree}}") == git(mallory, "rev-parse", f"{best}^{{tree}}")

    out = analysis(founded.alice)
    assert int(git(founded.alice, "log", "-1", "--format=%ct", copy.sha)) == dated
    top = out["summary"]["best"]
    assert top["sha"] == best and top["account"] == "bob", top
    assert top["priority"] == "claimed time, unwitnessed" and top["ties"] == 1 and top["tied_at_time"] == []
    leaders = {row["sha"]: row for row in out["views"]["leaders"]["rows"]}
    assert set(leaders) == {best, copy.sha, founded.baseline}  # the copy is valid: it is ranked
    assert leaders[best]["new_best"] is True and leaders[copy.sha]["new_best"] is False, leaders
    assert leaders[best]["rank"] == leaders[copy.sha]["rank"] == 1
    assert shas(out["views"]["leaders"])[:2] == [best, copy.sha]  # same value: the earlier, effectively, first
    assert leaders[copy.sha]["timestamp"] == dated and top["effective_time"] == top["timestamp"]  # as claimed


def test_an_evaluator_amendment_sets_earlier_results_apart_and_a_brief_amendment_does_not(founded):
    """Observed: after the setup's account changed score.py, results measured by the old scorer were ranked
    against the new ones. They are listed apart (earlier_epoch), with a note; an amendment of the brief
    alone keeps the epoch. carol indexes fetch by fetch, and her index equals one rebuilt from scratch."""
    old = {founded.best, founded.baseline}
    carol = founded.clone("c", "carol")

    def read() -> dict:
        agora(carol, "fetch")
        agora(carol, "index", "--check")  # the incremental update equals a rebuild
        out = agora(carol, "analyze", "--json").json()
        assert out["summary"]["rejected"] == 0 and set(shas(out["views"]["earlier_epoch"])) == old, out
        return out

    score = founded.alice / "score.py"
    score.write_text(score.read_text().replace("round(bits / len(test), 6)", "round(bits / len(test), 5)"))
    scorer = agora(founded.alice, "push", "-m", "score.py: 5 decimals", "--tag", "policy", "--json").json()["sha"]
    out = read()
    assert out["summary"]["best"] is None and out["views"]["leaders"]["rows"] == []
    assert any("no result is scored under it yet" in n and "earlier evaluator" in n for n in out["summary"]["notes"])

    agora(founded.bob, "fetch")
    agora(founded.bob, "checkout", scorer)
    new = push_result(founded.bob, "witten-bell, interpolated", INTERPOLATE="True")
    out = read()
    assert shas(out["views"]["leaders"]) == [new] and out["summary"]["best"]["sha"] == new
    assert out["summary"]["results"] == 1
    assert any("2 result(s) scored under an earlier evaluator" in n for n in out["summary"]["notes"]), out["summary"]
    agora(carol, "site", str(carol.parent / "site"))  # the site's overview lists them apart, too
    overview = (carol.parent / "site" / "index.html").read_text()
    apart = overview.split("Scored under an earlier evaluator", 1)[1].split("<h2>", 1)[0]
    assert all(sha[:10] in apart for sha in old) and new[:10] not in apart

    brief = founded.alice / "program.md"
    brief.write_text(brief.read_text() + "\nPrefer changes you can explain in one line.\n")
    agora(founded.alice, "push", "-m", "program.md: one-line changes", "--tag", "policy")
    out = read()  # the brief's amendment is now the policy; it scores as the one before: one epoch
    assert shas(out["views"]["leaders"]) == [new] and out["summary"]["best"]["sha"] == new


def test_a_rerun_of_an_earlier_epochs_result_re_measures_it_under_the_current_evaluator(founded):
    """Observed: `push --check --rerun` on a checkout of a result scored before an evaluator amendment stayed
    on that result's line, so it re-measured it under the old scorer. The rerun now goes on the current
    line: first parent the amendment, second the old result, the old code with the current evaluator
    files (in the published tree and in the work tree), ranked among the current results."""
    score = founded.alice / "score.py"
    score.write_text(score.read_text().replace("round(bits / len(test), 6)", "round(bits / len(test), 4)"))
    scorer = agora(founded.alice, "push", "-m", "score.py: 4 decimals", "--tag", "policy", "--json").json()["sha"]
    bob = founded.bob
    agora(bob, "fetch")
    agora(bob, "checkout", founded.best)
    rerun = ["push", "--check", "--rerun", "--tag", "result", "-m", "witten-bell under the 4-decimal scorer"]
    sha = agora(bob, *rerun, "--json").json()["sha"]

    assert git(bob, "log", "-1", "--format=%P", sha).split() == [scorer, founded.best]
    for path in ("score.py", "agora.toml"):
        assert git(bob, "rev-parse", f"{sha}:{path}") == git(bob, "rev-parse", f"{scorer}:{path}")
    assert git(bob, "rev-parse", f"{sha}:choices.py") == git(bob, "rev-parse", f"{founded.best}:choices.py")
    assert git(bob, "status", "--porcelain") == "" and (bob / "score.py").read_text() == score.read_text()
    shown = agora(bob, "show", sha, "--json").json()
    assert shown["metrics"]["bpc"] == round(founded.best_bpc, 4) and shown["metadata"]["rerun"] is True, shown
    out = analysis(founded.alice)
    assert shas(out["views"]["leaders"]) == [sha] and founded.best in shas(out["views"]["earlier_epoch"])

    agora(bob, "checkout", sha)  # within one epoch, a rerun stays where it is
    again = agora(bob, *rerun, "--json").json()["sha"]
    assert git(bob, "log", "-1", "--format=%P", again).split() == [sha]


def test_an_amendment_on_a_result_indexed_fetch_by_fetch_equals_a_rebuild(founded):
    """Observed: carol, indexing as she fetched, held alice's amendment of score.py (built on her baseline,
    not on the setup) invalid, "changes score.py", and a rebuild did not: the update did not know the
    setup's account, so it did not see an amendment."""
    carol = founded.clone("c", "carol")
    agora(carol, "index", "--check")
    score = founded.alice / "score.py"
    score.write_text(score.read_text().replace("round(bits / len(test), 6)", "round(bits / len(test), 5)"))
    agora(founded.alice, "push", "-m", "score.py: 5 decimals", "--tag", "policy")
    agora(carol, "fetch")
    assert agora(carol, "log", "--rejected", "--json").json() == []
    agora(carol, "index", "--check")


def test_the_root_setup_is_looked_up_only_for_a_row_tagged_policy(founded, monkeypatch):
    """An update reads the root setup's row (the oldest: the first row group of the largest segment) only
    to tell amendments from other policy rows; a +1 that amends nothing reads the rows it builds on."""
    import git_agora
    from git_agora.index import segments

    carol = git_agora.open_project(founded.clone("c", "carol"))
    git_agora.fetch(carol)
    asked: list[set[str]] = []
    real_find_rows = segments.find_rows

    def find_rows(directory, found, keys, columns=None):
        asked.append({sha for _, sha in keys})
        return real_find_rows(directory, found, keys, columns)

    monkeypatch.setattr(segments, "find_rows", find_rows)
    agora(founded.alice, "post", "-m", "an insight", "--tag", "insight", "--parent", founded.baseline)
    assert git_agora.fetch(carol).new_contributions == 1
    assert founded.baseline in set().union(*asked) and founded.setup not in set().union(*asked)
    asked.clear()
    score = founded.alice / "score.py"
    score.write_text(score.read_text().replace("round(bits / len(test), 6)", "round(bits / len(test), 5)"))
    agora(founded.alice, "push", "-m", "score.py: 5 decimals", "--tag", "policy")
    assert git_agora.fetch(carol).new_contributions == 1
    assert founded.setup in set().union(*asked)
    assert git_agora.log(carol, rejected=True) == []  # the amendment is one


def test_a_minted_accounts_failure_does_not_contest_what_the_founder_confirmed_and_a_newcomers_neither(founded):
    """alice (the setup's account) confirms bob's result by rerunning it. A failure with a rerun record from
    mallory, who has no confirmed work, weighs nothing; the same from carol, established by alice's
    confirmation of her own result, is outranked by alice's verdict (`[verdicts] format = 2`, which init
    writes): the best stays confirmed. (Neither failure comes from a real rerun: bob's result reproduces
    exactly, so both are hand-written with the record `git agora verify` writes.) Derived accounts that
    disagree contest a result: test_ranks_e2e."""
    best = founded.best
    carol = founded.clone("c", "carol", at=founded.baseline)
    own = push_result(carol, "order 3", ORDER="3")
    agora(founded.alice, "fetch")
    for sha in (best, own):
        assert agora(founded.alice, "verify", sha, "--json").json()["verdict"] == "confirmed"

    mallory = founded.clone("m", "mallory")
    failure = ["post", "--target", best, "--verdict", "failed", "-m", "reran it: bpc 3.9", *run_record(3.9)]
    agora(mallory, *failure)
    out = analysis(founded.alice)
    assert out["summary"]["best"]["status"] == "confirmed" and out["summary"]["contested"] == 0, out["summary"]

    agora(carol, "fetch")
    outranked = agora(carol, *failure, "--json").json()["sha"]
    out = analysis(founded.alice)
    summary = out["summary"]
    assert summary["best"]["sha"] == best and summary["best"]["status"] == "confirmed", summary
    assert summary["contested"] == 0 and summary["results"] == 3
    assert out["views"]["contested"]["rows"] == []
    leaders = {row["sha"]: row for row in out["views"]["leaders"]["rows"]}
    assert leaders[best]["rank"] == 1 and leaders[best]["status"] == "confirmed"
    assert leaders[own]["status"] == "confirmed"  # what made carol established
    assert exploit_first(out) == best
    notes = agora(founded.alice, "show", outranked, "--json").json()["run_notes"]
    assert notes == ["this verdict weighs nothing: outranked by the trust root's verdict on this result"]


def exploit_first(out: dict) -> str:
    return next(slot for slot in out["slots"]["slots"] if slot["name"] == "exploit")["suggestions"][0]["sha"]
