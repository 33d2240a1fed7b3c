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


# --- a claim's check record (`push --check`), one literal per era -------------------------------------
CHECK1 = {"check": {"command": "python evaluate.py", "duration_s": 1.2, "measured": {"bpc": 2.0}}}  # 6739d13
CHECK2 = {  # 5db8944: the policy's evaluator identity and its declared output
    "check": {"duration_s": 0.9, "evaluator": {"sha256": SHA256}, "measured": {"bpc": 2.0}, "output": {"n": 3}}
}
CHECK3 = {  # b3ffb23 on, today's: sandbox and limits
    "check": {
        "duration_s": 0.9,
        "evaluator": {"commands": {}, "files": {}, "scorer": {}, "sha256": SHA256},
        "limits": {"enforced_by": "rlimit"},
        "measured": {"bpc": 2.0},
        "output": {"n": 3},
        "sandbox": False,
    },
    "note": "a result's own metadata beside it",
}


@pytest.mark.parametrize(("era", "metadata"), [(1, CHECK1), (2, CHECK2), (3, CHECK3)])
def test_every_era_of_the_check_record_is_read(era, metadata):
    from git_agora.frontier.checked import run_backed
    from git_agora.frontier.comparable import measured_under
    from git_agora.records import CHECK_KEYS, CheckRecord, check_backed

    check = CheckRecord.read(metadata)
    assert check is not None and check.era == era and check.measured == {"bpc": 2.0}
    assert check.backed is (era == 3) and check_backed(metadata) is (era == 3) and run_backed(metadata) is (era == 3)
    assert run_backed(json.dumps(metadata)) is (era == 3)  # as the index's metadata column holds it
    assert check.command == ("python evaluate.py" if era == 1 else None)
    assert check.evaluator_sha256 == (None if era == 1 else SHA256)
    assert measured_under(metadata, ["n"]) == ({} if era == 1 else {"n": 3})
    assert check.sandbox is (False if era == 3 else None)
    written = check.to_metadata()
    assert tuple(written) == CHECK_KEYS and CheckRecord.read({"check": written}) == check
    if era == 3:
        assert written == metadata["check"]  # the writer writes what today's reader read
    assert CheckRecord.read({"check": "yes"}) is None and CheckRecord.read({}) is None and not check_backed({})


def test_run_backed_claims_follow_the_rule_they_followed_on_every_mutation():
    from git_agora.records import check_backed

    values = [None, True, 0, -1.0, 2.5, math.inf, "x", {}, {"bpc": 1.0}, {"bpc": True}]
    for key, value in itertools.product(("measured", "evaluator", "sandbox", "duration_s"), values):
        check = {**copy.deepcopy(CHECK3["check"]), key: value}
        assert check_backed({"check": check}) == _carries_run_before({**check, "reproduced": check.get("measured")})


# --- the index's manifest: one head reader (`index.state.read_state`) for every shape ----------------
S, A, B = "a" * 40, "b" * 40, "c" * 40
TIPS = {"refs/agora/log/alice": A, "refs/agora/log/bob": B}
# formats 1 and 2 (ae6ca19, d967957): state.json, whole tables beside it, the tips inline, no checksum
STATE_1 = '{\n "format_version": 1,\n "tips": {\n  "refs/agora/log/alice": "' + A + '"\n }\n}\n'
STATE_2 = '{"format_version": 2, "pending_until": null, "tips": {"refs/agora/log/alice": "' + A + '"}}'
# format 3 (39709db): manifest.json, segments, every tip inline, a checksum, no digest
MANIFEST_3 = (
    '{"accounts":{"alice":[2,0,"k"]},"checksum":1758352126,"format_version":3,"next_id":2,"pending_until":null,'
    '"rules":{"metric":"bpc","root":"' + S + '"},"segments":[{"data":["seg-1.parquet",2048,12345],'
    '"first":[1700000000,"' + S + '"],"id":1,"last":[1700000100,"' + B + '"],"refs":null,"replaces":0,"rows":3}],'
    '"tips":{"refs/agora/log/alice":"' + A + '","refs/agora/log/bob":"' + B + '"},'
    '"watch":{"not_listed":{},"pending":{},"setups":{"' + S + '":1700000000},"waiting":{}}}'
)
# format 4 on (bd630ca; 8 here): the tips' digest, a side file (none yet), the tips changed since it
MANIFEST_8 = (
    '{"accounts":{"alice":[2,0,"k"]},"checksum":2689997837,"format_version":8,"next_id":2,"pending_until":null,'
    '"rules":{"metric":"bpc","root":"' + S + '"},"segments":[{"data":["seg-1.parquet",2048,12345],'
    '"first":[1700000000,"' + S + '"],"id":1,"last":[1700000100,"' + B + '"],"refs":null,"replaces":0,"rows":3}],'
    '"tables":null,"tips":{"refs/agora/log/alice":"' + A + '","refs/agora/log/bob":"' + B + '"},'
    '"tips_digest":"105b0d8220a26d84d87ad4ef4b27b5927a867cfbdb994c80b2ed8c9fb789bf00",'
    '"watch":{"not_listed":{},"pending":{},"setups":{"' + S + '":1700000000},"waiting":{}}}\n'
)


