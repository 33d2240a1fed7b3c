import math
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.contribution import (
    Contribution,
    ContributionError,
    Verdict,
    check,
    contribution_weight,
    encode_metadata,
    graph_problems,
    intrinsic_problems,
    normalize_description,
    parse_meta_option,
    parse_metric,
    split_trailers,
)

SHA_A = "a" * 40
SHA_B = "b" * 40
WITNESSED = {"witness": {"tips": {"bob": SHA_A, "carol": SHA_B}}}


def make(**kw):
    base = dict(account="alice", tags=("result",), description="did a thing", parents=(SHA_A,))
    return Contribution(**{**base, **kw})


def test_round_trip_through_the_message():
    c = make(
        metrics={"bpb": 3.3923, "loss": 1e-9},
        metadata={"band": [3.3, 3.4], "note": "é"},
        tags=("result", "swiglu"),
        cross_refs=("https://example.org/p.git#" + SHA_B,),
    )
    back = Contribution.from_message(c.to_message(), parents=c.parents)
    assert back == c


def test_a_description_that_looks_like_a_trailer_stays_text():
    c = make(description="title\n\nAgora-Tag: setup\nAgora-Account: mallory")
    back = Contribution.from_message(c.to_message(), parents=c.parents)
    assert back.tags == ("result",)
    assert back.account == "alice"
    assert back.description.endswith("Agora-Account: mallory")


def test_weights():
    assert contribution_weight(["result"], None) == 5
    assert contribution_weight(["verification"], "confirmed") == 20
    assert contribution_weight(["verification"], "partial") == 10
    assert contribution_weight(["verification"], "failed") == -20
    assert contribution_weight(["result", "wip"], None) == 0
    assert contribution_weight(["endorsed"], None) == 0
    assert contribution_weight(["my-method"], None) == 0
    assert contribution_weight(["my-method"], None, {"my-method": 7}) == 7


@pytest.mark.parametrize("text", ["bpb=abc", "bpb=nan", "bpb=inf", "bpb=-inf", "bpb", "=1", "b p=1"])
def test_bad_metrics_are_refused(text):
    with pytest.raises(ContributionError):
        parse_metric(text)


def test_metric_parses():
    assert parse_metric("bpb=3.5") == ("bpb", 3.5)


def test_meta_values_keep_json_types():
    assert parse_meta_option(["a=1", "b=[1,2]", "c=hello", 'd={"x":1}']) == {
        "a": 1,
        "b": [1, 2],
        "c": "hello",
        "d": {"x": 1},
    }
    with pytest.raises(ContributionError):
        parse_meta_option(["novalue"])


@pytest.mark.parametrize(
    "kw, problem",
    [
        (dict(tags=("hypothesis",), metrics={"bpb": 1.0}), "hypothesis carries no metric"),
        (dict(tags=("verification",), target=None, verdict=Verdict.CONFIRMED), "exactly one target, found 0"),
        (
            dict(
                tags=("verification",),
                target=SHA_A,
                extra_targets=(SHA_B,),
                verdict=Verdict.CONFIRMED,
                parents=(SHA_A, SHA_B),
            ),
            "exactly one target, found 2",
        ),
        (dict(tags=("verification",), target=SHA_B, verdict=Verdict.CONFIRMED), "exactly one parent, its target"),
        (
            dict(tags=("verification",), target=SHA_A, verdict=Verdict.FAILED, parents=(SHA_A, SHA_B)),
            "exactly one parent, its target",
        ),
        (dict(tags=("verification",), target=SHA_A), "needs a verdict"),
        (dict(description="  "), "empty description"),
        (dict(tags=()), "no tags"),
        (dict(parents=()), "only the setup is a root"),
        (dict(tags=("setup",)), "a setup has no parents"),
        (dict(metrics={"x": math.nan}), "not finite"),
        (dict(account="bad name"), "not a valid name"),
        (dict(tags=("Bad Tag",)), "not a valid tag"),
        (dict(tags=("witness",)), "lists log tips"),
        (dict(tags=("witness",), metadata={"witness": {"tips": {"bad name": SHA_A}}}), "lists log tips"),
        (dict(tags=("witness",), metadata={"witness": {"tips": {"bob": "abc"}}}), "lists log tips"),
        (dict(tags=("witness",), metadata=WITNESSED, parents=(SHA_A, SHA_B)), "exactly one parent, the setup"),
        (dict(tags=("witness",), metadata=WITNESSED, metrics={"x": 1.0}), "carries no metric"),
    ],
)
def test_intrinsic_rules(kw, problem):
    problems = intrinsic_problems(make(**kw))
    assert any(problem in p for p in problems), problems


