"""`index.columnar`: a block's ordinary commits read by Arrow's kernels give exactly the rows of the
per-commit path (`parallel.local_rows`: `quick`, else the general path); what it cannot decide there
it leaves to that path, and it takes the ordinary contributions of every kind it knows."""

from __future__ import annotations

import random

import hostile
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_index_quick import NOW, SHA, a_commit, every_trailer

from git_agora.contribution import Contribution, Verdict, git_identity
from git_agora.index import columnar, listing, parallel, reader
from git_agora.index.reader import RawCommit


def record(commit: RawCommit, n: int) -> bytes:
    """`commit` as `git log` prints it (`reader._FORMAT`), under a sha of its own (`n`)."""
    header = " ".join([f"{n:040x}", commit.tree, str(commit.timestamp), *commit.parents])
    return f"{header}\n{commit.author}\x1f{commit.committer}\n{commit.message}".encode()


def written(message: str | bytes, parents=(SHA[0],), when: int = NOW - 100, people=None, n: int = 0) -> bytes:
    """A record of a commit git-agora would write for the account the message names, unless `people`
    says otherwise."""
    text = message if isinstance(message, bytes) else message.encode()
    account = next((line[15:] for line in text.split(b"\n") if line.startswith(b"Agora-Account: ")), b"")
    author = committer = git_identity(account.decode("utf-8", "replace")).encode()
    if people is not None:
        author, committer = (p.encode() for p in people)
    header = " ".join([f"{n:040x}", SHA[-2], str(when), *parents]).encode()
    return header + b"\n" + author + b"\x1f" + committer + b"\n" + text


def replaced(message: str, old: str, new: str) -> str:
    assert old in message, (old, message)
    return message.replace(old, new)


def read_both(records: list[bytes], metric: str | None = "bpb") -> int:
    """Both readings of `records` compared row by row; how many the columns took."""
    taken, left = columnar.rows(pa.array(records, pa.binary()), parallel.WORK, metric, NOW)
    assert taken.schema == parallel.WORK
    assert taken.num_rows + len(left) == len(records)
    both = pa.concat_tables([taken, parallel.local_rows(left, metric, NOW)]).sort_by("sha")
    one_by_one = parallel.local_rows(records, metric, NOW).sort_by("sha")
    for name in parallel.WORK.names:
        assert both[name].to_pylist() == one_by_one[name].to_pylist(), name
    assert both.equals(one_by_one)
    return taken.num_rows


def test_every_kind_of_ordinary_contribution_is_taken_with_the_per_commit_values():
    target = SHA[3]
    ordinary = [
        Contribution("alice", ("result", "procrustes"), "order 4\n\nbody", metrics={"bpb": 1.25, "s": 3e-05}),
        Contribution("bob", ("insight",), "a note", metadata={"gpu": "L40S", "n": 3, "ok": True, "x": None}),
        Contribution("bob", ("hypothesis",), "a guess", metadata={"prediction": [0.787, 0.809]}),
        Contribution("carol", ("verification",), "rerun", target=target, verdict=Verdict.CONFIRMED,
                     metadata={"gpu": "A100", "reproduced": 0.8292}),
        Contribution("c.d-e_f", ("policy",), "amend", metrics={"x": -0.0, "y": 1.5e20}),
        Contribution("dave", ("report", "wip"), "ünïcødé ✓ notes", metrics={"bpb": 2.0}),
        Contribution("erin", ("result",), "cross", cross_refs=(f"https://example.org/a.git#{SHA[5]}",)),
    ]  # fmt: skip
    records = [
        written(c.to_message(), (target,) if c.target else (SHA[0], SHA[1])[: 1 + (n % 2)], n=n)
        for n, c in enumerate(ordinary)
    ]
    assert read_both(records) == len(records)
    assert read_both(records, None) == len(records)
    assert read_both(records, "y") == len(records)


def test_a_contribution_with_every_trailer_of_the_grammar_is_taken_with_its_values():
    """A trailer added to the grammar (and so to the shape this module matches) but not read into its
    column here fails this test."""
    message = every_trailer({"gpu": "A100", "reproduced": 1.25})  # flat: the columns take it
    assert read_both([written(message, (SHA[3],))]) == 1


