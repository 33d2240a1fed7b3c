"""The pure parts of contained evaluation, each tried as a hostile input would: the artifact's tar
stream, a tree's paths, what a record may carry, the leak scan, terminal escapes, `[eval]` parsing."""

from __future__ import annotations

import io
import os
import re
import tarfile

import pytest

from git_agora.config import ConfigError, EvalSpec, Limits, ProjectConfig
from git_agora.contribution import dotgit_component, dotgitmodules_link
from git_agora.evaluate.artifact import ArtifactRefused, receive
from git_agora.evaluate.record import Reason, declared_output, reportable_metrics
from git_agora.leaks import secret_in
from git_agora.visible import cut, visible


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    buf.seek(0)
    return buf


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_an_artifact_of_files_and_folders_arrives_whole(tmp_path):
    stream = tar_of((member("./", tarfile.DIRTYPE), None), (member("./m/w.bin"), b"\0" * 10), (member("n.json"), b"{}"))
    assert receive(stream, str(tmp_path), 100) == 2
    assert (tmp_path / "m" / "w.bin").read_bytes() == b"\0" * 10 and (tmp_path / "n.json").read_text() == "{}"


@pytest.mark.parametrize(
    "members, reason",
    [
        ([(member("v", tarfile.SYMTYPE, "/etc/passwd"), None)], Reason.ARTIFACT_SPECIAL),
        ([(member("a"), b"1"), (member("b", tarfile.LNKTYPE, "a"), None)], Reason.ARTIFACT_SPECIAL),
        ([(member("f", tarfile.FIFOTYPE), None)], Reason.ARTIFACT_SPECIAL),
        ([(member("d", tarfile.CHRTYPE), None)], Reason.ARTIFACT_SPECIAL),
        ([(member("../outside"), b"x")], Reason.ARTIFACT_SPECIAL),
        ([(member("/etc/cron.d/x"), b"x")], Reason.ARTIFACT_SPECIAL),
        ([(member("a"), b"x" * 60), (member("b"), b"x" * 60)], Reason.ARTIFACT_TOO_LARGE),
        ([(member("a"), b"1"), (member("a"), b"2")], Reason.ARTIFACT_SPECIAL),
        ([(member("a"), b"1"), (member("a/b"), b"2")], Reason.ARTIFACT_UNREADABLE),
    ],
    ids=["symlink", "hardlink", "fifo", "device", "dotdot", "absolute", "too-large", "twice", "under-a-file"],
)
def test_an_artifact_that_is_not_plain_files_is_refused(tmp_path, members, reason):
    with pytest.raises(ArtifactRefused) as refused:
        receive(tar_of(*members), str(tmp_path), 100)
    assert refused.value.reason == reason
    assert not (tmp_path.parent / "outside").exists()


def test_a_broken_stream_is_a_broken_artifact(tmp_path):
    with pytest.raises(ArtifactRefused) as refused:
        receive(io.BytesIO(b"not a tar at all" * 100), str(tmp_path), 1000)
    assert refused.value.reason == Reason.ARTIFACT_UNREADABLE
    with pytest.raises(ArtifactRefused):  # nothing sent at all (the wrapper always sends a tar, if empty)
        receive(io.BytesIO(b""), str(tmp_path), 1000)
    assert receive(tar_of((member(".", tarfile.DIRTYPE), None)), str(tmp_path), 1000) == 0  # an empty folder


def test_received_folders_are_readable_whatever_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        receive(tar_of((member("a/b/c"), b"1")), str(tmp_path), 10)
    finally:
        os.umask(old)
    assert oct((tmp_path / "a" / "b").stat().st_mode & 0o777) == "0o755"


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        "a/.GIT/hooks/post-checkout",
        ".git.",
        "x/.Git /y",
        "GIT~1/config",
        ".git::$INDEX_ALLOCATION/config",  # NTFS: a stream of the folder
        "git~1:x",
        "a\\.git\\hooks",  # NTFS: backslashes separate folders
        ".g\u200cit/config",  # HFS+: zero-width and direction marks are ignored
        "\ufeff.GIT",
        ".git\udcff",  # git stops reading a name at a byte that is not UTF-8
    ],
)
def test_dotgit_components_are_found_in_any_case(path):
    assert dotgit_component(path)


@pytest.mark.parametrize(
    "path",
    [
        ".github/workflows/ci.yml",
        "a.git",
        "git/config",
        ".gitignore",
        ".gitattributes",
        ".git~1",
        "GIT~10",
        "x:.git",
        ".git\u200c.",  # HFS+ keeps trailing dots, NTFS the mark
        ".g\udcffit",
        ".g\u0130t",  # git lowers ASCII only
        ".git\u2013",
    ],
)
def test_names_that_only_look_like_dotgit_pass(path):
    assert not dotgit_component(path)


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        (".gitmodules", True),
        (".GitModules. ", True),
        (".gitmodules:x", True),  # NTFS: a stream
        ("GITMOD~1", True),  # NTFS's short names: the first six letters, ~1 to ~4
        ("gitmod~4", True),
        ("gitmod~5", False),
        ("gi7eba~1", True),  # or some of the hashed prefix's six letters, a tilde and digits
        ("gi~12345", True),
        ("~1234567", True),
        ("gi~02345", False),
        ("x\\.gitmodules", True),
        ("x\\.gitmodules\\y", False),  # a backslash ends .git on NTFS, not .gitmodules
        (".g\u200citmodules", True),  # HFS+
        (".gitmodulesx", False),
        ("gitmodules", False),
    ],
)
def test_gitmodules_links_git_refuses(name, refused):
    assert dotgitmodules_link(name) is refused


