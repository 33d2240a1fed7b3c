"""`index.quick`: the one-expression reading of ordinary commits gives exactly the values of the general
path (`parallel.general_values`), or leaves the commit to it; it takes every ordinary contribution."""

from __future__ import annotations

import random
from dataclasses import replace

import hostile

from git_agora.contribution import GRAMMAR, Contribution, Verdict, git_identity
from git_agora.index import build, parallel, quick
from git_agora.index.reader import RawCommit

NOW = 1_900_000_000
SHA = [f"{n:040x}" for n in range(1, 80)]


def raw(message: str, parents=(SHA[0],), timestamp: int = NOW - 100, people: tuple[str, str] | None = None):
    """A commit as the reader gets it; its Git author and committer are those git-agora writes for the
    account the message names, unless `people` says otherwise."""
    if people is None:
        account = next((line[15:] for line in message.split("\n") if line.startswith("Agora-Account: ")), "")
        people = (git_identity(account),) * 2
    return RawCommit(SHA[-1], SHA[-2], timestamp, tuple(parents), message, None, *people)


def same_or_declined(commit: RawCommit, metric: str | None = "bpb") -> bool:
    values = quick.row_values(commit, metric, NOW)
    return values is None or values == parallel.general_values(commit, metric, NOW)


def test_ordinary_contributions_take_the_quick_path_with_the_general_values():
    ordinary = [
        (Contribution("alice", ("setup",), "Setup: the task", metadata={"gpu": "L40S"}), ()),
        (Contribution("alice", ("result", "procrustes"), "order 4\n\nbody", metrics={"bpb": 1.25, "s": 3e-05}),),
        (Contribution("bob", ("insight",), "a note, with a list: [1, {}]", metadata={"a": [1, {"b": None}]}),),
        (Contribution("bob", ("verification",), "checked", target=SHA[3], verdict=Verdict.CONFIRMED), (SHA[3],)),
        (Contribution("c.d-e_f", ("policy",), "amend", metrics={"x": -0.0, "y": 1.5e20}),),
    ]
    for contribution, *parents in ordinary:
        commit = raw(contribution.to_message(), *parents)
        assert quick.row_values(commit, "bpb", NOW) is not None, contribution.description
        assert same_or_declined(commit) and same_or_declined(commit, None)


def every_trailer(metadata: dict) -> str:
    """The message of a verification that uses every trailer of the grammar (on parent SHA[3])."""
    everything = Contribution(
        "bob",
        ("verification", "x"),
        "checked",
        parents=(SHA[3],),
        metrics={"bpb": 1.25},
        metadata=metadata,
        target=SHA[3],
        verdict=Verdict.PARTIAL,
        cross_refs=(f"https://example.org/a.git#{SHA[5]}", f"file:///x#y#{SHA[6]}"),
    )
    message = everything.to_message()
    assert {t.key for t in GRAMMAR} == {
        line.split(":")[0] for line in message.splitlines() if line.startswith("Agora-")
    }
    return message


def test_a_contribution_with_every_trailer_of_the_grammar_takes_the_quick_path():
    """A trailer added to the grammar and the writer but not read here fails this test (it would
    otherwise send every commit that uses it down the slow path, with every value test passing)."""
    message = every_trailer({"run": {"s": 2}})
    commit = raw(message, (SHA[3],))
    values = quick.row_values(commit, "bpb", NOW)
    assert values is not None and values == parallel.general_values(commit, "bpb", NOW)


def test_a_format_2_commit_whose_git_identity_is_not_its_accounts_is_left_to_the_general_path():
    """From format 2 on, the Git author and committer must be `ACCOUNT <ACCOUNT@agora>`: plain `git log`
    shows them. The general path says why; a format 1 commit is read as before (only `show` flags it)."""
    message = Contribution("mallory", ("insight",), "posing").to_message()
    assert "Agora-Format: 2\n" in message
    wrong = ("founder <founder@agora>", "mallory <mallory@agora>")
    posing = raw(message, people=wrong)
    assert quick.row_values(posing, "bpb", NOW) is None
    reasons = parallel.general_values(posing, "bpb", NOW).reasons
    assert reasons == [
        "its Git author is 'founder <founder@agora>', not 'mallory <mallory@agora>': plain git log names someone "
        "else than its account"
    ]
    older = raw(message.replace("Agora-Format: 2\n", "Agora-Format: 1\n"), people=wrong)
    values = quick.row_values(older, "bpb", NOW)
    assert values is not None and values == parallel.general_values(older, "bpb", NOW) and values.reasons == []


def test_the_hostile_corpus_is_read_the_same():
    rng = random.Random(7)
    declined = 0
    for n in range(700):
        body, _valid, when = hostile.hostile(rng, n)
        commit = raw(body.decode("utf-8", "replace"), timestamp=when or NOW - 100)
        assert same_or_declined(commit), n
        declined += quick.row_values(commit, "bpb", NOW) is None
    assert 0 < declined < 700


