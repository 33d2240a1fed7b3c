"""Which of two look-alike accounts is the later one (`ops.standing.account_look_alikes`): the one whose
first contribution came later, and never the setup's account, even within the same second."""

from __future__ import annotations

from frontier_tables import node, table

from git_agora.ops.standing import account_look_alikes


def test_the_founder_is_never_the_look_alike_even_within_one_second():
    rows = [node("setup", "alice", tags=("setup",), t=100), node("hello", "a1ice", "setup", t=100)]
    assert account_look_alikes(table(rows)) == {"a1ice": "alice"}  # by name alone, a1ice sorts first


def test_otherwise_the_later_first_contribution_is_the_look_alike():
    rows = [
        node("setup", "org", tags=("setup",), t=1),
        node("first", "bob_", "setup", t=5),
        node("second", "bob", "setup", t=9),
    ]
    assert account_look_alikes(table(rows)) == {"bob": "bob_"}


def test_an_invalid_setup_dated_earlier_makes_no_founder():
    rows = [
        node("setup", "alice", tags=("setup",), t=100),
        node("fake", "a1ice", tags=("setup",), t=50, valid=False),
    ]
    assert account_look_alikes(table(rows)) == {"a1ice": "alice"}  # the fake is dated first, yet is the look-alike
