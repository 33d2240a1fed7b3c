"""The node of the graph: a contribution, its commit-message encoding, tags and validation rules.

A contribution is one Git commit. Its message is the free-form description followed by one trailer
block (`Agora-Format: 2`, `Agora-Account: ...`, ...), which plain Git reads with
`git interpret-trailers --parse` or `git log --format='%(trailers:key=Agora-Tag,valueonly)'`.

Git only ever treats the *last* paragraph of a message as trailers, and we always write our own block
last, so a description line such as `Agora-Tag: setup` stays text. Two more things could confuse Git's
parser: a line beginning with `---` followed by space (it marks the start of a patch for
`interpret-trailers`) and whitespace-only lines; descriptions are normalised and escaped so that neither
occurs (see `encode_description`).
"""

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import Enum
from types import MappingProxyType
from typing import NamedTuple

FORMAT = "2"  # what writers declare; 2: the Git author and committer must be `ACCOUNT <ACCOUNT@agora>`
READABLE_FORMATS = ("1", "2")  # format 1 (before that rule): a wrong Git identity is only flagged


class Verdict(str, Enum):
    CONFIRMED = "confirmed"
    PARTIAL = "partial"
    FAILED = "failed"


VERDICT_WEIGHTS: dict[str, float] = {"confirmed": 20.0, "partial": 10.0, "failed": -20.0}


class Kind(NamedTuple):
    """A reserved tag and what it means: the one definition. The writers' and readers' rules
    (`kind_problems`, both row paths), the evidence, the frontier's masks (`frontier.graph.kind_mask`), the
    CLI's help and docs/protocol.md's table read it; docs/architecture.md lists the rest ("Adding a kind")."""

    name: str
    weight: float | None  # added to a direct parent from another account; None: none of its own
    meaning: str  # one line, for the protocol's table
    propagates: bool = True  # follow-on work that passes weight on (False: weighs 0, whatever its other tags)
    buildable: bool = True  # work to build on: a scored result when it reports the project's metric
    work: bool = True  # its description is work of its own: clustered, a leaf
    counted: bool = True  # counted in UCB's N
    posted: bool = False  # published with `git agora post --tag` (listed in its help)
    trailers: tuple[str, ...] = ()  # the trailers it needs besides format, account and tag
    rule: Callable[..., list[str]] | None = None  # (tags, parents, metrics, targets, verdict, metadata) -> problems


def _verification_rule(tags, parents, metrics, targets, verdict, metadata) -> list[str]:
    problems, found = [], [t for t in targets if t]
    if len(found) != 1:
        problems.append(f"a verification has exactly one target, found {len(found)}")
    elif tuple(parents) != tuple(found):
        problems.append("a verification has exactly one parent, its target")
    if verdict is None:
        problems.append("a verification needs a verdict (confirmed, partial or failed)")
    if VERIFICATION not in tags:
        problems.append("a target or verdict needs the verification tag")
    return problems


def _witness_rule(tags, parents, metrics, targets, verdict, metadata) -> list[str]:
    problems = []
    if len(parents) != 1:
        problems.append("a witness record has exactly one parent, the setup")
    if metrics or targets or verdict is not None or VERIFICATION in tags or SETUP in tags:
        problems.append("a witness record carries no metric, verdict or setup")
    if witness_tips(metadata) is None:
        problems.append('a witness record lists log tips: Agora-Meta {"witness": {"tips": {account: sha}}}')
    return problems


