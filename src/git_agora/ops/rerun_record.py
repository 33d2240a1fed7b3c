"""A rerun's verdict as data: what a job that reran a claim hands back to the process that publishes it.

This is the minimal record the Slurm rerun path (`ops.rerun_jobs`) needs until issue 48's verdict bundle
(`git agora ci --verify-only --out DIR`) is on main; the bundle replaces this module, field for field:
the target's SHA, the evaluator identity it was rerun under, the verdict and its fixed reason (a
`evaluate.Reason` code, with the numbers behind it), and the rerun's record (`ops.verify.reproduce`'s
metadata: numbers and fixed words only). It holds no key and no signature: the job runs on a compute
node, and the submitting process checks the record (`check`) before it signs and publishes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AgoraError

FORMAT = 1
VERDICTS = ("confirmed", "partial", "failed")
FILE = "verdict.json"


@dataclass(frozen=True)
class RerunRecord:
    target: str
    evaluator: str  # the evaluator identity's SHA-256 it was rerun under
    verdict: str
    reason: str  # the fixed reason with its numbers (`Judgement.reason`)
    code: str  # the fixed reason's code (`Reason`)
    metadata: dict[str, Any] = field(default_factory=dict)  # `reproduce`'s record
    metrics: dict[str, float] = field(default_factory=dict)  # the primary metric as reproduced
    format: int = FORMAT


def write(path: Path, record: RerunRecord) -> None:
    """Write in one step (a temporary file, then a rename): a job killed mid-write leaves no record."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(asdict(record), sort_keys=True) + "\n")
    os.replace(temporary, path)


def read(path: Path) -> RerunRecord | None:
    """The record at `path`; None when there is none; AgoraError when it is not one."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise AgoraError(f"{path} is not a rerun record: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise AgoraError(f"{path} is not a rerun record of format {FORMAT}")
    try:
        return RerunRecord(**{k: data[k] for k in RerunRecord.__dataclass_fields__})
    except (KeyError, TypeError) as exc:
        raise AgoraError(f"{path} is not a rerun record: {exc}") from None


def check(record: RerunRecord, target: str, evaluator: str) -> None:
    """What the publishing process checks before it signs: the record is of the claim it asked for,
    under the evaluator identity the policy has here, with a verdict and a reason of the fixed words."""
    from ..evaluate import Reason

    if record.target != target:
        raise AgoraError(f"the rerun record is of {str(record.target)[:12]}, not of the claim {target[:12]}")
    if record.evaluator != evaluator or record.metadata.get("evaluator", {}).get("sha256") != evaluator:
        raise AgoraError(f"the rerun of {target[:12]} ran under another evaluator identity than the policy's here")
    if record.verdict not in VERDICTS:
        raise AgoraError(f"the rerun of {target[:12]} gives no verdict of {', '.join(VERDICTS)}")
    if record.code not in {r.value for r in Reason} or record.metadata.get("reason") != record.code:
        raise AgoraError(f"the rerun of {target[:12]} gives no fixed reason")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in record.metrics.values()):
        raise AgoraError(f"the rerun of {target[:12]} gives a metric that is not a number")