LEFT = {
    "a setup": (Contribution("alice", ("setup",), "Setup").to_message(), ()),
    "a verification on another parent": (
        Contribution("carol", ("verification",), "v", target=SHA[3], verdict=Verdict.FAILED).to_message(),
        (SHA[4],),
    ),
    "a verdict without its tag": (
        replaced(Contribution("carol", ("insight",), "v").to_message(), "Agora-Tag: insight\n",
                 "Agora-Tag: insight\nAgora-Verdict: failed\n"),
        (SHA[0],),
    ),
    "a hypothesis with a metric": (replaced(Contribution("bob", ("result",), "h", metrics={"bpb": 1.0}).to_message(),
                                            "Agora-Tag: result", "Agora-Tag: hypothesis"), (SHA[0],)),
    "nested metadata": (Contribution("bob", ("insight",), "n", metadata={"run": {"s": 2}}).to_message(), (SHA[0],)),
    "a token in the description": (Contribution("bob", ("insight",), "key ghp_" + "a1" * 20).to_message(), (SHA[0],)),
    "a secret's hint in a tag": (Contribution("bob", ("insight", "task-x"), "t").to_message(), (SHA[0],)),
    "a marker in the description": (
        "a\n\nAgora-Format: 1\nAgora-Account: eve\nAgora-Tag: result\n\n" + Contribution("bob", ("insight",), "b")
        .to_message(), (SHA[0],)),
    "a blank description by Unicode's whitespace": (replaced(Contribution("bob", ("insight",), "x").to_message(),
                                                              "x\n", "\u3000\n"), (SHA[0],)),
    "a repeated metric": (replaced(Contribution("bob", ("result",), "r", metrics={"bpb": 1.0}).to_message(),
                                   "bpb=1.0\n", "bpb=1.0\nAgora-Metric: bpb=2.0\n"), (SHA[0],)),
    "an infinite metric": (replaced(Contribution("bob", ("result",), "r", metrics={"bpb": 1.0}).to_message(),
                                    "bpb=1.0\n", "bpb=1e+999\n"), (SHA[0],)),
    "33 tags": (Contribution("bob", tuple(f"t{n}" for n in range(33)), "r").to_message(), (SHA[0],)),
    "65 parents": (Contribution("bob", ("insight",), "p").to_message(), tuple(SHA[:65])),
    "an account git cannot store": (replaced(Contribution("bob", ("insight",), "h").to_message(),
                                             "Agora-Account: bob", "Agora-Account: Head"), (SHA[0],)),
}  # fmt: skip


@pytest.mark.parametrize("case", LEFT)
def test_what_the_columns_cannot_decide_is_left_to_the_per_commit_path(case):
    message, parents = LEFT[case]
    ordinary = written(Contribution("zed", ("insight",), "fine").to_message(), n=1)
    assert read_both([written(message, parents, n=0), ordinary]) == 1


def test_a_clock_out_of_range_and_a_git_identity_not_the_accounts_are_left():
    message = Contribution("mallory", ("insight",), "posing").to_message()
    wrong = ("founder <founder@agora>", "mallory <mallory@agora>")
    records = [
        written(message, when=NOW + 2 * 86_400, n=0),
        written(message, when=100, n=1),
        written(message, people=wrong, n=2),
        written(replaced(message, "Agora-Format: 2\n", "Agora-Format: 1\n"), people=wrong, n=3),  # only flagged
    ]
    assert read_both(records) == 1


def test_records_that_are_not_utf8_are_left_and_the_others_taken():
    message = Contribution("bob", ("insight",), "caf\xe9").to_message().encode("latin-1")
    records = [written(message, n=0), written(b"\xed\xa0\x80" + message[4:], n=1)]
    records.append(written(Contribution("bob", ("insight",), "fine").to_message(), n=2))
    assert read_both(records) == 1


def test_any_commit_is_read_the_same_by_both():
    rng = random.Random(11)
    commits = [a_commit(rng) for _ in range(4000)]
    records = [record(commit, n) for n, commit in enumerate(commits)]
    for metric in ("bpb", "s", None):
        taken = read_both(records, metric)
        assert 100 < taken < 3600, taken  # both paths are exercised (a setup, a clock out of range: left)