# fmt: off
KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("setup", 5.0, "the project's root (agora.toml, brief); the only one without parents",
         rule=lambda tags, parents, *_: ["a setup has no parents"] if parents else []),
    Kind("result", 5.0, "work measured by the project's evaluation (`git agora push`)"),
    Kind("insight", 5.0, "an observation others can build on", posted=True),
    Kind("hypothesis", 5.0, "an idea not yet measured: no metric", posted=True,
         rule=lambda tags, parents, metrics, *_: ["a hypothesis carries no metric"] if metrics else []),
    Kind("report", 5.0, "a write-up of work so far", posted=True),
    Kind("verification", None, "a rerun of another account's result, its only parent", buildable=False, work=False,
         trailers=("Agora-Target", "Agora-Verdict"), rule=_verification_rule),
    Kind("endorsed", 0.0, "visible, excluded from fitness", propagates=False, buildable=False, work=False, posted=True),
    Kind("wip", 0.0, "visible, does not propagate score (a claim: `git agora claim`)", propagates=False,
         buildable=False),
    Kind("witness", None, "a CI account's record of the log tips it saw (`witness_tips`)", propagates=False,
         buildable=False, work=False, counted=False, trailers=("Agora-Meta",), rule=_witness_rule),
    Kind("policy", None, "a policy amendment, when the setup's account publishes it"),
    Kind("replicate", None, "a result repeating its first parent's setting under another seed (UCB)"),
)}
# fmt: on
SETUP, RESULT, INSIGHT, HYPOTHESIS, REPORT, VERIFICATION, ENDORSED, WIP, WITNESS, POLICY, REPLICATE = KINDS
RESERVED_TAGS = KINDS.keys()  # never typos; a live view of KINDS


def default_weights() -> dict[str, float]:
    """The tag weights of the reserved kinds that have one (a project's `[tags]` override them)."""
    return {k.name: k.weight for k in KINDS.values() if k.weight is not None}


def kind_problems(tags, parents, metrics, targets, verdict, metadata) -> list[str]:
    """The rules of the kinds a commit has (a root without the setup tag, then each kind's `rule`, in
    KINDS order): the one definition, for a `Contribution` (`intrinsic_problems`) and for the values
    the index's fast path reads (`index.quick`)."""
    problems = [] if parents or SETUP in tags else ["no parents: only the setup is a root"]
    ruled = []
    for tag in tags:  # a loop: this runs for every commit a rebuild reads
        kind = KINDS.get(tag)
        if kind is not None and kind.rule is not None:
            ruled.append(kind)
    if (targets or verdict is not None) and VERIFICATION not in tags:
        ruled.append(KINDS[VERIFICATION])
    if len(ruled) > 1:  # each once, in KINDS order
        ruled = [kind for kind in KINDS.values() if kind in ruled]
    for kind in ruled:
        problems += kind.rule(tags, parents, metrics, targets, verdict, metadata)  # type: ignore[misc]
    return problems


ACCOUNT_VALUE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
TAG_VALUE = r"[a-z0-9][a-z0-9._:+-]{0,63}"
METRIC_NAME = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"
ACCOUNT_PATTERN = re.compile(f"^{ACCOUNT_VALUE}$")


def valid_account(name: str) -> bool:
    """Letters, digits, '.', '_' and '-', at most 64 (`ACCOUNT_VALUE`), and `storable_account`."""
    return bool(ACCOUNT_PATTERN.match(name)) and storable_account(name)


def storable_account(name: str) -> bool:
    """A name Git can store as a ref component: not ending in '.' or '.lock', no '..', no HEAD."""
    special = name.upper() in {"HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD"}
    return not name.endswith((".", ".lock")) and ".." not in name and not special


TAG_PATTERN = re.compile(f"^{TAG_VALUE}$")
METRIC_NAME_PATTERN = re.compile(f"^{METRIC_NAME}$")
_FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
_TRAILER_LINE = re.compile(r"^([A-Za-z0-9-]+):(.*)$", re.MULTILINE)
_PATCH_DIVIDER = re.compile(r"^---([ \t\v\f\r]|$)")  # Git's isspace, ASCII only
_CUT_LINE = "------------------------ >8 ------------------------"  # Git's scissors, after "# "


class Trailer(NamedTuple):
    """One trailer of the protocol as this package writes it: `key: value` lines, `occurs` times
    ("1", "?", "*" or "+"); `value` is a regular expression of what writers produce (readers accept
    more and judge it: `Contribution.from_message`, `intrinsic_problems`)."""

    key: str
    value: str
    occurs: str

    @property
    def field(self) -> str:
        return self.key.removeprefix("Agora-").lower()


