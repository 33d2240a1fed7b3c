"""One rerun as a job (`python -m git_agora.ops.rerun_job SHA OUT [TIMEOUT]`, in the clone): reproduce
the claim in the sandbox and write its verdict as data (`ops.rerun_record`) to OUT. It signs nothing and
publishes nothing (no key reaches a compute node): the process that submitted the job does that."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import AgoraError
from ..project import Project
from . import rerun_record


def rerun(project: Project, sha: str, out: Path, timeout: float | None) -> rerun_record.RerunRecord:
    from .verify import reproduce

    done = reproduce(project, sha, timeout=timeout, sandbox=True)
    metric = project.policy(sha).config.metric
    reproduced = done.judgement.reproduced
    record = rerun_record.RerunRecord(
        target=sha,
        evaluator=str(done.metadata["evaluator"]["sha256"]),
        verdict=done.judgement.verdict,
        reason=done.judgement.reason,
        code=done.judgement.code.value,
        metadata=done.metadata,
        metrics={str(metric): reproduced[metric]} if metric and metric in reproduced else {},
    )
    rerun_record.write(out, record)
    return record


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print("usage: python -m git_agora.ops.rerun_job SHA OUT [TIMEOUT]", file=sys.stderr)
        return 2
    try:
        record = rerun(Project.open("."), args[0], Path(args[1]), float(args[2]) if len(args) == 3 else None)
    except AgoraError as exc:
        print(f"git agora rerun: {exc}", file=sys.stderr)
        return 1
    print(f"{record.target[:12]}: {record.verdict} ({record.code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
