"""The Parquet index: table schemas (the format version is `state.FORMAT_VERSION`, read without pyarrow).

One row per commit, keyed by commit SHA. Commits never change, so a row's own fields never change;
an update adds rows for commits not reachable from the previously indexed ref tips and re-applies
the rules that depend on the whole set (the setup root, log_seq) to all rows.
"""

from __future__ import annotations

import pyarrow as pa

CONTRIBUTIONS = pa.schema(
    [
        ("sha", pa.string()),
        ("account", pa.string()),
        ("timestamp", pa.int64()),  # committer time, unix seconds (there is no server clock)
        ("log_seq", pa.int64()),  # position in the account's log, 0-based; null if in no log
        ("title", pa.string()),
        ("description", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("metrics", pa.map_(pa.string(), pa.float64())),
        ("primary_metric", pa.float64()),  # the project's metric, null when not reported
        ("metadata", pa.string()),  # one JSON object
        ("parents", pa.list_(pa.string())),
        ("tree", pa.string()),
        ("code_bearing", pa.bool_()),  # tree differs from the first parent's (setup: true)
        ("target", pa.string()),  # verification target, null otherwise
        ("verdict", pa.string()),  # confirmed | partial | failed, null otherwise
        ("valid", pa.bool_()),
        ("reasons", pa.list_(pa.string())),  # why invalid; empty when valid
        ("policy", pa.string()),  # the setup or policy amendment in force on the first-parent line
        ("run_backed", pa.bool_()),  # a verdict whose metadata records its rerun (`carries_run`); null otherwise
    ]
)

EDGES = pa.schema(
    [
        ("child", pa.string()),
        ("parent", pa.string()),
        ("position", pa.int32()),  # 0 = first parent
        ("child_account", pa.string()),
        ("parent_account", pa.string()),  # null when the parent is not a known contribution
        ("cross_account", pa.bool_()),
    ]
)

TAGS = pa.schema([("sha", pa.string()), ("tag", pa.string())])

ACCOUNTS = pa.schema(
    [
        ("account", pa.string()),
        ("contributions", pa.int64()),
        ("first_timestamp", pa.int64()),
        ("last_timestamp", pa.int64()),
    ]
)

VERDICTS = pa.schema(
    [
        ("sha", pa.string()),  # the verification contribution
        ("verifier", pa.string()),
        ("target", pa.string()),
        ("verdict", pa.string()),
        ("timestamp", pa.int64()),
        ("log_seq", pa.int64()),
        ("valid", pa.bool_()),
    ]
)

CROSS_REFS = pa.schema([("sha", pa.string()), ("url", pa.string()), ("target", pa.string())])

EMBEDDINGS = pa.schema([("sha", pa.string()), ("model", pa.string()), ("vector", pa.list_(pa.float32()))])

TABLES: dict[str, pa.Schema] = {
    "contributions": CONTRIBUTIONS,
    "edges": EDGES,
    "tags": TAGS,
    "accounts": ACCOUNTS,
    "verdicts": VERDICTS,
    "cross_refs": CROSS_REFS,
}
