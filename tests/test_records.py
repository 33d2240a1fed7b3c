"""The records git-agora writes (`git_agora.records`): one reader that takes every shape an older
git-agora wrote, one writer. One literal fixture per era, as the writers of that era wrote it (the eras
in the module's docstring; `git log -p -S'"duration_s"' src/git_agora/ops`)."""

from __future__ import annotations

import copy
import itertools
import json
import math
import re

import pytest

from git_agora.contribution import Contribution, encode_metadata, intrinsic_problems
from git_agora.records import RUN_KEYS, RunRecord, WitnessRecord, carries_run

SHA256 = "3" * 64
SETUP = "a" * 40

# era 1: the first `verify` (6739d13): a free-text reason, the evaluator as a command and its hash
ERA1 = json.loads(
    '{"claimed":{"bpc":1.5},"difference":{"bpc":0.021},"duration_s":2.118,'
    '"evaluator":{"command":"python evaluate.py","sha256":"' + SHA256 + '"},'
    '"hardware":{"machine":"x86_64","python":"3.11.9"},"reason":"reproduced within tolerance 0.05",'
    '"reproduced":{"bpc":1.521},"tolerance":0.05}'
)
# era 2: the policy's evaluator identity (5db8944): claimed_under_evaluator, same_evaluator, output
ERA2 = json.loads(
    '{"claimed":{"bpc":1.5},"claimed_under_evaluator":null,"difference":{"bpc":0.0},"duration_s":0.84,'
    '"evaluator":{"commands":{"build":"python train.py","score":"python score.py"},'
    '"files":{"score.py":"' + "4" * 40 + '"},"scorer":{},"sha256":"' + SHA256 + '"},'
    '"hardware":{"machine":"x86_64","python":"3.11.9"},"output":{},"reason":"reproduced",'
    '"reproduced":{"bpc":1.5},"same_evaluator":null,"tolerance":0.01}'
)
# era 3, today's (b3ffb23 on): a fixed reason code, exit_status, sandbox and limits
ERA3 = json.loads(
    '{"claimed":{"bpc":1.5},"claimed_under_evaluator":"' + SHA256 + '","difference":{"bpc":0.3},'
    '"duration_s":1.07,"evaluator":{"commands":{"command":"python evaluate.py"},"files":{},"scorer":{},'
    '"sha256":"' + SHA256 + '"},"exit_status":0,"hardware":{"machine":"x86_64"},'
    '"limits":{"enforced_by":"rlimit","memory_mb":4096},"output":{"params":120},'
    '"reason":"contradicts the claim","reproduced":{"bpc":1.8},"same_evaluator":true,"sandbox":true,'
    '"tolerance":0.01}'
)
# a hand-written `post --verdict failed --meta '{"why": "..."}'`: an opinion, no run record
OPINION = {"why": "it crashed on my machine"}
# the witness record, one shape since ada1ec1
WITNESS = json.loads('{"witness":{"tips":{"alice":"' + "b" * 40 + '","bob-2":"' + "c" * 40 + '"}}}')


@pytest.mark.parametrize(("era", "metadata"), [(1, ERA1), (2, ERA2), (3, ERA3)])
def test_every_era_of_the_run_record_is_read(era, metadata):
    record = RunRecord.read(metadata)
    assert record is not None and record.era == era and not record.unreadable and not record.unknown
    assert record.reproduced == metadata["reproduced"] and record.claimed == {"bpc": 1.5}
    assert record.evaluator_sha256 == SHA256 and record.duration_s == metadata["duration_s"]
    assert record.tolerance == metadata["tolerance"] and record.reason == metadata["reason"]
    # only today's era says it ran sandboxed: the older ones are opinions for the index's run_backed
    assert record.backed is (era == 3) and carries_run(metadata) is (era == 3)
    if era >= 2:
        assert record.output == metadata["output"] and record.same_evaluator == metadata["same_evaluator"]
    else:
        assert record.output is None and record.sandbox is None and record.limits is None


def test_the_writer_writes_todays_era_and_the_reader_reads_it_back():
    record = RunRecord.read(ERA3)
    assert record is not None
    written = record.to_metadata()
    assert written == ERA3 and set(written) == RUN_KEYS  # every key, nothing else
    assert encode_metadata(written) == encode_metadata(ERA3)  # the same Agora-Meta bytes
    assert RunRecord.read(written) == record
    older = RunRecord.read(ERA1)
    assert older is not None and RunRecord.read(older.to_metadata()) == older  # an old record rewritten as today's


def test_no_run_record_and_hand_edited_fields():
    assert RunRecord.read(OPINION) is None and not carries_run(OPINION) and not carries_run({})
    edited = {**ERA3, "reproduced": {"bpc": "1.8"}, "sandbox": "yes", "note": "trust me"}
    record = RunRecord.read(edited)
    assert record is not None and record.reproduced is None and record.sandbox is None
    assert set(record.unreadable) == {"reproduced", "sandbox"} and record.unknown == ("note",)
    assert not record.backed


def _carries_run_before(metadata):
    """`contribution.carries_run` as it stood before the records had a schema (the index's run_backed
    rule must not move: a moved rule would need a new index format)."""
    reproduced, evaluator, duration = metadata.get("reproduced"), metadata.get("evaluator"), metadata.get("duration_s")
    return (
        isinstance(reproduced, dict)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in reproduced.values())
        and isinstance(evaluator, dict)
        and isinstance(evaluator.get("sha256"), str)
        and bool(re.match(r"[0-9a-f]{64}\Z", evaluator["sha256"]))
        and isinstance(metadata.get("sandbox"), bool)
        and isinstance(duration, (int, float))
        and not isinstance(duration, bool)
        and math.isfinite(duration)
        and duration >= 0
    )


def test_run_backed_is_the_rule_it_was_on_every_mutation():
    values = [None, True, False, 0, -1.0, 2.5, math.inf, "x", SHA256, {}, {"bpc": 1.0}, {"bpc": True}, [1]]
    seen = 0
    for base in (ERA1, ERA2, ERA3):
        for key, value in itertools.product(sorted(RUN_KEYS | {"sha256"}), values):
            mutated = copy.deepcopy(base)
            if key == "sha256":
                mutated["evaluator"]["sha256"] = value
            else:
                mutated[key] = value
            assert carries_run(mutated) == _carries_run_before(mutated), (key, value)
            seen += _carries_run_before(mutated)
        for key in RUN_KEYS:
            dropped = {k: v for k, v in base.items() if k != key}
            assert carries_run(dropped) == _carries_run_before(dropped), key
    assert seen > 0  # some mutations stay run-backed


def test_the_witness_record_is_read_written_and_validated():
    record = WitnessRecord.read(WITNESS)
    assert record is not None and record.tips == WITNESS["witness"]["tips"]
    assert record.to_metadata() == WITNESS and WitnessRecord.read(record.to_metadata()) == record
    for broken in (
        {},
        {"witness": []},
        {"witness": {"tips": {"alice": "b" * 39}}},
        {"witness": {"tips": {"-x": "b" * 40}}},
    ):
        assert WitnessRecord.read(broken) is None
    c = Contribution(account="ci", tags=("witness",), description="Witness", parents=(SETUP,), metadata=WITNESS)
    assert intrinsic_problems(c) == []
    bad = c._replace(metadata={"witness": {"tips": {"alice": "nope"}}})
    assert any("lists log tips" in p for p in intrinsic_problems(bad))
