"""`git agora post`: publish a metadata-only contribution (the light path: the first parent's tree)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..contribution import Contribution, ContributionError, Verdict, parse_meta_option
from ..errors import AgoraError
from .common import account_option, open_project, parse_metrics, report_published, resolve_parents


@click.command("post")
@click.option("-m", "--message", "description", help="The insight, hypothesis, report...; the first line is the title.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable): insight, hypothesis, report, endorsed, ...")
@click.option("--parent", "parents", multiple=True, metavar="SHA", help="A contribution this builds on (repeatable).")
@click.option("--target", "targets", multiple=True, metavar="SHA", help="The contribution a verification checks.")
@click.option("--verdict", type=click.Choice([v.value for v in Verdict]), help="The verification verdict.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME=VALUE", help="A metric (repeatable).")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Structured metadata (VALUE may be JSON).")
@click.option("--json", "record", is_flag=False, flag_value="", default=None, metavar="[FILE]",
              help="Print JSON; with FILE ('-': stdin), publish the minimal contribution record in it "
                   "(agent_id, parent_hashes, tags, description, value with metric_value and free keys).")
@account_option
@click.pass_context
def command(ctx, description, tags, parents, targets, verdict, metrics, meta, record, account):
    """Publish an insight, hypothesis, verification or report on top of existing contributions.

    `git agora post --json FILE` reads the record from FILE (`-` for stdin); with `--json` alone the
    result is printed as JSON.
    """
    from ..publish import publish

    project = open_project(ctx, account)
    as_json = record is not None
    if record:
        fields = _read_record(record, project)
        description = description or fields["description"]
        tags = tags or fields["tags"]
        parents = parents or fields["parents"]
        metrics = metrics or fields["metrics"]
        meta = (*fields["meta"], *meta)
        targets = targets or fields["targets"]
        verdict = verdict or fields["verdict"]
    if not description or not description.strip():
        raise AgoraError("empty description: say what this contribution is (-m)")
    tags = list(dict.fromkeys(tags))
    if (targets or verdict) and "verification" not in tags:
        tags.insert(0, "verification")
    if not tags:
        raise AgoraError("no tags: give at least one --tag")
    try:
        metadata = parse_meta_option(meta)
    except ContributionError as exc:
        raise AgoraError(str(exc)) from None
    if "verification" in tags:
        if len(targets) != 1:
            raise AgoraError(f"a verification has exactly one --target, got {len(targets)}")
        if verdict is None:
            raise AgoraError("a verification needs --verdict confirmed|partial|failed")
    target = project.contribution(targets[0]).sha if targets else None
    parent_shas = resolve_parents(project, [*parents, *( [target] if target else [])] or [project.base])
    first = project.repo.commit_info(parent_shas[0])
    contribution = Contribution(
        account=project.account,
        tags=tuple(tags),
        description=description,
        parents=tuple(parent_shas),
        metrics=parse_metrics(metrics),
        metadata=metadata,
        target=target,
        verdict=Verdict(verdict) if verdict else None,
    )
    published = publish(project, contribution, first.tree)
    return report_published(published, as_json, "published")


def _read_record(path: str, project) -> dict:
    """The paper's minimal contribution record, mapped onto post's options."""
    text = click.open_file(path).read() if path == "-" else Path(path).read_text()
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AgoraError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(record, dict):
        raise AgoraError(f"{path}: a contribution record is a JSON object")
    agent = record.get("agent_id")
    if agent is not None and project.account_option is None and not _configured_account(project):
        project.account_option = str(agent)
    if agent is not None and str(agent) != project.account:
        raise AgoraError(f"the record is for agent {agent!r} but you publish as {project.account!r}")
    value = record.get("value") or {}
    if not isinstance(value, dict):
        raise AgoraError(f"{path}: value must be a JSON object")
    metrics, meta = [], []
    for key, item in value.items():
        if key == "metric_value":
            name = project.config.metric or "metric"
            metrics.append(f"{name}={item}")
        else:
            meta.append(f"{key}={json.dumps(item)}")
    return {
        "description": record.get("description"),
        "tags": tuple(record.get("tags") or ()),
        "parents": tuple(record.get("parent_hashes") or ()),
        "metrics": tuple(metrics),
        "meta": tuple(meta),
        "targets": tuple([record["target"]] if record.get("target") else ()),
        "verdict": record.get("verdict"),
    }


def _configured_account(project) -> bool:
    import os

    return bool(os.environ.get("AGORA_ACCOUNT") or project.repo.git.config_get("agora.account"))