# The trailer block, in the order `Contribution.trailers` writes it. The index's fast path is generated
# from it (`index.quick`): a trailer added here without its reading there fails the tests.
GRAMMAR = (
    Trailer("Agora-Format", "|".join(READABLE_FORMATS), "1"),
    Trailer("Agora-Account", ACCOUNT_VALUE, "1"),
    Trailer("Agora-Tag", TAG_VALUE, "+"),
    Trailer("Agora-Metric", rf"{METRIC_NAME}=-?[0-9]+(?:\.[0-9]+)?(?:e[-+][0-9]+)?", "*"),  # format_float
    Trailer("Agora-Target", "[0-9a-f]{40}", "?"),
    Trailer("Agora-Verdict", "|".join(v.value for v in Verdict), "?"),
    Trailer("Agora-Meta", r"\{[^\n]*\}", "?"),  # encode_metadata: one line of ASCII JSON
    Trailer("Agora-Ref", r"\S+#[0-9a-f]{40}", "*"),  # CrossRef.text
)


class Limits(NamedTuple):
    """Sizes the protocol allows: writers refuse more, readers mark a commit over them invalid."""

    description_bytes: int = 64 * 1024
    tags: int = 32
    metrics: int = 64
    parents: int = 64
    cross_refs: int = 16
    meta_bytes: int = 16 * 1024
    meta_depth: int = 16
    earliest_time: int = 946_684_800  # 2000-01-01T00:00:00Z
    future_slack_s: int = 600  # a commit dated more than 10 minutes ahead of the reader's clock is pending


LIMITS = Limits()
PENDING_FUTURE = "dated in the future"  # the start of the pending reason: re-checked on later reads


class ContributionError(ValueError):
    """A contribution that breaks a protocol rule; the message is one line for the user."""


class NewerFormat(ContributionError):
    """A contribution written in a protocol version this reader does not know."""


def contribution_weight(tags: Sequence[str], verdict: str | None, weights: Mapping[str, float] | None = None) -> float:
    """What a child adds to each direct parent's evidence when it comes from another account.

    A verification weighs its verdict (+20 / +10 / -20). Otherwise a kind that does not propagate (wip,
    endorsed, witness) weighs nothing, and any other contribution weighs the largest weight among its
    tags (unknown tags weigh 0).
    """
    weights = default_weights() if weights is None else weights
    if verdict is not None:
        return VERDICT_WEIGHTS[verdict]
    if any(not kind.propagates for kind in map(KINDS.get, tags) if kind is not None):
        return 0.0
    return max((weights[t] for t in tags if t in weights), default=0.0)


_EMPTY: Mapping = MappingProxyType({})  # the default metrics and metadata: one read-only empty mapping