def test_a_name_of_many_backslashes_is_judged_without_copying_it_at_each():
    """NTFS starts a name after each backslash; a name of 20,000 of them (a tree entry's name has no
    limit) is judged from offsets: copying the rest at each would hold 200 MB at once."""
    import tracemalloc

    name = "\\" * 20_000 + ".git"
    tracemalloc.start()
    try:
        assert dotgit_component(name) and not dotgitmodules_link(name)
        assert tracemalloc.get_traced_memory()[1] < 5_000_000
    finally:
        tracemalloc.stop()


def test_a_record_keeps_declared_numbers_and_plain_words_only():
    payload = {"bpb": 1.5, "data_sha256": "ab" * 32, "note": "free text here", "tokens": 9, "nan": float("nan")}
    assert declared_output(payload, ["data_sha256", "tokens", "absent"]) == {"data_sha256": "ab" * 32, "tokens": 9}
    assert declared_output(payload, ["note"]) is None  # a sentence is not a plain word
    assert declared_output(payload, ["nan"]) is None
    assert declared_output({"x": "-----BEGIN"}, ["x"]) is None
    assert reportable_metrics({"bpb": 1.0, "tokens": 9.0, "leak": 42.0}, "bpb", ["tokens"]) == {
        "bpb": 1.0,
        "tokens": 9.0,
    }


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----",
        "key: b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "ghp_" + "a1B2" * 9,
        "github_pat_" + "A1b2_" * 10,
        "glpat-" + "x" * 20,
        "xoxb-123456789012-abcdef",
        "AKIAABCDEFGHIJKLMNOP",
        "AIza" + "b" * 35,
        "sk-ant-" + "z" * 40,
        "hf_" + "Q" * 34,
        "env: OPENAI_API_KEY=abcdefgh12345",
    ],
)
def test_key_and_token_shapes_are_found(text):
    assert secret_in(f"a description holding {text} somewhere") is not None


@pytest.mark.parametrize(
    "text",
    [
        "Witten-Bell smoothing: bpc 2.729 (parent 3.048), predicted 2.6..3.0",
        "tokens = 50257, bytes = 1234567, data_sha256 = " + "ab" * 32,
        "skip connections helped; task-specific tokenizer; hf hub offline",
        'Agora-Meta: {"check": {"evaluator": {"sha256": "' + "0" * 64 + '"}}}',
    ],
)
def test_ordinary_descriptions_are_not_secrets(text):
    assert secret_in(text) is None


def test_visible_escapes_what_steers_a_terminal_and_cut_never_splits_an_escape():
    hostile = "ok\x1b[2J\x1b]8;;http://x\x07link\u202eevil\rback\x00"
    shown = visible(hostile)
    assert "\x1b" not in shown and "\u202e" not in shown and "\r" not in shown and "\x00" not in shown
    assert shown.startswith("ok\\x1b[2J") and "\\u202e" in shown
    assert visible("a\nb\tc", keep_newlines=True) == "a\nb\tc" and visible("a\nb") == "a\\x0ab"
    for width in range(1, len(shown) + 2):
        cut_text = cut(hostile, width)
        assert len(cut_text) <= width and "\x1b" not in cut_text
        assert not cut_text.rstrip("…").endswith(("\\", "\\x", "\\x1", "\\u", "\\u20", "\\u202"))


def test_eval_limits_and_format_parse_or_say_why():
    spec = ProjectConfig.parse(
        '[eval]\nformat = 2\ncommand = "x"\noutput = ["a"]\nenv = ["HOME_X"]\n[eval.limits]\nmemory = "2G"\n'
    ).evaluation
    assert spec.limits == Limits(memory=2 << 30) and spec.declared_output == ("a",)
    assert EvalSpec.parse({"command": "x"}).declared_output == ()
    for text, said in [
        ('[eval]\ncommand = "x"\nenv = ["A"]\n', "need format = 2"),
        ('[eval]\nformat = 4\ncommand = "x"\n', "needs a newer git-agora"),
        ('[eval]\ncommand = "x"\nsandbox = false\n', "does not know (sandbox)"),
        ('[eval]\nformat = 2\ncommand = "x"\n[eval.limits]\nmemory = "lots"\n', "a size such as"),
        ('[eval]\nformat = 2\ncommand = "x"\nenv = ["A B"]\n', "not an environment variable"),
        ('[eval]\nformat = 2\ncommand = "x"\npins = { hybridlm = "abc" }\n', "pinned to a sha256"),
        ('[eval]\nformat = 2\ncommand = "x"\nnetwork = "yes"\n', "true or false"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(said)):
            ProjectConfig.parse(text)


def test_a_format_2_setup_round_trips_through_dump():
    text = (
        '[metric]\nname = "m"\n[eval]\nformat = 2\nbuild = "b {artifact}"\nscore = "s {artifact}"\n'
        'scorer = ["hybridlm"]\npins = { hybridlm = "' + "a" * 64 + '" }\noutput = ["x"]\nenv = ["E"]\n'
        'mounts = ["$E"]\nnetwork = true\n[eval.limits]\nmemory = "16G"\nartifact = "2G"\n'
    )
    config = ProjectConfig.parse(text)
    assert ProjectConfig.parse(config.dump()) == config