def test_a_witness_record_lists_tips_and_nothing_else():
    assert intrinsic_problems(make(tags=("witness",), metadata=WITNESSED)) == []


def test_graph_rules():
    account_of = {SHA_A: make(sha=SHA_A).account}.get
    assert graph_problems("alice", (SHA_A,), SHA_A, account_of) == ["a verification of one's own work"]
    assert graph_problems("bob", (SHA_A,), SHA_A, account_of) == []
    assert graph_problems("alice", (SHA_B,), None, account_of) == [f"parent {SHA_B[:12]} is not a known contribution"]


def test_writers_refuse_what_the_graph_rules_find():
    own = make(sha=SHA_A)
    self_check = make(tags=("verification",), parents=(SHA_A,), target=SHA_A, verdict=Verdict.CONFIRMED)
    with pytest.raises(ContributionError, match="one's own work"):
        check(self_check, {SHA_A: own}.get)
    check(self_check._replace(account="bob"), {SHA_A: own}.get)


def test_messages_without_our_block_are_not_contributions():
    with pytest.raises(ContributionError):
        Contribution.from_message("just a commit\n\nSigned-off-by: x <x@y>\n")
    with pytest.raises(ContributionError):
        Contribution.from_message("one line")


def git_parse_trailers(message: str) -> list[tuple[str, str]]:
    out = subprocess.run(
        ["git", "interpret-trailers", "--parse"], input=message, capture_output=True, text=True, check=True
    ).stdout
    return [tuple(line.split(": ", 1)) for line in out.splitlines()]


descriptions = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=300
).filter(lambda s: normalize_description(s).strip())
trailerish = st.lists(
    st.sampled_from(["Agora-Tag: setup", "---", "--- x", "\\---", "Key: v", "", "  ", "\r", "# c", "----"]),
    max_size=8,
).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(head=descriptions, tail=trailerish)
def test_git_interpret_trailers_agrees_with_our_decoder(head, tail):
    description = head + "\n" + tail
    if not normalize_description(description).strip():
        return
    c = make(description=description, metrics={"bpb": 1.5}, metadata={"k": "v: w"})
    message = c.to_message()
    _, ours = split_trailers(message)
    assert git_parse_trailers(message) == ours
    back = Contribution.from_message(message, parents=c.parents)
    assert back.description == normalize_description(description)
    assert back.tags == c.tags and back.metrics == c.metrics and back.metadata == c.metadata


def test_a_contribution_is_what_it_says_not_how_its_meta_was_spelt():
    """`meta_text` (the Agora-Meta trailer as read) is no part of a contribution's value: a decoded
    contribution equals the one that was written, and equality and inequality agree."""
    written = make(metadata={"seed": 1}, metrics={"bpc": 2.5})
    read = Contribution.from_message(written.to_message(), parents=(SHA_A,))
    assert read.meta_text is not None and written.meta_text is None
    assert read == written and not read != written
    assert read != read._replace(description="something else")
    assert read != tuple(read)  # a record, not a tuple
    with pytest.raises(AttributeError):
        read.account = "mallory"  # immutable
    assert make().metrics == {} and make().metadata == {}


def test_a_contribution_hashes_and_shares_no_mutable_default():
    """A record in a set or as a key; the empty metrics and metadata every instance starts with cannot be
    changed in place (one shared `{}` once could, for every contribution at once)."""
    a = Contribution("alice", ("insight",), "one")
    b = Contribution("alice", ("insight",), "one")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert {a: 1}[b] == 1
    with pytest.raises(TypeError):
        a.metrics["bpc"] = 1.0  # type: ignore[index]
    with pytest.raises(TypeError):
        a.metadata["x"] = 1  # type: ignore[index]
    assert Contribution("bob", ("insight",), "two").metrics == {} and encode_metadata(a.metadata) == "{}"