class Contribution(NamedTuple):
    """One node: what the commit says, plus what Git knows about it (sha, parents, time).

    An immutable record (a NamedTuple, as every record a post builds: a frozen dataclass costs a
    `git agora post` about 0.5 ms to define and its module 5 ms to import). `metrics` and `metadata` are
    never changed in place; `_replace` makes a changed copy."""

    account: str
    tags: tuple[str, ...]
    description: str
    parents: tuple[str, ...] = ()
    metrics: Mapping[str, float] = _EMPTY
    metadata: Mapping[str, object] = _EMPTY
    target: str | None = None
    verdict: Verdict | None = None
    cross_refs: tuple[str, ...] = ()
    sha: str | None = None
    timestamp: int | None = None
    tree: str | None = None
    extra_targets: tuple[str, ...] = ()  # only set when decoding a message with several targets
    format: str = FORMAT  # the protocol version it declares (`READABLE_FORMATS`)
    meta_text: str | None = None  # Agora-Meta as read: not part of what the contribution says (`__eq__`)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Contribution) and self[:-1] == other[:-1]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:  # equal contributions have the same sha and text (their dicts are not hashable)
        return hash((self.sha, self.account, self.description))

    @property
    def title(self) -> str:
        return self.description.split("\n", 1)[0]

    @property
    def is_verification(self) -> bool:
        return VERIFICATION in self.tags or self.verdict is not None or self.target is not None

    @property
    def is_setup(self) -> bool:
        return SETUP in self.tags

    def to_message(self) -> str:
        """The commit message: encoded description, blank line, one trailer block."""
        return encode_description(self.description) + "\n\n" + "\n".join(self.trailers()) + "\n"

    def trailers(self) -> list[str]:
        lines = [f"Agora-Format: {self.format}", f"Agora-Account: {self.account}"]
        lines += [f"Agora-Tag: {tag}" for tag in self.tags]
        lines += [f"Agora-Metric: {name}={format_float(value)}" for name, value in self.metrics.items()]
        if self.target is not None:
            lines.append(f"Agora-Target: {self.target}")
        if self.verdict is not None:
            lines.append(f"Agora-Verdict: {self.verdict.value}")
        if self.metadata:
            lines.append(f"Agora-Meta: {encode_metadata(self.metadata)}")
        lines += [f"Agora-Ref: {ref}" for ref in self.cross_refs]
        return lines

    @classmethod
    def from_message(
        cls,
        message: str,
        *,
        sha: str | None = None,
        parents: Sequence[str] = (),
        timestamp: int | None = None,
        tree: str | None = None,
    ) -> "Contribution":
        """Decode a commit message; raises ContributionError when it is not a contribution."""
        description, trailers = split_trailers(message)
        fields: dict[str, list[str]] = {}
        for key, value in trailers:
            fields.setdefault(key.lower(), []).append(value)
        declared = check_format(fields.get("agora-format", []))
        accounts = fields.get("agora-account", [])
        if len(accounts) != 1:
            raise ContributionError(f"expected one Agora-Account trailer, found {len(accounts)}")
        targets = fields.get("agora-target", [])
        verdicts = fields.get("agora-verdict", [])
        if len(verdicts) > 1:
            raise ContributionError("more than one Agora-Verdict trailer")
        try:
            verdict = Verdict(verdicts[0]) if verdicts else None
        except ValueError:
            raise ContributionError(f"unknown verdict {verdicts[0]!r}") from None
        metas = fields.get("agora-meta", [])
        if len(metas) > 1:
            raise ContributionError("more than one Agora-Meta trailer")
        return cls(
            account=accounts[0],
            tags=tuple(fields.get("agora-tag", [])),
            description=decode_description(description),
            parents=tuple(parents),
            metrics=dict(parse_metric(m) for m in fields.get("agora-metric", [])),
            metadata=decode_metadata(metas[0]) if metas else {},
            meta_text=metas[0] if metas else None,
            target=targets[0] if targets else None,
            extra_targets=tuple(targets[1:]),
            verdict=verdict,
            cross_refs=tuple(fields.get("agora-ref", [])),
            sha=sha,
            timestamp=timestamp,
            tree=tree,
            format=declared,
        )


def dotgit_component(path: str) -> bool:
    """Whether a path has a `.git` component as `git fsck` judges it (its `hasDotgit`; git refuses to
    check out such a path on every system since 2.24.1, the HFS+ forms on macOS): a component that NTFS
    reads as `.git` (`ntfs_dotgit`), also after a backslash, or that HFS+ does (`hfs_dotgit`). Names
    come as `os.fsdecode` and `surrogateescape` give them: a byte that is not UTF-8 is a lone surrogate."""
    return any(hfs_dotgit(name) or any(ntfs_dotgit(name, at) for at in _starts(name)) for name in path.split("/"))


def dotgitmodules_link(name: str) -> bool:
    """Whether a symbolic link of this name (one path component) is one git refuses to check out and
    `git fsck` reports (`gitmodulesSymlink`): what NTFS or HFS+ reads as `.gitmodules`, also after a
    backslash (git's `is_ntfs_dotgitmodules`, `is_hfs_dotgitmodules`)."""
    return _hfs_dot(name, "gitmodules") or any(_ntfs_dot(name, at, "gitmodules", "gi7eba") for at in _starts(name))


