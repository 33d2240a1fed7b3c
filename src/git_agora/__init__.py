"""git-agora: shared memory for research agents, with Githe only state.

The public API: open a project, then call any workflow on it. Every function returns a typed result
(a dataclass or NamedTuple with `to_dict()` for JSON) and raises `AgoraError` with a one-line message on bad input::

    import git_agora

    project = agora.open_project(".", account="alice")
    agora.fetch(project)
    best = agora.analyze(project).summary.best

Names load lazily, so `import git_agora` stays cheap (no pyarrow until a reading workflow runs).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_MODULES = {  # where each exported name is defined, loaded on first use (`__getattr__`)
    "errors": ("AgoraError", "ExitCode"),
    "feedback": ("Feedback",),
    "project": ("Project",),
    "contribution": ("Contribution", "Verdict"),
    "records": ("RunRecord", "CheckRecord", "WitnessRecord"),
    "config": ("ProjectConfig",),
    "ops.init": ("init_project",),
    "ops.clone": ("clone", "Cloned"),
    "ops.publish": ("Published", "publish", "publish_worktree", "Push", "post", "record_fields"),
    "ops.claim": ("claim", "release", "claims"),
    "frontier.claims": ("Claim",),
    "ops.keys": ("rotate_key", "key_info"),
    "ops.checkout": ("checkout", "CheckedOut"),
    "ops.sync": ("fetch", "sync", "Fetched", "Synced"),
    "ops.evaluate": ("run", "Evaluated"),
    "ops.verify": ("verify", "Verification", "reproduce", "Reproduction"),
    "ops.ci": ("verify_pending", "ci", "CiReport", "PendingReport", "Budget"),
    "ops.analyze": ("analyze", "search"),
    "frontier.analyze": ("AnalyzeResult",),
    "frontier.views": ("View", "Row"),
    "frontier.search": ("SearchResult", "SearchHit"),
    "ops.embedding": ("embed_everything", "EmbedReport"),
    "embedding.plan": ("EmbedBudget",),
    "ops.history": ("show", "Shown", "log", "LogEntry", "lineage", "stats"),
    "ops.indexing": ("update_index", "check_index", "index_table", "index_dataframe", "IndexSummary"),
    "ops.site": ("build_site", "site", "serve_site", "SiteReport"),
    "ops.status": ("whoami", "Identity"),
    "ops.launch": ("launch", "launch_status", "stop_launch", "LaunchStatus", "AgentStatus"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = [  # a literal list: type checkers read what `import git_agora` exports from it (PEP 484)
    "open_project",
    "AgoraError",
    "ExitCode",
    "Feedback",
    "Project",
    "Contribution",
    "Verdict",
    "RunRecord",
    "CheckRecord",
    "WitnessRecord",
    "ProjectConfig",
    "init_project",
    "clone",
    "Cloned",
    "Published",
    "publish",
    "publish_worktree",
    "post",
    "record_fields",
    "claim",
    "release",
    "claims",
    "Claim",
    "rotate_key",
    "key_info",
    "checkout",
    "CheckedOut",
    "fetch",
    "sync",
    "Fetched",
    "Synced",
    "run",
    "Evaluated",
    "verify",
    "Verification",
    "reproduce",
    "Reproduction",
    "verify_pending",
    "ci",
    "CiReport",
    "PendingReport",
    "Budget",
    "analyze",
    "AnalyzeResult",
    "View",
    "Row",
    "SearchResult",
    "SearchHit",
    "search",
    "embed_everything",
    "EmbedReport",
    "EmbedBudget",
    "show",
    "Shown",
    "log",
    "LogEntry",
    "lineage",
    "stats",
    "update_index",
    "check_index",
    "index_table",
    "index_dataframe",
    "IndexSummary",
    "build_site",
    "site",
    "serve_site",
    "SiteReport",
    "whoami",
    "Identity",
    "launch",
    "launch_status",
    "stop_launch",
    "LaunchStatus",
    "AgentStatus",
]


def open_project(
    path: Any = ".", account: str | None = None, remote: str | None = None, feedback: Any = None
) -> Project:
    """The Agora project of the Git repository at (or above) `path`; `account` and `remote` override
    `AGORA_ACCOUNT`, `git config agora.account` and `git config agora.remote`."""
    from .project import Project

    return Project.open(path, account, remote, feedback)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'git_agora' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)


if TYPE_CHECKING:  # `X`: re-exported for type checkers (PEP 484), as `import git_agora` gives them
    from .config import ProjectConfig
    from .contribution import Contribution, Verdict
    from .embedding.plan import EmbedBudget
    from .errors import AgoraError, ExitCode
    from .feedback import Feedback
    from .frontier.analyze import AnalyzeResult
    from .frontier.search import SearchHit, SearchResult
    from .frontier.views import Row, View
    from .ops.analyze import analyze, search
    from .ops.checkout import CheckedOut, checkout
    from .ops.ci import (
        Budget,
        CiReport,
        PendingReport,
        ci,
        verify_pending,
    )
    from .ops.clone import Cloned, clone
    from .ops.embedding import EmbedReport, embed_everything
    from .ops.evaluate import Evaluated, run
    from .ops.history import (
        LogEntry,
        Shown,
        lineage,
        log,
        show,
        stats,
    )
    from .ops.indexing import (
        IndexSummary,
        check_index,
        index_dataframe,
        index_table,
        update_index,
    )
    from .ops.init import init_project
    from .ops.launch import (
        AgentStatus,
        LaunchStatus,
        launch,
        launch_status,
        stop_launch,
    )
    from .ops.publish import (
        Published,
        Push,
        post,
        publish,
        publish_worktree,
        record_fields,
    )
    from .ops.site import SiteReport, build_site, serve_site, site
    from .ops.status import Identity, whoami
    from .ops.sync import Fetched, Synced, fetch, sync
    from .ops.verify import (
        Reproduction,
        Verification,
        reproduce,
        verify,
    )
    from .project import Project
    from .records import CheckRecord, RunRecord, WitnessRecord
