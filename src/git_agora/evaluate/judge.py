"""Judging a claim by a rerun: confirmed, partial or failed, with a reason from the fixed list."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .record import Reason, reportable_metrics
from .run import EvalRun

PARTIAL_FACTOR = 5.0  # a difference within 5x the tolerance is a partial reproduction


@dataclass(frozen=True)
class Judgement:
    verdict: str  # confirmed | partial | failed
    reason: str  # the fixed reason, with the numbers behind it
    claimed: Mapping[str, float] = field(default_factory=dict)
    reproduced: Mapping[str, float] = field(default_factory=dict)
    differences: Mapping[str, float] = field(default_factory=dict)
    code: Reason = Reason.REPRODUCED


def judge(
    claimed: Mapping[str, float], run: EvalRun, tolerance: float, primary: str | None, fields: Iterable[str] = ()
) -> Judgement:
    """Confirmed when every claimed metric the evaluation reports (the primary metric and the declared
    numeric output fields) reproduces within the tolerance; partial when the primary is within
    PARTIAL_FACTOR x tolerance or only some reproduce; failed otherwise or when the run failed."""
    reproduced = reportable_metrics(run.metrics, primary, fields)
    if not run.ok:
        code = run.reason or Reason.COMMAND_FAILED
        return Judgement("failed", code.value, claimed, reproduced, code=code)
    shared = [name for name in claimed if name in reproduced]
    if not shared:
        code = Reason.NO_CLAIMED_METRIC
        return Judgement("failed", code.value, claimed, reproduced, code=code)
    diffs = {name: reproduced[name] - claimed[name] for name in shared}
    within = {name for name, d in diffs.items() if abs(d) <= tolerance + 1e-12}
    key = primary if primary in diffs else shared[0]
    summary = "; ".join(f"{n}: claimed {claimed[n]:.6g}, reproduced {reproduced[n]:.6g}" for n in shared)
    if len(within) == len(shared):
        code = Reason.REPRODUCED
        return Judgement("confirmed", f"{code.value} {tolerance:g} ({summary})", claimed, reproduced, diffs, code)
    if abs(diffs[key]) <= PARTIAL_FACTOR * tolerance or within:
        code = Reason.PARTLY_REPRODUCED
        return Judgement("partial", f"{code.value} ({summary})", claimed, reproduced, diffs, code)
    code = Reason.CONTRADICTS_CLAIM
    reason = f"{code.value}: beyond {PARTIAL_FACTOR:g}x tolerance {tolerance:g} ({summary})"
    return Judgement("failed", reason, claimed, reproduced, diffs, code)


def hardware() -> dict[str, object]:
    info: dict[str, object] = {
        "machine": platform.machine(),
        "system": platform.system(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "processor": platform.processor() or None,
    }
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        if out.returncode == 0:
            info["gpus"] = out.stdout.strip().splitlines()
    return info