def _starts(name: str) -> Iterator[int]:
    """Where NTFS starts a name within this one: at 0 and after each backslash (git checks each). Offsets,
    not copies: a name of a million backslashes costs a million short checks."""
    yield 0
    at = name.find("\\")
    while at >= 0:
        yield at + 1
        at = name.find("\\", at + 1)


def ntfs_dotgit(name: str, at: int = 0) -> bool:
    """Whether NTFS reads this name (from `at`) as `.git` (git's `is_ntfs_dotgit`): `.git` or its 8.3
    name `git~1`, in any case, then nothing but dots and spaces up to the end, a backslash or a colon
    (where a stream name starts, as in `.git::$INDEX_ALLOCATION`)."""
    if name[at : at + 1] not in (".", "g", "G"):
        return False
    if _ascii_lower(name[at : at + 4]) == ".git":
        return _ends_name(name, at + 4, "\\:")
    return _ascii_lower(name[at : at + 5]) == "git~1" and _ends_name(name, at + 5, "\\:")


def _ntfs_dot(name: str, at: int, dotted: str, short: str) -> bool:
    """Whether NTFS reads this name (from `at`) as `.<dotted>` (git's `is_ntfs_dot_generic`): that name
    in any case, its 8.3 forms (the first six letters, then `~1` to `~4`; or up to six letters of the
    hashed `short` prefix, a tilde and digits, eight characters in all), then nothing but dots and
    spaces up to the end or a colon."""
    head = name[at : at + 1 + len(dotted)]
    if head[:1] == "." and _ascii_lower(head[1:]) == dotted:
        return _ends_name(name, at + len(head), ":")
    head = name[at : at + 8]
    eight = _ascii_lower(head[:6]) == dotted[:6] and head[6:7] == "~" and head[7:8] in ("1", "2", "3", "4")
    return (eight or _short_name(head, short)) and _ends_name(name, at + 8, ":")


def _ends_name(name: str, at: int, stops: str) -> bool:
    """Whether NTFS reads the name from `at` on as nothing: dots and spaces up to its end or a `stop`."""
    while at < len(name):
        if name[at] in stops:
            return True
        if name[at] not in ". ":
            return False
        at += 1
    return True


def _short_name(head: str, prefix: str) -> bool:
    """Whether eight characters are an NTFS fall-back short name of `prefix`: some of its first six
    letters (any case), a tilde, a digit from 1, then digits."""
    tilde = head.find("~")
    if len(head) < 8 or not 0 <= tilde <= 6 or not head.isascii():
        return False
    digits = head[tilde + 1 :]
    return _ascii_lower(head[:tilde]) == prefix[:tilde] and digits.isdigit() and digits[0] != "0"


def hfs_dotgit(name: str) -> bool:
    """Whether HFS+ reads this name as `.git` (git's `is_hfs_dotgit`): `.git` in any ASCII case once the
    code points HFS+ ignores are taken out (zero-width and direction marks: `.g`, U+200C, `it`). Git stops
    reading at the first byte that is not UTF-8 (or U+FFFE, U+FFFF) as at the name's end."""
    return _hfs_dot(name, "git")


HFS_IGNORED = frozenset(map(chr, [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]))
_NOT_UTF8 = re.compile("[\udc80-\udcff\ufffe\uffff]")  # where git's UTF-8 reading stops (`pick_one_utf8_char`)


def _hfs_dot(name: str, dotted: str) -> bool:
    """Whether HFS+ reads this name as `.<dotted>` (git's `is_hfs_dot_generic`; see `hfs_dotgit`)."""
    if name.isascii():
        return len(name) == 1 + len(dotted) and name.lower() == "." + dotted
    cut = _NOT_UTF8.search(name)
    kept = [char for char in (name if cut is None else name[: cut.start()]) if char not in HFS_IGNORED]
    return _ascii_lower("".join(kept)) == "." + dotted


def _ascii_lower(text: str) -> str:
    """ASCII letters lowered, as git compares names; any other character kept (Python would lower `İ`)."""
    return text.lower() if text.isascii() else text


