"""Evaluation texts: a local jsonl/parquet file, FineWeb-Edu through `datasets`, or an offline stand-in.

Only the score step imports this module; the build step (where transfer() runs) never does, and the
guard refuses importing it, or opening its source or the stand-in's, inside transfer(). Every loader
also checks the guard first, so calling one from inside transfer() raises DataAccessError.
Selection is deterministic and the result carries the sha256 of the texts (see `texts_sha256`).

The stand-in corpus is split into two disjoint parts: the evaluation part (its first 200 pieces, the
only ones the scorer ever reads) and a training part (the pieces of every help topic that has no piece
in the evaluation part). `stand_in_train_texts()` gives the training part; inside transfer() it is
reached through `hybridlm.train_split`, which asks a separate process for it, so the build process
never holds an evaluation text.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from hybridlm.guard import check_data_access

STAND_IN = "stand-in"
FINEWEB = "fineweb-edu"
FINEWEB_DATASET, FINEWEB_CONFIG = "HuggingFaceFW/fineweb-edu", "sample-10BT"
FINEWEB_MIN_CHARS, FINEWEB_MAX_CHARS = 500, 10_000
STAND_IN_MIN_CHARS = 1_500
STAND_IN_EVAL_TEXTS = 200  # the evaluation part: the first 200 pieces; never used for training
JSON_LINES_SUFFIXES = (".jsonl", ".json", ".ndjson")
LOCAL_SUFFIXES = (*JSON_LINES_SUFFIXES, ".parquet")


class DataError(ValueError):
    """The evaluation data is missing, malformed or too small."""


@dataclass(frozen=True)
class TextSet:
    texts: tuple[str, ...]
    source: str
    comparable_to_paper: bool
    note: str

    @property
    def sha256(self) -> str:
        return texts_sha256(self.texts)


def texts_sha256(texts) -> str:
    """sha256 over each text's UTF-8 bytes followed by a NUL byte, in order."""
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode("utf-8") + b"\0")
    return h.hexdigest()


def check_source(data: str | None) -> None:
    """Cheap checks that read no text (for `hybridlm eval`, before the build): a local file exists and
    has a known suffix; fineweb-edu needs `datasets`."""
    if data is None or data == STAND_IN:
        return
    if data == FINEWEB:
        if importlib.util.find_spec("datasets") is None:
            raise DataError("--data fineweb-edu needs the `datasets` package")
        return
    path = Path(data)
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    if path.suffix.lower() not in LOCAL_SUFFIXES:
        raise DataError(f"{path}: expected a .jsonl or .parquet file")


def load_texts(data: str | None = None, n_texts: int = 200) -> TextSet:
    """`data`: None or "stand-in" (offline corpus), "fineweb-edu" (needs `datasets` and the network or
    its cache), or the path of a .jsonl / .parquet file with a `text` field."""
    check_data_access()
    if n_texts < 1:
        raise DataError(f"--texts must be at least 1, got {n_texts}")
    if data is None or data == STAND_IN:
        texts, source, comparable = _stand_in(), "stand-in:pydoc_data.topics", False
        note = "offline stand-in corpus (Python's pydoc topics); NOT comparable to the paper's numbers"
    elif data == FINEWEB:
        texts, source = _fineweb(n_texts), f"{FINEWEB}:{FINEWEB_DATASET}/{FINEWEB_CONFIG}"
        comparable = n_texts == 200
        note = f"first {n_texts} texts of {FINEWEB_MIN_CHARS}-{FINEWEB_MAX_CHARS} characters, streamed in order"
    else:
        texts, source, comparable = _local_file(Path(data)), f"file:{Path(data).name}", False
        note = "local file: first texts in file order; not comparable to the paper's numbers"
    if len(texts) < n_texts:
        raise DataError(f"{source} has {len(texts)} usable texts, fewer than --texts {n_texts}")
    return TextSet(tuple(texts[:n_texts]), source, comparable, note)


def _local_file(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    suffix = path.suffix.lower()
    if suffix in JSON_LINES_SUFFIXES:
        rows = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{lineno}: not a JSON line ({exc.msg})") from None
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        if "text" not in table.column_names:
            raise DataError(f"{path}: no `text` column")
        rows = [{"text": t} for t in table.column("text").to_pylist()]
    else:
        raise DataError(f"{path}: expected a .jsonl or .parquet file")
    return [r["text"] for r in rows if isinstance(r, dict) and isinstance(r.get("text"), str) and r["text"].strip()]


def _fineweb(n_texts: int) -> list[str]:
    """The first `n_texts` texts of 500 to 10,000 characters of FineWeb-Edu sample-10BT, in stream order."""
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise DataError("--data fineweb-edu needs the `datasets` package") from exc
    stream = load_dataset(FINEWEB_DATASET, name=FINEWEB_CONFIG, split="train", streaming=True)
    texts = []
    for row in stream:
        if FINEWEB_MIN_CHARS <= len(row["text"]) <= FINEWEB_MAX_CHARS:
            texts.append(row["text"])
            if len(texts) == n_texts:
                break
    return texts


def _stand_in() -> list[str]:
    """The evaluation part of the stand-in corpus: its first STAND_IN_EVAL_TEXTS pieces."""
    return [text for _, text in _stand_in_pieces()[:STAND_IN_EVAL_TEXTS]]


def stand_in_train_texts() -> list[str]:
    """The training part of the stand-in corpus: the pieces of the help topics that have no piece in the
    evaluation part (a topic cut by the boundary is left out of both), so the two share no topic."""
    check_data_access("the stand-in corpus")
    pieces = _stand_in_pieces()
    evaluated = {topic for topic, _ in pieces[:STAND_IN_EVAL_TEXTS]}
    return [text for topic, text in pieces[STAND_IN_EVAL_TEXTS:] if topic not in evaluated]


def _stand_in_pieces() -> list[tuple[str, str]]:
    """(topic, text) for English help texts shipped with Python: each pydoc topic (sorted by name) split at
    blank lines into pieces of at least 1,500 characters (a short remainder joins the previous piece)."""
    from pydoc_data.topics import topics

    out: list[tuple[str, str]] = []
    for name in sorted(topics):
        pieces, current = [], ""
        for paragraph in topics[name].strip().split("\n\n"):
            current = f"{current}\n\n{paragraph}" if current else paragraph
            if len(current) >= STAND_IN_MIN_CHARS:
                pieces.append(current)
                current = ""
        if current:
            if pieces and len(current) < STAND_IN_MIN_CHARS:
                pieces[-1] = f"{pieces[-1]}\n\n{current}"
            else:
                pieces.append(current)
        out.extend((name, piece) for piece in pieces)
    return out
