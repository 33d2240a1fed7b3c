"""The reader's trust root and evaluator epoch (`frontier.root.Root`), from the setup and its amendments.

- The *current policy* is the setup account's newest valid amendment in its own log order (never by
  timestamps), else the setup.
- Trusted from the start: the setup's account (the frontier reads it from the table), and the current
  policy's `[identity] members` and the CI accounts it counts (`ProjectConfig.counted_ci_accounts`);
  the latter's witness records date what they saw (`ops.witness`).
- Keys come from the history, not from the order a reader saw it: an account some policy in force pins
  (`[ci] keys`, `pins_in_force`) is verified with those keys (and the rotations they signed), whatever
  identity this clone pinned first; `[identity] members` are verified with the key of the policy in
  force for each contribution (`index.signatures`). First-use pins hold only for the other accounts.
- The *current epoch*: every policy in force somewhere whose evaluator (`Policy.evaluator_key`) is the
  current policy's. None when every policy in force scores alike (no amendment, or none that changed
  the evaluator).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import ConfigError, ProjectConfig
from ..contribution import POLICY, SETUP
from ..frontier.graph import tag_mask, take_rows
from ..frontier.root import Root
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
    """`reader_root`, and the current policy's configuration it was read from. Reads the columns of
    `ROOT_COLUMNS` (and `metadata` when present) through masks: no copy of the table."""
    config, epoch = _current_config_and_epoch(project, contributions)
    witnesses = frozenset(config.counted_ci_accounts)
    root = Root(config.trusted_accounts, epoch, witnesses, witnessed(project, contributions, witnesses))
    root = replace(root, ranks=config.verdicts_format >= 2)  # [verdicts] format 2: ranked standing
    return root, config


def _valid(contributions: pa.Table) -> np.ndarray:
    return np.asarray(pc.fill_null(contributions["valid"], False).to_numpy(zero_copy_only=False), dtype=bool)


def policies_in_force(project: Project, contributions: pa.Table) -> set[str]:
    """The setup and every policy a valid contribution is judged by."""
    policy = contributions["policy"]
    valid = _valid(contributions)
    used = policy if valid.all() else policy.filter(pa.array(valid))
    return set(pc.unique(used).drop_null().to_pylist()) | {project.setup}


def _current_config_and_epoch(project: Project, contributions: pa.Table) -> tuple[ProjectConfig, frozenset[str] | None]:
    in_force = policies_in_force(project, contributions)
    current = current_policy(project.setup, contributions)
    if in_force == {project.setup}:
        return project.config, None
    policies = {sha: load_policy(project.repo, sha) for sha in sorted(in_force | {current})}
    keys = {sha: policy.evaluator_key for sha, policy in policies.items()}
    same = frozenset(s for s, k in keys.items() if k == keys[current])
    return policies[current].config, None if len(set(keys.values())) == 1 else same


PINS_FILE = "policy-pins.json"  # under .git/agora: the keys the policies in force pin, as last indexed


def pins_in_force(project: Project, in_force: set[str] | frozenset[str]) -> dict[str, tuple[str, ...]]:
    """The keys the policies `in_force` (`policies_in_force`: the setup and every valid amendment any valid
    contribution is judged by) pin for CI accounts (`[ci] keys`), per account, in a fixed order: a function
    of the history alone. The setup's account is never pinned here (its amendments decide the policies)."""
    founder = project.repo.contribution(project.setup)
    pins: dict[str, set[str]] = {}
    for sha in sorted(in_force):
        try:
            config = project.config if sha == project.setup else load_policy(project.repo, sha).config
        except (ConfigError, AssertionError):
            continue
        for account, key in config.ci_keys.items():
            if founder is None or account != founder.account:
                pins.setdefault(account, set()).add(" ".join(key.split()[:2]))
    return {account: tuple(sorted(keys)) for account, keys in sorted(pins.items())}


def pinned_keys(project: Project) -> dict[str, tuple[str, ...]]:
    """`pins_in_force` as the index last found them (`remember_pins`), else those of the setup."""
    data = _remembered(project)
    if data is not None:
        with contextlib.suppress(AttributeError, KeyError, TypeError):
            return {str(a): tuple(str(k) for k in keys) for a, keys in data["pins"].items()}
    founder = project.repo.contribution(project.setup)
    keys = {a: k for a, k in project.config.ci_keys.items() if founder is None or a != founder.account}
    return {a: (" ".join(k.split()[:2]),) for a, k in sorted(keys.items())}


def remembered_in_force(project: Project, index: str | None) -> set[str] | None:
    """The policies in force as `remember_pins` recorded them for the index whose tips digest is
    `index` (None: not recorded, or for another state of the index)."""
    data = _remembered(project)
    if index is None or data is None or data.get("index") != index:
        return None
    found = data.get("in_force")
    return {str(sha) for sha in found} if isinstance(found, list) else None


