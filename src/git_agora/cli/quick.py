"""`git agora post` without click: the command an agent runs after every idea, so its start-up is most of
its cost (click alone took 20-25 ms of a 120 ms post).

`OPTIONS` declares the options of `git agora post` once: click's command (`cli.post`, and the options
`push` shares with it: `cli.common.post_option`) is built from it, and `parse_post` reads the plain
command lines (those options and the group's `--account` and `-C`, each spelled as click spells it) into
the very arguments click would pass; anything else (help, a typo, an unknown option, a value click would
refuse) returns None and goes to click, which parses it again and says what is wrong.
tests/test_cli_quick.py holds the two parsers to the same result. `run_post` is the command's body for both.
"""

import os
import sys
from typing import NamedTuple

from ..contribution import KINDS, Verdict
from .output import open_project, parse_meta, parse_metrics, report_failure, report_published


class Option(NamedTuple):
    flags: tuple[str, ...]
    name: str  # the parameter's name (`PostCall`'s field)
    help: str
    multiple: bool = False
    metavar: str | None = None


RECORD = "--json"  # a flag, or a value when the next word does not look like an option (click's rule)
OPTIONS = (
    Option(("-m", "--message"), "description", "The insight, hypothesis, report...; the first line is the title."),
    Option(
        ("--tag",), "tags", f"A tag (repeatable): {', '.join(k.name for k in KINDS.values() if k.posted)}, ...", True
    ),
    Option(("--parent",), "parents", "A contribution this builds on (repeatable).", True, "SHA"),
    Option(("--target",), "targets", "The contribution a verification checks.", True, "SHA"),
    Option(("--verdict",), "verdict", "The verification verdict."),  # one of `Verdict`'s values
    Option(("--metric",), "metrics", "A metric (repeatable).", True, "NAME=VALUE"),
    Option(
        ("--new-tag",),
        "new_tags",
        "A new tag, meant though close to a known one: added to the tags (repeatable).",
        True,
        "TAG",
    ),
    Option(
        ("--new-metric",),
        "new_metrics",
        "A metric name meant, though close to the project's metric or an output field (repeatable).",
        True,
        "NAME",
    ),
    Option(("--meta",), "meta", "Structured metadata (VALUE may be JSON).", True, "KEY=VALUE"),
    Option(
        ("--predict",),
        "prediction",
        "The band you predict the primary metric in, e.g. 2.6..3.0 (recorded; analyze's calibration view).",
        metavar="LOW..HIGH",
    ),
    Option(
        (RECORD,),
        "record",
        "Print JSON; with FILE ('-': stdin), publish the minimal contribution record in it "
        "(agent_id, parent_hashes, tags, description, value with metric_value and free keys).",
        metavar="[FILE]",
    ),
    Option(("--ref",), "cross_refs", "Cite a commit of another Agora project (repeatable).", True, "URL#SHA"),
    Option(("--account",), "account", "Publish as this account (else AGORA_ACCOUNT or git config agora.account)."),
)
SINGLE = {flag: o.name for o in OPTIONS if not o.multiple and o.flags != (RECORD,) for flag in o.flags}
MULTIPLE = {flag: o.name for o in OPTIONS if o.multiple for flag in o.flags}


class PostCall(NamedTuple):
    """`git agora post`'s parameters, as click names them, and the group's account and directory."""

    description: str | None = None
    tags: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    verdict: str | None = None
    metrics: tuple[str, ...] = ()
    new_tags: tuple[str, ...] = ()
    new_metrics: tuple[str, ...] = ()
    meta: tuple[str, ...] = ()
    prediction: str | None = None
    record: str | None = None
    cross_refs: tuple[str, ...] = ()
    account: str | None = None
    group_account: str | None = None
    directory: str = "."


def parse_post(argv: list[str]) -> PostCall | None:
    """The call `argv` makes when it is a plain `git agora post` command line; None otherwise."""
    values: dict[str, object] = {}
    words = iter(argv)
    for word in words:  # the group's options, up to the command
        if word == "post":
            break
        name, value = _split(word, ("--account", "-C"))
        if name is None:
            return None
        key = "group_account" if name == "--account" else "directory"
        values[key] = value if value is not None else next(words, None)
    else:
        return None
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if word == RECORD or word.startswith(RECORD + "="):
            if word != RECORD:  # click puts an attached value back among the words, then decides
                rest.insert(0, word[len(RECORD) + 1 :])
            looks_like_option = bool(rest) and rest[0][:1] == "-" and len(rest[0]) > 1
            values["record"] = "" if not rest or looks_like_option else rest.pop(0)
            continue
        name, value = _split(word, (*SINGLE, *MULTIPLE))
        if name is None:
            return None
        if value is None:
            if not rest:
                return None
            value = rest.pop(0)
        if name in MULTIPLE:
            values[MULTIPLE[name]] = (*values.get(MULTIPLE[name], ()), value)  # type: ignore[misc]
        else:
            values[SINGLE[name]] = value
    if None in (values.get("group_account", ""), values.get("directory", "")):
        return None  # an option without its value
    if values.get("verdict") is not None and values["verdict"] not in {v.value for v in Verdict}:
        return None
    directory = str(values.pop("directory", None) or ".")
    if os.path.isfile(directory):
        return None  # click refuses a file for -C
    if "group_account" not in values:
        values["group_account"] = os.environ.get("AGORA_ACCOUNT") or None  # the group option's envvar
    return PostCall(directory=directory, **values)  # type: ignore[arg-type]


def _split(word: str, names: tuple[str, ...]) -> tuple[str | None, str | None]:
    """(option, attached value or None) for `--name`, `--name=value`, `-x` or `-xvalue`; (None, None) for
    any other word."""
    if word in names:
        return word, None
    if word.startswith("--"):
        name, equals, value = word.partition("=")
        return (name, value) if equals and name in names else (None, None)
    if word[:2] in names and len(word) > 2:  # a short option with its value attached
        return word[:2], word[2:]
    return None, None


def run_post(call: PostCall) -> int:
    """Publish what the call says; the exit status (`report_published`)."""
    from ..errors import AgoraError
    from ..ops.publish import post, read_record, record_fields

    account = call.account if call.account is not None else call.group_account
    project = open_project(call.directory, account, as_json=call.record is not None)
    record = call.record
    fields_ = record_fields(project, read_record(record, _text(record))) if record else {}
    description = call.description or fields_.get("description")
    if not description or not description.strip():
        raise AgoraError("empty description: say what this contribution is (-m)")
    published = post(
        project,
        description,
        call.tags or fields_.get("tags", ()),
        call.parents or fields_.get("parents", ()),
        call.targets or fields_.get("targets", ()),
        call.verdict or fields_.get("verdict"),
        {**fields_.get("metrics", {}), **parse_metrics(call.metrics)},
        {**fields_.get("meta", {}), **parse_meta(call.meta)},
        call.cross_refs,
        call.prediction,
        new_tags=call.new_tags,
        new_metrics=call.new_metrics,
    )
    return report_published(published, record is not None, "published")


def run_post_quickly(call: PostCall) -> int:
    """Run the call; its exit status (a known failure is one line on stderr)."""
    try:
        return run_post(call)
    except (Exception, KeyboardInterrupt) as exc:
        return report_failure(exc)


def _text(path: str) -> str:
    from pathlib import Path

    return sys.stdin.read() if path == "-" else Path(path).read_text()