def test_the_hostile_corpus_is_read_the_same():
    rng = random.Random(7)
    records = []
    for n in range(700):
        body, _valid, when = hostile.hostile(rng, n)
        records.append(written(body, when=when or NOW - 100, n=n))
    assert 0 < read_both(records) < 700


def test_metric_values_are_read_as_python_reads_them():
    """Arrow's text-to-double against Python's `float`, on the values the grammar allows: digits past a
    double's precision, exponents at the ends of its range (subnormal, overflow)."""
    rng = random.Random(3)
    values = ["0", "-0.0", "1e-999", "4.9e-324", "2.2250738585072011e-308", "1.7976931348623157e+308"]
    for _ in range(2000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 25)))
        value = ("-" if rng.random() < 0.3 else "") + digits + (f".{fraction}" if fraction else "")
        if rng.random() < 0.5:
            value += f"e{rng.choice('+-')}{rng.randint(0, 330)}"
        values.append(value)
    records = []
    for n, value in enumerate(values):
        message = Contribution("bob", ("result",), "m", metrics={"bpb": 1.0}).to_message()
        records.append(written(replaced(message, "bpb=1.0\n", f"bpb={value}\n"), n=n))
    assert read_both(records) > 1900


def log_records(rng: random.Random, count: int) -> list[bytes]:
    """Log commits as `refs.store` writes them, and near misses: the entry key in another case, twice, in
    a description or a Git name, a message not exactly a log commit's, odd first lines, bytes that are not
    UTF-8; identity commits, and their block farther from the end than a reader looks."""
    found = []
    for n in range(count):
        entry = f"{rng.getrandbits(160):040x}"
        message = f"agora log: acc-{n}\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {entry}\n".encode()
        message = rng.choice(
            [message] * 5
            + [
                message.replace(b"Agora-Log-Entry", b"AGORA-log-ENTRY"),
                message + b"agora-log-entry: x\n",
                message.replace(b"agora log: ", b"agora log:\xff "),
                message[:-1],
                b"a result\n\nAgora-Format: 2\nAgora-Account: x\nAgora-Tag: insight\n",
                b"about agora-log-entry\n\n" + message,
                message.replace(b"Format: 1", b"Format: 2"),
            ]
        )
        parents = rng.choice([[], [SHA[1]], [SHA[1], SHA[2]]])
        stamp = rng.choice(["1900000000", "", "12"])
        header = f"{n:040x} {SHA[-2]} {stamp} {' '.join(parents)}".encode()
        header = rng.choice([header] * 6 + [header + b" ", header.replace(b" ", b"  ", 1), header.upper()])
        people = rng.choice([b"acc <acc@agora>\x1facc <acc@agora>", b"\xfe\x1f", b"", b"Agora-Log-Entry <e@x>\x1f"])
        found.append(header + b"\n" + people + b"\n" + message)
    identity = b"keys\n\nAgora-Identity-Format: 1\nAgora-Key: ssh-ed25519 AAAA\n"
    found += [b"", b"\n", b"no newline", f"{SHA[0]} {SHA[1]} 1 \n".encode(), identity, identity + b"x" * 1000]
    found += [
        identity + b"x" * 2000,
        reader.LOG_BLOCK,
        b"x" + reader.LOG_BLOCK + b"y" * 41,
        reader.LOG_BLOCK + b"y" * 42,
    ]
    return found


def test_log_links_and_transport_are_read_as_the_per_record_functions_read_them():
    records = log_records(random.Random(5), 3000)
    records += [written(Contribution("bob", ("insight",), f"n{n}").to_message(), n=n) for n in range(50)]
    array = pa.array(records, pa.binary())
    assert columnar.transport(array).to_pylist() == [reader.is_transport(r) for r in records]
    expected = listing.log_links(records).sort_by([("sha", "ascending"), ("entry", "ascending")])
    found = columnar.log_links(array).sort_by([("sha", "ascending"), ("entry", "ascending")])
    assert found.equals(expected)
    assert 500 < pc.count(expected["entry"]).as_py() < 3000