def checkout_refused(name: str, link: bool) -> bool:
    """Whether git refuses to check out a tree entry of this name (`link`: a symbolic link), whatever the
    system: `.`, `..` or an empty name, a `.git` component (`dotgit_component`), a `.gitmodules` link
    (`dotgitmodules_link`)."""
    return name in ("", ".", "..") or dotgit_component(name) or (link and dotgitmodules_link(name))


DOTGIT_REASON = (
    "a path git refuses to check out (a .git component, '.', '..' or an empty name, or .gitmodules as a symbolic link)"
)


def check_format(declared: list[str]) -> str:
    """The protocol version of one `Agora-Format` trailer this reader reads; a newer one needs a newer
    reader."""
    if len(declared) == 1 and declared[0] in READABLE_FORMATS:
        return declared[0]
    if len(declared) == 1 and declared[0].isdigit() and int(declared[0]) > int(FORMAT):
        version = declared[0]
        raise NewerFormat(f"written in Agora format {version}: needs a newer git-agora (this one reads up to {FORMAT})")
    if not declared:
        raise ContributionError("not an Agora contribution (no Agora-Format trailer)")
    expected = " or ".join(READABLE_FORMATS)
    raise ContributionError(f"not an Agora contribution (Agora-Format {', '.join(declared)!r}, expected {expected})")


# --- description and trailer encoding -------------------------------------------------------


