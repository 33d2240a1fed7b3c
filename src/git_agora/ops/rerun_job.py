"""One rerun as a job (`python -m git_agora.ops.rerun_job SHA OUT`, in the clone): reproduce the claim in
the sandbox and write a verdict bundle of that one claim (`ops.bundle`, the format the split CI's two
jobs share) into the folder OUT. It signs nothing and publishes nothing, and refuses to run holding the
CI's key (`AGORA_CI_KEY`): the process that submitted the job checks the bundle (`ops.ci_split.accept`),
then signs and publishes it. A job killed before it wrote the bundle's header leaves no bundle."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import AgoraError
from ..evaluate.sandbox import SandboxUnavailable
from ..project import Project
from .bundle import MAX_LINE, Bundle, Rerun, write_bundle
from .ci import KEY_VARIABLE, Budget, _verify_within
from .ci_split import as_rerun


def rerun(project: Project, sha: str, out: Path) -> Bundle:
    """Rerun `sha` as `ci --verify-only` reruns a claim (its verdict, or why it was not rerun: the claim's
    fault or this node's) and write the one-claim bundle into `out`."""
    if os.environ.get(KEY_VARIABLE):
        raise AgoraError(f"a rerun job holds no key: {KEY_VARIABLE} is set in its environment")
    try:
        checked, _ = _verify_within(project, (sha,), Budget(1, None), publish_verdicts=False)
        reruns = tuple(map(as_rerun, checked))
    except SandboxUnavailable as exc:
        line = " ".join(f"no sandbox on this node: {exc.reason}".split())[:MAX_LINE]
        reruns = (Rerun(sha, None, line, None, "environment"),)
    bundle = Bundle(project.account, project.setup, reruns, ())
    write_bundle(out, bundle)
    return bundle


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m git_agora.ops.rerun_job SHA OUT", file=sys.stderr)
        return 2
    try:
        bundle = rerun(Project.open("."), args[0], Path(args[1]))
    except AgoraError as exc:
        print(f"git agora rerun: {exc}", file=sys.stderr)
        return 1
    for done in bundle.reruns:
        print(f"{done.target[:12]}: {done.verdict or 'not rerun'} ({done.reason})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