def _remembered(project: Project) -> dict | None:
    try:
        data = json.loads(Path(project.repo.agora_path, PINS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("setup") == project.setup else None


def remember_pins(
    project: Project,
    pins: dict[str, tuple[str, ...]],
    in_force: set[str] | frozenset[str] | None = None,
    index: str | None = None,
) -> None:
    """Record the pins, and the policies in force they came from with the tips digest of the index
    they were read from (`remembered_in_force`), so the next update adds to them instead of reading
    the whole index again."""
    path = Path(project.repo.agora_path, PINS_FILE)
    data: dict = {"setup": project.setup, "pins": pins}
    if in_force is not None and index is not None:
        data |= {"in_force": sorted(in_force), "index": index}
    with contextlib.suppress(OSError):  # a read-only .git/agora: found again by the next update
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def amendment_command(account: str, key: str = "ssh-ed25519 AAAA...") -> str:
    """The amendment that pins a CI account's key, as one line to paste."""
    return (
        f'under [ci] in agora.toml add keys = {{ {account} = "{key}" }} and format = 2, then '
        f'git agora push --tag policy -m "pin the CI key of {account}"'
    )


def ci_pin_notes(config: ProjectConfig) -> tuple[str, ...]:
    """What a reader says of the policy's unpinned CI accounts: under `[ci] format` 1 (older policies)
    a warning with the amendment that pins the key; under format 2 why the account is no CI."""
    if config.ci_format >= 2:
        return tuple(
            f"{account} is named in [ci] accounts without a key in [ci] keys: under [ci] format 2 it counts "
            "as an ordinary account, not as the project's CI"
            for account in config.unpinned_ci_accounts
        )
    return tuple(
        f"the CI account {account} has no pinned key: readers trust whichever identity for {account} they "
        f"saw first, so whoever published as {account} first may hold its standing; the next policy "
        f"generation counts it as no CI: {amendment_command(account)}"
        for account in config.unpinned_ci_accounts
    )


def account_look_alikes(contributions: pa.Table) -> dict[str, str]:
    """Each account that looks like an earlier one (`lookalike`), by first contribution (time, then name),
    mapped to that earlier account. Reads the account, timestamp, tags and valid columns (as one
    dictionary of names and their codes: no copy of the table)."""
    return look_alikes(accounts_in_order(*first_appearances(contributions)))


def first_appearances(contributions: pa.Table) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every account name, with its earliest timestamp and whether it founded the project (the account
    of a valid setup): what `accounts_in_order` sorts. One pass over the columns, grouped by code."""
    codes = pc.dictionary_encode(contributions["account"].combine_chunks())
    names = codes.dictionary.to_pylist()
    index = np.asarray(pc.fill_null(codes.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    named = index >= 0
    times = np.asarray(pc.fill_null(contributions["timestamp"], np.iinfo(np.int64).max).to_numpy(zero_copy_only=False))
    first = np.full(len(names), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, index[named], times[named].astype(np.int64))
    founder = np.zeros(len(names), dtype=bool)
    setup = tag_mask(contributions, SETUP) & _valid(contributions) & named
    founder[index[setup]] = True
    return names, first, founder


def accounts_in_order(names: list[str], first: np.ndarray, founder: np.ndarray) -> list[str]:
    """The accounts by first appearance: the setup's account first (even when a look-alike posted within
    the same second), then by earliest timestamp, then by name."""
    return [names[i] for i in sorted(range(len(names)), key=lambda i: (not founder[i], int(first[i]), names[i]))]


def look_alike_notes(contributions: pa.Table) -> tuple[str, ...]:
    """One line per look-alike account, for the summary of `analyze`."""
    marked = account_look_alikes(contributions)
    return tuple(f"account {later} looks like {earlier}" for later, earlier in marked.items())


def current_policy(setup: str, contributions: pa.Table) -> str:
    """The setup account's newest amendment by its log order (valid rows only), else the setup."""
    at = pc.index(contributions["sha"], setup).as_py()
    valid = _valid(contributions)
    if at is None or at < 0 or not valid[at]:
        return setup
    owner = pc.equal(contributions["account"], contributions["account"][at]).to_numpy(zero_copy_only=False)
    owned = np.flatnonzero(np.asarray(owner, dtype=bool) & valid)  # the tags of the setup account's rows only
    amendments = owned[tag_mask(take_rows(contributions.select(["tags"]), owned), POLICY)]
    if not len(amendments):
        return setup
    seqs = np.asarray(pc.fill_null(contributions["log_seq"], -1).to_numpy(zero_copy_only=False))[amendments]
    return contributions["sha"][int(amendments[np.argmax(seqs)])].as_py()


def account_key_notes(project: Project, config: ProjectConfig, account: str | None) -> tuple[str, ...]:
    """What `show` says of an account's key, where it is not the history's alone: a CI account of a
    `[ci] format` 2 policy without a pin (an ordinary account), or an account whose key this clone
    pinned on first use while it holds identities for it that start with other keys (a reader that
    fetched elsewhere first pinned another: the statuses may differ between clones)."""
    from ..trust import competing_identities, pinned_on_first_use

    if account is None:
        return ()
    notes = [n for n in ci_pin_notes(config) if n.startswith((f"{account} ", f"the CI account {account} "))]
    policy_speaks = account in pinned_keys(project) or account in config.members
    refs = project.repo.refs_under(ROOT)
    if (
        not policy_speaks
        and pinned_on_first_use(project.repo, account)
        and competing_identities(project.repo, account, refs)
    ):
        notes.append(
            f"key of {account} pinned on first use by this clone: another identity for {account} is here too, "
            "so readers who fetched elsewhere first may disagree (a members list or [ci] keys in the policy "
            "settles it)"
        )
    return tuple(notes)


def policy_notes(project: Project) -> tuple[str, ...]:
    """`ci_pin_notes` of the current policy, for `status` (reads the index)."""
    from .indexing import load

    contributions = load(project, ROOT_COLUMNS).contributions
    return ci_pin_notes(root_and_config(project, contributions)[1])
