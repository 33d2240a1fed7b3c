"""A trust root that minted accounts cannot bend (issue 46, part B), end to end: the real `git agora`
against a bare remote, on the demo's n-gram task. `git agora init` writes `[verdicts] format = 2`.

Observed ("minted standing"): the founder confirmed carol's result with one real `verify`; carol, now
established, confirmed dave's honest result with a real `verify`; dave, established through carol,
forged a confirmation of a fake the founder had failed with a rerun, and the fake became the summary
best ("contested") and the only exploit suggestion; his forged `failed` contested bob's honest best,
which the founder had confirmed. With ranks the founder's verdicts outrank carol's, only the trust root
mints standing (dave has none), and a contested result is not the best, not what `clone` checks out,
and the exploit slot offers to verify it instead of building on it. A project whose policy has no
`[verdicts]` table keeps the older rules until an amendment adds the key.
"""

from __future__ import annotations

from pathlib import Path

from test_evidence_e2e import (
    NEWCOMER,
    Founded,
    analysis,
    founded,
    push_result,
    run_record,
    set_choice,
    shas,
)  # fmt: skip

from agora_testing import agora

__all__ = ["founded"]  # the fixture, shared with test_evidence_e2e

OUTRANKED = "this verdict weighs nothing: outranked by the trust root's verdict on this result"


def status_in(out: dict, sha: str) -> str:
    """A contribution's verification status, as any view that lists it with one says."""
    rows = (row for view in out["views"].values() for row in view["rows"] if row["sha"] == sha and "status" in row)
    return next(rows)["status"]


def exploit(out: dict) -> list[dict]:
    return next(slot for slot in out["slots"]["slots"] if slot["name"] == "exploit")["suggestions"]


def suggested(out: dict) -> set[str]:
    return {s["sha"] for slot in out["slots"]["slots"] for s in slot["suggestions"]}


def minted_standing(founded: Founded) -> dict[str, str]:
    """The observed case: the founder (alice) confirms carol's result and bob's best and fails bob's fake,
    with real reruns; carol confirms dave's honest result with a real rerun; then dave and carol forge
    reruns: a confirmation of the fake and a failure of bob's best (hand-written records)."""
    bob, best = founded.bob, founded.best
    carol = founded.clone("c", "carol", at=founded.baseline)
    own = push_result(carol, "order 3", ORDER="3")
    dave = founded.clone("d", "dave", at=founded.baseline)
    honest = push_result(dave, "order 1", ORDER="1")
    claim = ["push", "-m", "witten-bell, order 3", "--tag", "result", "--metric", "bpc=1.2345", "--json"]
    set_choice(bob, "ORDER", "ORDER = 3")
    fake = agora(bob, *claim).json()["sha"]  # no --check: the claim is made up
    agora(founded.alice, "fetch")
    for sha, verdict in ((own, "confirmed"), (best, "confirmed"), (fake, "failed")):
        assert agora(founded.alice, "verify", sha, "--json").json()["verdict"] == verdict
    agora(carol, "fetch")
    assert agora(carol, "verify", honest, "--json").json()["verdict"] == "confirmed"
    forged = {}
    for name, clone in (("dave", dave), ("carol", carol)):
        agora(clone, "fetch")
        confirm = ["post", "--target", fake, "--verdict", "confirmed", "-m", "reran it", *run_record(1.2345)]
        forged[f"{name} confirms"] = agora(clone, *confirm, "--json").json()["sha"]
        fail = ["post", "--target", best, "--verdict", "failed", "-m", "reran it: bpc 3.9", *run_record(3.9)]
        forged[f"{name} fails"] = agora(clone, *fail, "--json").json()["sha"]
    return {"fake": fake, "own": own, "honest": honest, **forged}


def amend(clone: Path, edit, message: str) -> str:
    """A policy amendment by the setup's account: `edit` rewrites agora.toml."""
    path = clone / "agora.toml"
    path.write_text(edit(path.read_text()))
    return agora(clone, "push", "-m", message, "--tag", "policy", "--json").json()["sha"]


def without_verdicts_table(text: str) -> str:
    """agora.toml as init writes it (the `[verdicts]` table last, after its comment), without that table."""
    kept = text.split("# Whose verdicts count", 1)[0]
    assert "[verdicts]" not in kept and "[ucb]" in kept
    return kept


