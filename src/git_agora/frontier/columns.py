"""The columns of each view of `views.REGISTRY`, for the two places that lay views out: the tables of
`git agora analyze` (`cli.render`) and the overview of `git agora site` (`web.pages`, given them as
plain tuples by `ops.site`). A column is a row field, headed by its name. Standard library only."""

from __future__ import annotations

KINDS: dict[str, str] = {  # how a field reads where its value's type does not say
    "sha": "sha",  # shortened in text
    "target": "sha",
    "metric": "metric",  # the primary metric: six significant digits in text
    "quality": "share",  # a fraction: a percentage in text
    "inherited_quality": "share",
    "inside_share": "share",
    "mean_error": "signed",
}

TABLE_COLUMNS: dict[str, tuple[str, ...]] = {  # analyze's table: the title, last, takes the width left
    "leaders": ("rank", "sha", "account", "metric", "status", "quality", "title"),
    "built_on": ("sha", "account", "metric", "score", "status", "children", "descendants", "title"),
    "leaves": ("sha", "account", "metric", "status", "quality", "title"),
    "promising": ("sha", "account", "metric", "status", "descendants", "quality", "title"),
    "unverified": ("sha", "account", "metric", "checked", "quality", "title"),  # checked: carries its run record
    "contested": ("sha", "account", "metric", "quality", "title"),
    "verdicts": ("sha", "account", "verdict", "metric", "counts", "target"),  # why it does not count follows
    "earlier_epoch": ("sha", "account", "metric", "status", "title"),
    "open_hypotheses": ("sha", "account", "metric", "title"),
    "recent": ("sha", "account", "metric", "status", "title"),
    "tags": ("tag", "count"),
    "contributors": ("account", "contributions", "results", "verifications_given", "verifications_received"),
    "calibration": (
        "account", "results", "predicted", "inside_share", "mean_error", "short", "beat", "over_optimistic",
    ),
    "rejected": ("sha", "account", "title"),  # the reasons follow each row
}  # fmt: skip

# the views on the site's overview, in order, with the columns each shows between sha, account, value and title
OVERVIEW_COLUMNS: dict[str, tuple[str, ...]] = {
    "promising": ("quality", "descendants", "status"),
    "unverified": ("quality",),
    "contested": ("confirmations", "partials", "failures"),
    "earlier_epoch": ("status",),  # shown only when an amendment changed the evaluator (OVERVIEW_WHEN_ANY)
    "open_hypotheses": ("inherited_quality",),
    "built_on": ("score", "children", "descendants", "status"),
    "recent": ("status", "verdict"),
    "rejected": ("reasons",),
}
OVERVIEW_WHEN_ANY = frozenset({"earlier_epoch"})  # overview views left out while they have no row