@pytest.mark.parametrize(("name", "text", "version"), [("state.json", STATE_1, 1), ("state.json", STATE_2, 2)])
def test_a_state_json_of_formats_1_and_2_reads_as_a_legacy_head(tmp_path, name, text, version):
    from git_agora.index import state, store
    from git_agora.index.state import LEGACY_FILE, read_state

    (tmp_path / name).write_text(text)
    head = read_state(tmp_path, LEGACY_FILE)
    assert head is not None and head.legacy and head.format_version == version and not head.intact
    assert head.tips == {"refs/agora/log/alice": A} and head.tips_digest is None and head.setups == ()
    assert read_state(tmp_path) is None  # no manifest.json: the index is rebuilt
    assert not state.current(head, {"refs/agora/log/alice": A}, 0)
    warnings: list[str] = []
    assert store._stored_manifest(tmp_path, warnings) is None
    assert warnings == [f"the index format changed ({version} -> {state.FORMAT_VERSION}); rebuilt it from Git"]


def test_a_format_3_manifest_reads_its_inline_tips_and_is_another_format(tmp_path):
    from git_agora.index import segments, store
    from git_agora.index.state import current, read_state

    (tmp_path / "manifest.json").write_text(MANIFEST_3)
    head = read_state(tmp_path)
    assert head is not None and not head.legacy and head.format_version == 3 and head.intact
    assert head.tips == TIPS and head.tips_digest is None and head.setups == (S,) and head.pending_until is None
    assert not current(head, TIPS, 0)  # no digest: never current, rebuilt by the next update
    assert store.stored_tips(tmp_path, head) == TIPS  # what a quarantine compares the refs with
    with pytest.raises(segments.OtherFormat):
        segments.Manifest.from_json(MANIFEST_3)


def test_todays_manifest_reads_writes_and_refuses_a_damaged_one(tmp_path):
    from git_agora.index import segments
    from git_agora.index.state import FORMAT_VERSION, ManifestHead, current, read_state, tips_digest

    (tmp_path / "manifest.json").write_text(MANIFEST_8)
    head = read_state(tmp_path)
    assert head is not None and head.format_version == 8 and head.intact and head.setups == (S,)
    assert head.tips_digest == tips_digest(TIPS) and current(head, TIPS, 0, 8) and not current(head, {}, 0, 8)
    if FORMAT_VERSION == 8:
        manifest = segments.Manifest.from_json(MANIFEST_8)
        assert manifest.tips == TIPS and manifest.watch.setups == {S: 1700000000}
        assert manifest.to_json() == MANIFEST_8  # the one writer writes what the reader read, byte for byte
    else:  # a later format: this one is read as another format, to be rebuilt
        with pytest.raises(segments.OtherFormat):
            segments.Manifest.from_json(MANIFEST_8)
    written = segments.Manifest(FORMAT_VERSION, TIPS, {"root": S}, watch=segments.Watch(setups={S: 1})).to_json()
    assert segments.Manifest.from_json(written).to_json() == written and ManifestHead.parse(written).intact
    damaged = MANIFEST_8.replace('"next_id":2', '"next_id":3')
    assert not ManifestHead.parse(damaged).intact
    with pytest.raises((segments.Damaged, segments.OtherFormat)):
        segments.Manifest.from_json(damaged)
    (tmp_path / "manifest.json").write_text("[1, 2]")
    assert read_state(tmp_path) is None  # not an object: no head, the index is rebuilt
