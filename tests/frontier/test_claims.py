"""Claims: newest per account and target, expiry, release, follow-up work, and never evidence."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from frontier_tables import node, sha, table

from git_agora.frontier.claims import active_claims, claims_on, parse_duration


def with_claims(rows, until: dict[str, float]):
    """The rows' table, with `claim_until` in the metadata of the named rows."""
    t = table(rows)
    names = [r.name for r in rows]
    meta = [json.dumps({"claim_until": until[n]}) if n in until else "{}" for n in names]
    return t.set_column(t.schema.get_field_index("metadata"), "metadata", pa.array(meta))


def wip(name, account, target, t, **kw):
    return node(name, account, target, t=t, tags=("wip",), **kw)


def test_active_claims_expire_are_released_and_end_with_follow_up_work():
    rows = [
        node("setup", "org", tags=("setup",)),
        node("r1", "ann", "setup", t=10, metric=2.0),
        wip("c_bob", "bob", "r1", 20),  # active until 1000
        wip("c_cat", "cat", "r1", 21),  # expired at 500
        wip("c_dan", "dan", "r1", 22),  # released: a newer claim of dan's on r1 already over
        wip("c_dan2", "dan", "r1", 30),
        wip("c_eve", "eve", "setup", 23),  # eve then published a result on the target
        node("r2", "eve", "setup", t=40, metric=1.9),
        wip("c_fay", "fay", "r1", 24, valid=False),  # invalid claims never count
        wip("c_gus", "gus", "r1", 25),  # no claim_until: a plain wip, not a claim
    ]
    until = {"c_bob": 1000, "c_cat": 500, "c_dan": 1000, "c_dan2": 600, "c_eve": 1000, "c_fay": 1000}
    claims = active_claims(with_claims(rows, until), now=700)
    assert [(c.account, c.target, c.until) for c in claims] == [("bob", sha("r1"), 1000)]
    assert claims_on(claims) == {sha("r1"): claims}
    assert active_claims(with_claims(rows, until), now=1000) == [], "a claim ends at its until"
    assert [c.account for c in active_claims(with_claims(rows, until), now=550)] == ["dan", "bob"]


def test_follow_up_on_the_claim_itself_ends_it_but_others_work_does_not():
    rows = [
        node("setup", "org", tags=("setup",)),
        wip("c", "bob", "setup", 10),
        node("r_ann", "ann", "setup", t=20, metric=2.0),  # someone else's work on the target
        node("r_old", "bob", "setup", t=5, metric=2.1),  # bob's work from before the claim
    ]
    assert [c.sha for c in active_claims(with_claims(rows, {"c": 100}), now=50)] == [sha("c")]
    rows.append(node("r_bob", "bob", "c", t=30, metric=1.8))
    assert active_claims(with_claims(rows, {"c": 100}), now=50) == []


def test_a_claim_never_lasts_more_than_a_week_whatever_its_commit_says():
    rows = [node("setup", "org", tags=("setup",)), wip("c", "bob", "setup", 100)]
    forever = with_claims(rows, {"c": 10**15})
    (claim,) = active_claims(forever, now=200)
    assert claim.until == 100 + 7 * 24 * 3600
    assert active_claims(forever, now=100 + 7 * 24 * 3600) == []


@pytest.mark.parametrize(
    ("text", "seconds"), [("90m", 5400), ("2h", 7200), ("1.5d", 129600), ("45s", 45), ("600", 600), (" 3h ", 10800)]
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "2w", "-1h", "8d", "1h30m"])
def test_bad_durations_are_refused(text):
    with pytest.raises(ValueError):
        parse_duration(text)