def test_the_root_outranks_what_it_minted_and_a_derived_account_mints_nothing(founded):
    assert "[verdicts]\nformat = 2" in (founded.alice / "agora.toml").read_text()  # what init wrote
    made = minted_standing(founded)
    fake, best = made["fake"], founded.best

    out = analysis(founded.alice)
    summary = out["summary"]
    assert summary["best"]["sha"] == best and summary["best"]["status"] == "confirmed", summary
    assert summary["contested"] == 0 and summary["best"]["unsettled_failures"] == 0  # the root decided it
    assert status_in(out, fake) == "failed" and fake not in shas(out["views"]["leaders"])
    assert exploit(out)[0]["sha"] == best and fake not in suggested(out)
    assert status_in(out, made["honest"]) == "confirmed"  # carol's real confirmation still counts as evidence

    def notes(key: str) -> list[str]:
        return agora(founded.alice, "show", made[key], "--json").json()["run_notes"]

    assert notes("dave confirms") == notes("dave fails") == [NEWCOMER]  # only the trust root mints standing
    assert notes("carol confirms") == notes("carol fails") == [OUTRANKED]
    rows = {row["sha"]: row for row in out["views"]["verdicts"]["rows"]}
    assert rows[made["carol fails"]]["counts"] is False and "outranked" in rows[made["carol fails"]]["why"]


def test_a_contested_result_is_listed_but_does_not_lead_nor_is_it_cloned(founded, tmp_path):
    """Two accounts the founder minted disagree on bob's best (carol reran it and confirmed it; dave posts
    a forged failure): it stays on the leaderboard, marked, but the summary best is the next result,
    `clone` checks that one out, and the exploit slot offers to verify it."""
    best = founded.best
    carol = founded.clone("c", "carol", at=founded.baseline)
    own = push_result(carol, "order 3", ORDER="3")
    dave = founded.clone("d", "dave", at=founded.baseline)
    honest = push_result(dave, "order 1", ORDER="1")
    agora(founded.alice, "fetch")
    for sha in (own, honest):
        assert agora(founded.alice, "verify", sha, "--json").json()["verdict"] == "confirmed"
    agora(carol, "fetch")
    assert agora(carol, "verify", best, "--json").json()["verdict"] == "confirmed"
    agora(dave, "fetch")
    agora(dave, "post", "--target", best, "--verdict", "failed", "-m", "reran it: bpc 3.9", *run_record(3.9))

    out = analysis(founded.alice)
    leaders = {row["sha"]: row for row in out["views"]["leaders"]["rows"]}
    assert leaders[best]["status"] == "contested" and leaders[best]["rank"] == 1
    assert out["summary"]["contested"] == 1
    top = out["summary"]["best"]
    runner_up = shas(out["views"]["leaders"])[1]
    assert top["sha"] == runner_up != best and top["status"] != "contested", top
    assert f"a contested result, {best[:10]}, would be the best" in " ".join(out["summary"]["notes"])
    [offer] = [s for s in exploit(out) if s["sha"] == best]
    assert offer["action"] == "verify" and f"git agora verify {best[:12]}" in offer["reason"], offer
    assert all(s["action"] != "verify" for s in exploit(out) if s["sha"] != best)

    cloned = agora(tmp_path, "clone", str(founded.remote), "joined", "--json").json()
    assert cloned["best"] is True and cloned["checked_out"] == runner_up, cloned

    agora(founded.alice, "verify", best)  # the trust root settles it: its confirmation outranks dave's failure
    out = analysis(founded.alice)
    assert out["summary"]["best"]["sha"] == best and out["summary"]["best"]["status"] == "confirmed"


def test_a_policy_without_the_key_keeps_the_older_rules_and_an_amendment_adopts_the_ranks(founded):
    """The founder amends the policy to a table without `[verdicts]` (what a project founded before the
    key holds): the minted-standing case reads as it did (dave counts through carol; the fake leads,
    contested). A second amendment that adds `[verdicts] format = 2` brings the ranks."""
    amend(founded.alice, without_verdicts_table, "agora.toml: the policy of an older project")
    made = minted_standing(founded)
    fake, best = made["fake"], founded.best

    out = analysis(founded.alice)
    assert out["summary"]["best"]["sha"] == fake and out["summary"]["best"]["status"] == "contested"
    assert status_in(out, best) == "contested"
    assert agora(founded.alice, "show", made["dave confirms"], "--json").json()["run_notes"] == []

    amend(founded.alice, lambda text: text + "\n[verdicts]\nformat = 2\n", "agora.toml: ranked standing")
    out = analysis(founded.alice)
    assert out["summary"]["best"]["sha"] == best and out["summary"]["best"]["status"] == "confirmed"
    assert status_in(out, fake) == "failed" and fake not in suggested(out)
