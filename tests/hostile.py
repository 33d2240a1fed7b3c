"""A hostile corpus: thousands of random and mutated commits, written with `git fast-import` into one
forged account log, the way an attacker with push access would publish them."""

from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CUT = "# ------------------------ >8 ------------------------"
NOW = 1_760_000_000


@dataclass
class Corpus:
    good: int = 0
    bad_marks: list[int] = field(default_factory=list)  # marks of commits every reader must reject
    shas: dict[int, str] = field(default_factory=dict)  # mark -> sha, after the import

    @property
    def bad(self) -> list[str]:
        return [self.shas[m] for m in self.bad_marks]


def trailers(account: str = "mallory", tags=("insight",), metrics=(), extra=()) -> list[str]:
    lines = ["Agora-Format: 1", f"Agora-Account: {account}", *(f"Agora-Tag: {t}" for t in tags)]
    return lines + [f"Agora-Metric: {m}" for m in metrics] + list(extra)


def message(description: str, lines: list[str]) -> bytes:
    return (description + "\n\n" + "\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


def deep_json(depth: int) -> str:
    return "{" + '"a":[' * (depth - 1) + "1" + "]" * (depth - 1) + "}"


def hostile(rng: random.Random, n: int) -> tuple[bytes, bool, int | None]:
    """(message, valid, committer time override) of one generated commit."""
    kind = n % 14
    if kind == 0:
        return message(f"insight {n}: {rng.random()}", trailers()), True, None
    if kind == 1:
        return message(f"result {n}", trailers(tags=("result",), metrics=(f"bpb={rng.uniform(1, 4)}",))), True, None
    if kind == 2:
        return (
            message(f"deep {n}", trailers(extra=(f"Agora-Meta: {deep_json(rng.choice([17, 100, 5000]))}",))),
            False,
            None,
        )
    if kind == 3:
        return message(f"big meta {n}", trailers(extra=(f'Agora-Meta: {{"x": "{"y" * 20000}"}}',))), False, None
    if kind == 4:
        return message("d" * (70 * 1024) + f" {n}", trailers()), False, None
    if kind == 5:
        return message(f"tags {n}", trailers(tags=[f"t{i}" for i in range(40)])), False, None
    if kind == 6:
        bad = rng.choice(["bpb=nan", "bpb=inf", "bpb=x", "=1", "b p=2", "bpb=1e999"])
        return message(f"metric {n}", trailers(tags=("result",), metrics=(bad,))), False, None
    if kind == 7:
        head = rng.choice([b"", b"Agora-Format: 3\n", b"Agora-Format: one\n", b"\xff\xfe junk\n", b"Agora-Format: 1\n"])
        return (
            b"junk %d\n\n" % n + head + bytes(rng.randrange(1, 256) for _ in range(rng.randrange(0, 200))),
            False,
            None,
        )
    if kind == 8:
        return message(f"hypothesis {n}", trailers(tags=("hypothesis",), metrics=("bpb=1",))), False, None
    if kind == 9:
        return f"nul {n}\0".encode() + message("hidden", trailers()), False, None
    if kind == 10:
        return message(f"scissors {n}\n{CUT}\nbelow", trailers()), False, None
    if kind == 11:
        return message(f"future {n}", trailers()), False, NOW + 10 * 86400 + 10**9
    if kind == 12:
        return message(f"ancient {n}", trailers()), False, 100
    account = rng.choice(["a.", "", "-x", "bad name", "x" * 80])
    return message(f"account {n}", trailers(account=account)), False, None


def write(clone: Path, setup: str, count: int, seed: int = 0) -> Corpus:
    """Write `count` commits on top of `setup` (random earlier parents), then a forged log of them."""
    rng = random.Random(seed)
    corpus, stream = Corpus(), bytearray()
    for n in range(count):
        body, valid, when = hostile(rng, n)
        mark = n + 1
        parent = setup if n == 0 or rng.random() < 0.3 else f":{rng.randrange(1, mark)}"
        time_ = NOW + n if when is None else when
        stream += b"commit refs/hostile/scratch\nmark :%d\n" % mark
        stream += b"committer mallory <mallory@agora> %d +0000\n" % time_
        stream += b"data %d\n%s\nfrom %s\n" % (len(body), body, parent.encode())
        if n % 5 == 1:  # some carry code
            stream += b"M 100644 inline work/%d.txt\ndata 2\n%d\n" % (n, n % 10)
        stream += b"\n"
        (corpus.bad_marks.append(mark) if not valid else None)
        corpus.good += valid
    marks = clone / ".git" / "hostile-marks"
    run(clone, ["git", "fast-import", "--quiet", f"--export-marks={marks}"], bytes(stream))
    corpus.shas = {int(m[1:]): sha for m, sha in (line.split() for line in marks.read_text().splitlines())}
    log = bytearray()
    for n in range(count):
        entry = corpus.shas[n + 1]
        text = f"agora log: mallory\n\nAgora-Log-Format: 1\nAgora-Log-Entry: {entry}\n".encode()
        log += b"commit refs/agora/log/mallory\ncommitter mallory <mallory@agora> %d +0000\n" % (NOW + n)
        log += b"data %d\n%s\n" % (len(text), text)
        log += b"merge %s\ndeleteall\n\n" % entry.encode()
    run(clone, ["git", "fast-import", "--quiet"], bytes(log))
    run(clone, ["git", "update-ref", "-d", "refs/hostile/scratch"], b"")
    return corpus


def run(cwd: Path, args: list[str], data: bytes) -> None:
    subprocess.run(args, cwd=cwd, input=data, check=True, capture_output=True)


def literal_commit(clone: Path, tree: str, parent: str, when: str, body: bytes) -> str:
    """A commit object written as raw bytes, with a committer time git's own commands refuse to write."""
    raw = b"tree %s\nparent %s\nauthor m <m> %s +0000\ncommitter m <m> %s +0000\n\n%s" % (
        tree.encode(),
        parent.encode(),
        when.encode(),
        when.encode(),
        body,
    )
    out = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin", "--literally"],
        cwd=clone,
        input=raw,
        capture_output=True,
        check=True,
    )
    return out.stdout.decode().strip()


def json_text(value: object) -> str:
    return json.dumps(value)