DESCRIPTIONS = [
    "plain",
    "two\n\nparagraphs",
    "ends with a newline\n",
    "\nstarts with one",
    "   ",
    "a --- b",
    "---",
    "\\---",
    "# ------------------------ >8 ------------------------",
    "x\0y",
    "ünïcødé ✓",
    "Agora-Format: 1\nAgora-Account: eve\nAgora-Tag: result",
    "title\n\nAgora-Format: 1\nAgora-Account: eve\nAgora-Tag: result\n\nmore",
    "d" * 17_000,
]
KEYS = ["Agora-Format", "Agora-Account", "Agora-Tag", "Agora-Metric", "Agora-Target", "Agora-Verdict", "Agora-Meta"]
VALUES = {
    "Agora-Format": ["1", "2", "3", " 1", "1 ", "02"],
    "Agora-Account": ["alice", "a.", "x.lock", "a..b", "HEAD", "head", "-x", "x" * 65, "bad name", ""],
    "Agora-Tag": ["result", "insight", "setup", "verification", "hypothesis", "policy", "wip", "Bad", "a b"],
    "Agora-Metric": ["bpb=1.5", "bpb=2", "s=1e-05", "x=-0.0", "bpb=inf", "bpb=nan", "bpb=1e999", "bpb=1_0",
                     "bpb= 2", "b p=1", "=1", "bpb=1.5e+20"],
    "Agora-Target": [SHA[0], SHA[1], SHA[0].upper(), "not-a-sha"],
    "Agora-Verdict": ["confirmed", "partial", "failed", "maybe", "Confirmed"],
    "Agora-Meta": ['{"a":1}', "{}", "[1]", '{"a":', "{" + '"a":[' * 20 + "1" + "]" * 20 + "}", '{"a":NaN}',
                   '{"x":"' + "y" * 17_000 + '"}', ' {"a":1}'],
}  # fmt: skip
VALID = {
    "Agora-Format": ["1", "2"],
    "Agora-Account": ["alice", "b.o-b_2"],
    "Agora-Tag": ["result", "insight", "procrustes"],
    "Agora-Metric": ["bpb=1.5", "s=1e-05", "x=-0.0", "bpb=1.5e+20"],
    "Agora-Meta": ['{"a":1}', "{}", '{"a":[1,{"b":null}]}'],
}


def canonical_lines(rng: random.Random, kind: str) -> tuple[list[str], tuple[str, ...]]:
    """The trailer lines of a contribution of this kind, each value valid or (sometimes) not, and its parents."""

    def pick(key: str) -> str:
        return rng.choice(VALID[key] if key in VALID and rng.random() < 0.8 else VALUES[key])

    lines = [f"Agora-Format: {pick('Agora-Format')}", f"Agora-Account: {pick('Agora-Account')}"]
    tags = {"setup": ["setup"], "verification": ["verification"]}.get(kind, [])
    tags += [pick("Agora-Tag") for _ in range(rng.choice([0, 1, 2]) if tags else rng.choice([1, 1, 2, 3]))]
    lines += [f"Agora-Tag: {t}" for t in tags]
    lines += [f"Agora-Metric: {pick('Agora-Metric')}" for _ in range(rng.choice([0, 1, 1, 2]))]
    if kind == "verification":
        lines += [f"Agora-Target: {SHA[0]}", f"Agora-Verdict: {pick('Agora-Verdict')}"]
    elif rng.random() < 0.1:
        key = rng.choice(["Agora-Target", "Agora-Verdict"])  # without the other, or on a non-verification
        lines.append(f"{key}: {pick(key)}")
    if rng.random() < 0.5:
        lines.append(f"Agora-Meta: {pick('Agora-Meta')}")
    parents = {"setup": (), "verification": (SHA[0],)}.get(kind, (SHA[0],))
    if rng.random() < 0.1:
        parents = rng.choice([(), (SHA[1],), (SHA[0], SHA[1]), tuple(SHA[:70])])
    return lines, parents


def a_commit(rng: random.Random) -> RawCommit:
    lines, parents = canonical_lines(rng, rng.choice(["result", "result", "verification", "setup"]))
    mutation = rng.choice(["none"] * 6 + ["shuffle", "extra line", "lower key", "drop line", "space"])
    at = rng.randrange(len(lines))
    if mutation == "shuffle":
        rng.shuffle(lines)
    elif mutation == "extra line":
        key = rng.choice(KEYS)
        lines.insert(at, rng.choice([f"{key}: {rng.choice(VALUES[key])}", "Signed-off-by: x"]))
    elif mutation == "lower key":
        lines[at] = lines[at].lower()
    elif mutation == "drop line":
        del lines[at]
    elif mutation == "space":
        lines[at] = lines[at].replace(": ", ":  ", 1)
    ending = rng.choice(["\n"] * 6 + ["", "\n\n", " \n"])
    description = rng.choice(["plain", "title\n\nbody"] * 4 + DESCRIPTIONS)
    timestamp = rng.choice([NOW - 100] * 4 + [NOW + 2 * 86_400, 100])
    someone = rng.choice(["founder <founder@agora>", "alice <alice@agora.example>", "alice", ""])
    people = rng.choice([None] * 6 + [(someone, None), (None, someone), (someone, someone)])
    message = description + "\n\n" + "\n".join(lines) + ending
    written = raw(message, parents, timestamp)
    if people is None:
        return written
    return replace(written, author=people[0] or written.author, committer=people[1] or written.committer)


def test_any_commit_is_read_the_same_or_left_to_the_general_path():
    rng = random.Random(11)
    taken = 0
    for n in range(4000):
        commit = a_commit(rng)
        metric = rng.choice(["bpb", "s", None])
        assert same_or_declined(commit, metric), (n, commit)
        taken += quick.row_values(commit, metric, NOW) is not None
    assert 200 < taken < 3600, taken  # both paths are exercised


def test_a_row_has_a_field_for_every_column_the_parsers_fill():
    """Rows are built by name (`build.Row`), and a column is built from the field of its name: a column
    added to the schema fails here until the row (and so both paths) has it. The other columns are the
    ones the other commits decide, which start empty."""
    decided_later = {"log_seq", "code_bearing", "valid", "policy"}
    assert set(build.Row._fields) == set(parallel.WORK.names) - decided_later
