"""Every verdict shows on its target, with its weight and why (issue 45), end to end: the real `git agora`
against a bare remote, on a project whose score is a number in a file.

Observed: a newcomer (no confirmed work yet) reran a fake and published a run-backed "failed"; `show` of
the fake said "unverified" and listed no verdict, `analyze` had the fake as best with "Contested
verifications (0)", and `verify` printed "pushed" with no hint that the verdict did not count.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from agora_testing import agora, make_clone

SCORE = "import json\nprint(json.dumps({'loss': float(open('knob.txt').read())}))\n"
NEWCOMER = "from an account with no confirmed work yet"
OPINION = "an opinion: no rerun behind it"
SIGNAL = "1 failed rerun that does not count yet"


@dataclass
class Faked:
    """alice founded the project (loss 3.0); bob published an honest, checked 1.5; mallory published a
    fake best, claiming 0.2 for a tree that scores 1.0, and a fake non-leader, claiming 1.9 for 2.5."""

    tmp: Path
    remote: Path
    alice: Path
    setup: str
    honest: str
    fake: str
    fake_other: str

    def clone(self, name: str, account: str) -> Path:
        path = make_clone(self.tmp, name, str(self.remote), account)
        agora(path, "fetch")
        return path


def _push(clone: Path, value: str, *claim: str) -> str:
    (clone / "knob.txt").write_text(value + "\n")
    how = list(claim) or ["--check"]
    return agora(clone, "push", *how, "-m", f"knob {value}", "--tag", "result", "--json").json()["sha"]


@pytest.fixture
def faked(tmp_path, remote) -> Faked:
    alice = make_clone(tmp_path, "a", str(remote), "alice")
    (alice / "knob.txt").write_text("3.0\n")
    (alice / "score.py").write_text(SCORE)
    (alice / "agora.toml").write_text('[metric]\nname = "loss"\ntolerance = 0.01\n')
    agora(alice, "init", "--eval", "python3 score.py", "--eval-files", "score.py")
    setup = agora(alice, "whoami", "--json").json()["setup"]
    bob = make_clone(tmp_path, "b", str(remote), "bob")
    agora(bob, "fetch")
    agora(bob, "checkout", setup)
    honest = _push(bob, "1.5")
    mallory = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(mallory, "fetch")
    agora(mallory, "checkout", setup)
    fake = _push(mallory, "1.0", "--metric", "loss=0.2")
    agora(mallory, "checkout", setup)
    fake_other = _push(mallory, "2.5", "--metric", "loss=1.9")
    agora(alice, "fetch")
    return Faked(tmp_path, remote, alice, setup, honest, fake, fake_other)


def shown(clone: Path, sha: str) -> dict:
    agora(clone, "fetch")
    return agora(clone, "show", sha, "--json").json()


def analysis(clone: Path) -> dict:
    agora(clone, "fetch")
    return agora(clone, "analyze", "--json").json()


def test_a_newcomers_failed_rerun_shows_on_the_fake_with_why_it_does_not_count(faked):
    carol = faked.clone("c", "carol")
    ran = agora(carol, "verify", faked.fake)
    assert ran.stdout.startswith("failed: ") and "pushed" in ran.stdout, ran
    assert "this verdict does not count yet: carol has no confirmed work yet; it counts once" in ran.stdout, ran
    assert "confirms one of carol's results with a rerun" in ran.stdout, ran
    verdict = agora(carol, "log", "--json", "--account", "carol").json()[0]["sha"]

    out = shown(faked.alice, faked.fake)
    assert out["evidence"]["status"] == "unverified"  # it changes no status
    [row] = out["verdicts"]
    assert row["sha"] == verdict and row["account"] == "carol" and row["verdict"] == "failed", row
    assert row["metric"] == 1.0 and row["run_backed"] is True
    assert row["counts"] is False and row["why"] == NEWCOMER, row
    assert out["unsettled_failures"] == 1
    text = agora(faked.alice, "show", faked.fake).stdout
    assert f"verdict      carol: failed, measured 1, does not count: {NEWCOMER} ({verdict[:10]})" in text, text
    assert f"note         {SIGNAL}: settle it with a rerun that counts (git agora verify {faked.fake[:12]})" in text

    data = analysis(faked.alice)
    best = data["summary"]["best"]
    assert best["sha"] == faked.fake and best["status"] == "unverified", best
    assert best["unsettled_failures"] == 1 and [v["sha"] for v in best["verdicts"]] == [verdict], best
    assert best["verdicts"][0]["counts"] is False and best["verdicts"][0]["why"] == NEWCOMER
    assert data["summary"]["unsettled"] == 1
    assert any(f"the best, {faked.fake[:10]}, has {SIGNAL}" in n for n in data["summary"]["notes"]), data["summary"]
    [listed] = [r for r in data["views"]["verdicts"]["rows"] if r["sha"] == verdict]
    assert listed["target"] == faked.fake and listed["counts"] is False and listed["why"] == NEWCOMER, listed
    assert listed["metric"] == 1.0 and listed["account"] == "carol"
    text = agora(faked.alice, "analyze").stdout
    assert f"{SIGNAL}: settle it" in text and f"does not count: {NEWCOMER}" in text, text

    site = faked.tmp / "site"
    agora(faked.alice, "site", str(site))
    page = (site / "c" / faked.fake[:2] / f"{faked.fake}.html").read_text()
    assert f"{SIGNAL}: settle it with a rerun that counts" in page
    assert "<td>carol</td>" in page and f"<td>does not count: {NEWCOMER}</td>" in page, page


def test_an_opinion_shows_on_its_target_as_an_opinion(faked):
    dave = faked.clone("d", "dave")
    post = ["post", "--target", faked.fake, "--verdict", "failed", "-m", "looks wrong to me", "--json"]
    theirs = agora(dave, *post).json()["sha"]
    founders = agora(faked.alice, *post).json()["sha"]

    out = shown(faked.alice, faked.fake)
    why = {row["sha"]: (row["counts"], row["why"], row["metric"]) for row in out["verdicts"]}
    assert why == {founders: (False, OPINION, None), theirs: (False, f"{OPINION}; {NEWCOMER}", None)}, why
    assert out["unsettled_failures"] == 0 and out["evidence"]["status"] == "unverified"  # opinions are no signal
    text = agora(faked.alice, "show", faked.fake).stdout
    assert f"alice: failed, no measurement, does not count: {OPINION} ({founders[:10]})" in text, text
    assert "does not count yet" not in text


def test_the_founders_rerun_counts_says_so_and_settles_the_signal(faked):
    carol = faked.clone("c", "carol")
    agora(carol, "verify", faked.fake)
    agora(faked.alice, "fetch")
    ran = agora(faked.alice, "verify", faked.fake)
    assert "counts: alice founded the project" in ran.stdout, ran
    done = agora(faked.alice, "verify", faked.honest, "--json").json()
    assert done["counts"] is True and done["why"] is None and done["standing"]["because"] == "alice founded the project"

    out = shown(faked.alice, faked.fake)
    assert out["evidence"]["status"] == "failed" and out["unsettled_failures"] == 0, out
    counting = {row["account"]: (row["counts"], row["why"]) for row in out["verdicts"]}
    assert counting == {"alice": (True, None), "carol": (False, NEWCOMER)}, counting
    assert "does not count yet" not in agora(faked.alice, "show", faked.fake).stdout


def test_twenty_sybil_failed_reruns_suggest_their_target_once(faked):
    """A non-leader with failed reruns from accounts without standing is suggested for verification
    (also under verify = leaders, what init writes), once however many; a counting verdict ends it."""
    sybils = faked.clone("s", "sybil0")
    record = ["--meta", 'reproduced={"loss": 2.5}', "--meta", 'evaluator={"sha256": "' + "ab" * 32 + '"}']
    record += ["--meta", "sandbox=true", "--meta", "duration_s=0.6"]
    for i in range(20):
        post = ["post", "--account", f"sybil{i}", "--target", faked.fake_other, "--verdict", "failed"]
        agora(sybils, *post, "-m", f"reran it: 2.5 ({i})", *record)

    data = analysis(faked.alice)
    view = data["views"]["unverified"]
    listed = [row["sha"] for row in view["rows"]]
    assert listed.count(faked.fake_other) == 1 and faked.fake in listed and faked.honest not in listed, view
    assert next(r for r in view["rows"] if r["sha"] == faked.fake_other)["unsettled_failures"] == 20
    assert "failed reruns that do not count yet" in view["note"]
    assert data["summary"]["unsettled"] == 1 and data["summary"]["best"]["unsettled_failures"] == 0
    pending = agora(faked.alice, "verify", "--pending", "--max-evaluations", "0", "--json").json()
    assert pending["left"].count(faked.fake_other) == 1, pending
    out = shown(faked.alice, faked.fake_other)
    assert out["unsettled_failures"] == 20 and len(out["verdicts"]) == 20
    assert "20 failed reruns that do not count yet" in agora(faked.alice, "show", faked.fake_other).stdout

    agora(faked.alice, "verify", faked.fake_other)  # the founder's rerun counts: failed, settled
    view = analysis(faked.alice)["views"]["unverified"]
    assert faked.fake_other not in [row["sha"] for row in view["rows"]], view