def normalize_description(text: str) -> str:
    """Unix newlines, no trailing spaces, no leading or trailing blank lines."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def _escaped_by_git(line: str) -> bool:
    """A line Git's trailer parser would stop at: a patch divider or the scissors line. Checked on the
    line without its leading backslashes, so escaping (one more backslash) round-trips."""
    rest = line.lstrip("\\")
    return bool(_PATCH_DIVIDER.match(rest)) or _CUT_LINE in rest


def encode_description(text: str) -> str:
    """Normalise, and escape lines Git would read as a patch divider or scissors by adding one backslash."""
    text = normalize_description(text)
    if "---" not in text:
        return text
    return "\n".join("\\" + line if _escaped_by_git(line) else line for line in text.split("\n"))


def decode_description(text: str) -> str:
    if "---" not in text:
        return text
    lines = text.split("\n")
    return "\n".join(line[1:] if line.startswith("\\") and _escaped_by_git(line) else line for line in lines)


def split_trailers(message: str) -> tuple[str, list[tuple[str, str]]]:
    """Split a message into the text before its last paragraph and that paragraph's trailers.

    Mirrors Git: the trailer block is the last paragraph, every line of which is `Key: value`; a
    message whose last paragraph is not such a block has no trailers; and, like `git interpret-trailers`,
    nothing after a scissors line (`# ------------------------ >8 ---...`) counts, trailers included.
    Our writers escape such lines (`encode_description`); a hand-made commit with one has no trailers.
    """
    text = _before_scissors(message).rstrip("\n")
    head, sep, last = text.rpartition("\n\n")
    if not sep:
        return text, []
    trailers = _TRAILER_LINE.findall(last)
    if len(trailers) != last.count("\n") + 1:
        return text, []
    return head, [(key, value.strip()) for key, value in trailers]


def _before_scissors(message: str) -> str:
    if _CUT_LINE not in message:
        return message
    cut = message.find(f"\n# {_CUT_LINE}\n")
    if message.startswith(f"# {_CUT_LINE}\n"):
        return ""
    return message if cut < 0 else message[: cut + 1]


class CrossRef(NamedTuple):
    url: str
    sha: str

    @property
    def text(self) -> str:
        return f"{self.url}#{self.sha}"


def parse_cross_ref(text: str) -> CrossRef:
    """`URL#SHA` with a full 40-hex sha and a URL without spaces; one-line error otherwise."""
    url, hash_sign, sha = text.strip().rpartition("#")
    sha = sha.lower()
    if not hash_sign or not url or any(ch.isspace() for ch in url) or not _FULL_SHA.match(sha):
        raise ContributionError(f"cross-project reference {text!r} is not URL#SHA (a full 40-hex commit sha)")
    return CrossRef(url, sha)


def format_float(value: float) -> str:
    return repr(float(value))


def parse_metric(text: str) -> tuple[str, float]:
    """`name=value` with a finite float value; raises ContributionError otherwise."""
    name, eq, raw = text.partition("=")
    name, raw = name.strip(), raw.strip()
    if not eq or not METRIC_NAME_PATTERN.match(name):
        raise ContributionError(f"metric {text!r} is not NAME=VALUE")
    try:
        value = float(raw)
    except ValueError:
        raise ContributionError(f"metric {name} value {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise ContributionError(f"metric {name} value {raw!r} is not finite")
    return name, value


def encode_metadata(metadata: Mapping[str, object]) -> str:
    return json.dumps(dict(metadata), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def decode_metadata(text: str) -> dict[str, object]:
    """The Agora-Meta object; size and nesting are checked before parsing (so no input can exhaust the
    parser's recursion)."""
    if len(text) * 4 > LIMITS.meta_bytes and len(text.encode("utf-8", "surrogatepass")) > LIMITS.meta_bytes:
        raise ContributionError(f"Agora-Meta is over {LIMITS.meta_bytes // 1024} KiB")
    if text.count("[") + text.count("{") > LIMITS.meta_depth and json_depth(text) > LIMITS.meta_depth:
        raise ContributionError(f"Agora-Meta nests deeper than {LIMITS.meta_depth}")
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ContributionError("Agora-Meta is not JSON") from None
    if not isinstance(value, dict):
        raise ContributionError("Agora-Meta is not a JSON object")
    return value


def json_depth(text: str) -> int:
    """The deepest nesting of [ and { in JSON text, outside strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def time_problems(timestamp: int, now: int) -> list[str]:
    """The committer time must lie between 2000-01-01 and 10 minutes ahead of the reader's clock; a later one
    is *pending*: shown, not counted, and re-checked on later reads."""
    if timestamp < LIMITS.earliest_time:
        return [f"committer time {timestamp} is before 2000-01-01"]
    if timestamp > now + LIMITS.future_slack_s:
        return [f"{PENDING_FUTURE} (committer time {timestamp}): pending until the reader's clock reaches it"]
    return []


# --- validation --------------------------------------------------------------------------------


def intrinsic_problems(c: Contribution) -> list[str]:
    """Rules a contribution can break on its own, without looking at the rest of the graph."""
    problems = _size_problems(c)
    if not valid_account(c.account):
        problems.append(f"account {c.account!r} is not a valid name")
    if not c.description.strip():
        problems.append("empty description")
    if "\0" in c.description:
        problems.append("the description contains a NUL byte")
    if not c.tags:
        problems.append("no tags")
    problems += [f"tag {t!r} is not a valid tag" for t in c.tags if not TAG_PATTERN.match(t)]
    problems += [f"metric {n} is not finite" for n, v in c.metrics.items() if not math.isfinite(v)]
    problems += _cross_ref_problems(c.cross_refs)
    targets = ([] if c.target is None else [c.target]) + list(c.extra_targets)
    verdict = None if c.verdict is None else c.verdict.value
    return problems + kind_problems(c.tags, c.parents, c.metrics, targets, verdict, c.metadata)


def git_identity(account: str) -> str:
    """The Git author and committer of an account's contributions, as git-agora writes them."""
    return f"{account} <{account}@agora>"


def identity_problems(declared: str, account: str, author: str, committer: str) -> list[str]:
    """From format 2 on (`declared`), a Git author or committer other than `git_identity(account)` makes a
    contribution invalid: plain `git log` would name someone else than the account that counts (format 1
    contributions are only flagged, by `show`)."""
    if declared == "1" or author == committer == git_identity(account):
        return []
    return identity_mismatches(account, author, committer)


def older_than_setup(declared: int, setup: int) -> str | None:
    """A contribution declares at least its project's setup's format: a project founded in format 2 has
    no format 1 contribution (which would escape format 2's rules, such as the Git identity's)."""
    if declared >= setup:
        return None
    return f"written in Agora format {declared}, older than its project's setup (format {setup})"


def identity_mismatches(account: str, author: str, committer: str) -> list[str]:
    expected = git_identity(account)
    return [
        f"its Git {role} is {person!r}, not {expected!r}: plain git log names someone else than its account"
        for role, person in (("author", author), ("committer", committer))
        if person != expected
    ]


def witness_tips(metadata: Mapping[str, object]) -> dict[str, str] | None:
    """The log tips a witness record lists (`{"witness": {"tips": {account: sha}}}`: each account's
    newest contribution as the witness saw it), None when the metadata does not have that shape."""
    record = metadata.get("witness")
    tips = record.get("tips") if isinstance(record, Mapping) else None
    if not isinstance(tips, Mapping):
        return None
    for account, sha in tips.items():
        if not (isinstance(account, str) and valid_account(account) and isinstance(sha, str) and _FULL_SHA.match(sha)):
            return None
    return dict(tips)


def _size_problems(c: Contribution) -> list[str]:
    limits, problems = LIMITS, []
    if len(c.description) * 4 > limits.description_bytes and _utf8_length(c.description) > limits.description_bytes:
        problems.append(f"the description is over {limits.description_bytes // 1024} KiB")
    for what, count, limit in (
        ("tags", len(c.tags), limits.tags),
        ("metrics", len(c.metrics), limits.metrics),
        ("parents", len(c.parents), limits.parents),
        ("cross-project references", len(c.cross_refs), limits.cross_refs),
    ):
        if count > limit:
            problems.append(f"{count} {what}, more than the {limit} allowed")
    if c.metadata and c.meta_text is None:  # being written: check what would be encoded
        try:
            decode_metadata(encode_metadata(c.metadata))
        except (ContributionError, ValueError, RecursionError) as exc:
            problems.append(str(exc) if isinstance(exc, ContributionError) else "Agora-Meta cannot be encoded")
    return problems


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _cross_ref_problems(refs: Iterable[str]) -> list[str]:
    problems = []
    for ref in refs:
        try:
            parse_cross_ref(ref)
        except ContributionError as exc:
            problems.append(str(exc))
    return problems


def graph_problems(
    account: str, parents: Sequence[str], verified: str | None, account_of: Callable[[str], str | None]
) -> list[str]:
    """Rules that need the rest of the graph: parents exist and are contributions; no self-verification.
    The one definition, for writers (`check`) and the index (`index.parallel`).

    `verified`: the target of a verification (None for other work); `account_of(sha)`: the account of
    that contribution, None when it is unknown or not a contribution. (Exactly one setup root is checked
    over the whole graph by the indexer.)
    """
    problems = [f"parent {parent[:12]} is not a known contribution" for parent in parents if account_of(parent) is None]
    if verified is not None and account_of(verified) == account:
        problems.append("a verification of one's own work")
    return problems


def verified_target(c: Contribution) -> str | None:
    """What a verification verifies (None: c is no verification, or names no target)."""
    return c.target if c.is_verification and c.target else None


def check(c: Contribution, lookup: Callable[[str], Contribution | None]) -> None:
    """Raise ContributionError with the first problem, for writers that refuse bad input."""

    def account_of(sha: str) -> str | None:
        found = lookup(sha)
        return found.account if found is not None else None

    problems = intrinsic_problems(c) + graph_problems(c.account, c.parents, verified_target(c), account_of)
    if problems:
        raise ContributionError(problems[0])


def parse_meta_option(items: Iterable[str]) -> dict[str, object]:
    """`KEY=VALUE` pairs; a VALUE that parses as JSON is kept typed, otherwise it is a string."""
    metadata: dict[str, object] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise ContributionError(f"--meta {item!r} is not KEY=VALUE")
        if json_depth(raw) >= LIMITS.meta_depth:
            raise ContributionError(f"--meta {key}: Agora-Meta nests deeper than {LIMITS.meta_depth}")
        try:
            value = json.loads(raw)
            if isinstance(value, float) and not math.isfinite(value):
                raise ContributionError(f"--meta {key} is not finite")
        except json.JSONDecodeError:
            value = raw
        metadata[key.strip()] = value
    return metadata
