"""The reader's trust root and evaluator epoch (`frontier.root.Root`), from the setup and its amendments.

- The *current policy* is the setup account's newest valid amendment in its own log order (never by
  timestamps), else the setup.
- Trusted from the start: the setup's account (the frontier reads it from the table), and the current
  policy's `[identity] members` and `[ci] accounts`; the latter's witness records date what they saw
  (`ops.witness`). A CI account whose key the policy pins (`[ci] keys`) counts only while the identity
  this clone trusts for it holds that key.
- The *current epoch*: every policy in force somewhere whose evaluator (`Policy.evaluator_key`) is the
  current policy's. None when every policy in force scores alike (no amendment, or none that changed
  the evaluator).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import ProjectConfig
from ..contribution import POLICY_TAG
from ..frontier.graph import tag_mask
from ..frontier.root import Root
from ..identity.keys import same_key
from ..lookalike import look_alikes
from ..policy import load_policy
from ..project import Project
from ..refs.names import ROOT
from .witness import witnessed

# what `reader_root` reads of the contributions table
ROOT_COLUMNS = ("sha", "account", "timestamp", "tags", "log_seq", "valid", "policy")


def reader_root(project: Project, contributions: pa.Table) -> Root:
    """The trust root and the current epoch of this project's contributions (module docstring)."""
    return root_and_config(project, contributions)[0]


def root_and_config(project: Project, contributions: pa.Table) -> tuple[Root, ProjectConfig]:
    """`reader_root`, and the current policy's configuration it was read from."""
    valid = contributions.filter(pc.fill_null(contributions["valid"], False))
    config, epoch = _current_config_and_epoch(project, valid)
    impostors = ci_accounts_without_their_pinned_key(project, config.ci_keys)
    witnesses = frozenset(config.ci_accounts) - impostors
    root = Root(config.trusted_accounts - impostors, epoch, witnesses, witnessed(project, valid, witnesses))
    return root, config


def _current_config_and_epoch(project: Project, valid: pa.Table) -> tuple[ProjectConfig, frozenset[str] | None]:
    in_force = set(pc.unique(valid["policy"]).drop_null().to_pylist()) | {project.setup}
    current = current_policy(project.setup, valid)
    if in_force == {project.setup}:
        return project.config, None
    policies = {sha: load_policy(project.repo, sha) for sha in sorted(in_force | {current})}
    keys = {sha: policy.evaluator_key for sha, policy in policies.items()}
    same = frozenset(s for s, k in keys.items() if k == keys[current])
    return policies[current].config, None if len(set(keys.values())) == 1 else same


def ci_accounts_without_their_pinned_key(project: Project, pinned: Mapping[str, str]) -> frozenset[str]:
    """The CI accounts whose key the current policy pins (`[ci] keys`) but whose identity, as this clone
    trusts it, does not hold that key: someone else claimed the name first. They count as no CI."""
    if not pinned:
        return frozenset()
    from ..trust import trusted_keys

    held = trusted_keys(project.repo, project.repo.refs_under(ROOT))
    return frozenset(
        account for account, key in pinned.items() if not any(same_key(key, k) for k in held.get(account, ()))
    )


def account_look_alikes(contributions: pa.Table) -> dict[str, str]:
    """Each account that looks like an earlier one (`lookalike`), by first contribution (time, then name),
    mapped to that earlier account. Reads the account and timestamp columns."""
    named = contributions.filter(pc.is_valid(contributions["account"]))
    firsts = named.group_by("account").aggregate([("timestamp", "min")])
    founders = set(_founders(named))
    founded = pa.array([account not in founders for account in firsts["account"].to_pylist()], pa.bool_())
    ordered = firsts.append_column("later", founded).sort_by(
        [("later", "ascending"), ("timestamp_min", "ascending"), ("account", "ascending")]
    )  # the setup's account came first, even when a look-alike posted within the same second
    return look_alikes(ordered["account"].to_pylist())


def _founders(named: pa.Table) -> list[str]:
    """The accounts of valid setup contributions (the founder's: another setup is invalid)."""
    setup = tag_mask(named, "setup") & pc.fill_null(named["valid"], False).to_numpy(zero_copy_only=False)
    return named["account"].filter(pa.array(setup)).to_pylist()


def look_alike_notes(contributions: pa.Table) -> tuple[str, ...]:
    """One line per look-alike account, for the summary of `analyze`."""
    return tuple(
        f"account {later} looks like {earlier}" for later, earlier in account_look_alikes(contributions).items()
    )


def current_policy(setup: str, valid: pa.Table) -> str:
    """The setup account's newest amendment by its log order (valid rows only), else the setup."""
    at = pc.index_in(pa.array([setup]), value_set=valid["sha"])[0].as_py()
    if at is None:
        return setup
    owner = pc.equal(valid["account"], valid["account"][at]).to_numpy(zero_copy_only=False)
    amendments = np.flatnonzero(tag_mask(valid, POLICY_TAG) & np.asarray(owner, dtype=bool))
    if not len(amendments):
        return setup
    seqs = np.asarray(pc.fill_null(valid["log_seq"], -1).to_numpy(zero_copy_only=False))[amendments]
    return valid["sha"][int(amendments[np.argmax(seqs)])].as_py()
