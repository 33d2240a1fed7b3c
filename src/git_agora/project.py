"""One clone's view of an Agora project: who is publishing, to which remote, and from which setup."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress
from functools import cached_property
from typing import TYPE_CHECKING

from .contribution import Contribution, ContributionError, NewerFormat
from .errors import AgoraError
from .feedback import Feedback
from .refs.names import ROOT, RefNameError, check_account, check_remote
from .refs.store import NotARepository, Repository

if TYPE_CHECKING:
    from .config import ProjectConfig
    from .identity.keys import SigningKey
    from .policy import Policy

SETUP_CONFIG_KEY = "agora.setup"
MEMBERS_MEMO = "policy-members"  # under .git/agora: "<policy sha> <its members as JSON>"


class CompetingSetups(AgoraError):
    """More than one setup and none pinned: the clone must be told which project it joins."""


class Project:
    """The entry point of the library: `open_project(path)` then pass it to any workflow in `git_agora.ops`."""

    def __init__(
        self,
        repo: Repository,
        account_option: str | None = None,
        remote_option: str | None = None,
        feedback: Feedback | None = None,
    ) -> None:
        self.repo = repo
        self.account_option = account_option
        self.remote_option = remote_option
        self.feedback = feedback or Feedback()
        self._setup: str | None = None  # `setup`, once known (or assumed: `assume_setup`)
        self._signing_key: SigningKey | None = None  # `signing_key`, once read or given (`use_signing_key`)

    def __repr__(self) -> str:
        return f"Project({self.repo.worktree_path!r}, account_option={self.account_option!r})"

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] = ".",
        account: str | None = None,
        remote: str | None = None,
        feedback: Feedback | None = None,
    ) -> Project:
        """The project `path` is in."""
        try:
            return cls(Repository.discover(path), account, remote, feedback)
        except NotARepository as exc:
            raise AgoraError(str(exc)) from None

    # --- who and where ---------------------------------------------------------------------

    @cached_property
    def account(self) -> str:
        name = self.account_option if self.account_option is not None else self.configured_account
        if name is None or (not name and self.account_option is None):
            raise AgoraError(
                "no account: pass --account NAME, set AGORA_ACCOUNT, or run `git config agora.account NAME`"
            )
        try:
            return check_account(name)
        except RefNameError as exc:
            raise AgoraError(str(exc)) from None

    @property
    def configured_account(self) -> str | None:
        """The account from the environment or git config (not from an option)."""
        return os.environ.get("AGORA_ACCOUNT") or self.repo.git.config_get("agora.account")

    @cached_property
    def remote(self) -> str | None:
        """The remote to publish to: --remote, `git config agora.remote`, else origin if it exists."""
        name = self.remote_option or self.repo.git.config_get("agora.remote")
        if name is None and self.repo.git.config_get("remote.origin.url"):
            name = "origin"
        if name is not None:
            if not self.repo.git.config_get(f"remote.{name}.url"):
                raise AgoraError(f"no remote named {name!r}: add it with `git remote add {name} URL`")
            check_remote(name)
        return name

    # --- the setup contribution and its config -----------------------------------------------

    def _no_project(self) -> str:
        """The one command to run where no setup is known: fetch it (a plain `git clone` leaves
        refs/agora/* behind), found a project, or join one."""
        name = self.remote_option or self.repo.git.config_get("agora.remote") or "origin"
        url = self.repo.git.config_get(f"remote.{name}.url")
        if url:
            return (
                f"no Agora project here yet: run `git agora fetch` to fetch it from {name} ({url}); a plain "
                "`git clone` does not fetch refs/agora/* (or `git agora init` to found a new one here)"
            )
        return "no Agora project here: `git agora clone URL` joins one, `git agora init` founds one"

    @property
    def setup(self) -> str:
        """The setup contribution's sha: pinned in git config, else the setup at the root of the fetched
        logs, pinned once it is known to be the only root setup (`pin_setup`)."""
        if self._setup is None:
            pinned = self.pinned_setup
            found = pinned or self.find_setup()
            if found is None:
                raise AgoraError(self._no_project())
            if not pinned:
                self.pin_setup(self.setups())  # the whole graph: only where no index has named the root setups yet
            self._setup = found
        return self._setup

    @property
    def pinned_setup(self) -> str | None:
        pinned = self.repo.git.config_get(SETUP_CONFIG_KEY)
        return pinned if pinned and self.repo.contribution(pinned) is not None else None

    def assume_setup(self) -> bool:
        """For a command about to index every new commit: take `find_setup` as the setup without the walk
        of the whole graph that ruling out a second root setup needs; the index names every root setup
        and `pin_setup` then refuses competing ones. False when there is no setup."""
        if self._setup is None:
            self._setup = self.pinned_setup or self.find_setup()
        return self._setup is not None

    def pin_setup(self, root_setups: Sequence[str]) -> None:
        """Pin the setup in git config, given every root setup (a root commit tagged setup) reachable
        from the refs; several, and none pinned, is refused: a clone is told which project it joins."""
        if self.pinned_setup:
            return
        if len(set(root_setups)) > 1:  # never chosen by a timestamp, which anyone can backdate
            described = ", ".join(self._describe(s) for s in sorted(set(root_setups), key=self._age))
            raise CompetingSetups(
                f"competing setups here: {described}; pin the one you were "
                "told with `git config agora.setup SHA` (or `git agora clone URL --setup SHA`)"
            )
        if root_setups:
            self.repo.git.config_set(SETUP_CONFIG_KEY, root_setups[0], check=False)  # another reader may hold the lock

    def _age(self, sha: str) -> tuple[int, str]:
        c = self.repo.contribution(sha)
        return (c.timestamp or 0, sha) if c else (0, sha)

    def _describe(self, sha: str) -> str:
        c = self.repo.contribution(sha)
        return f"{sha[:12]} by {c.account if c else '?'}"

    def find_setup(self) -> str | None:
        """A setup at the root of an account log's first-parent chain (that log's commits, then the bases
        of its first entry: hundreds of commits at a million contributions, never the whole graph), the
        logs taken in ref order. Whether it is the only root setup is `setups`' or the index's question."""
        for _, tip in sorted(self.repo.git.for_each_ref(ROOT).items()):
            roots = self.repo.git.run("rev-list", "--first-parent", "--max-parents=0", tip, check=False).split()
            found = self.repo.contribution(roots[0]) if roots else None
            if found is not None and found.is_setup and not found.parents:
                return roots[0]
        return next(iter(self.setups()), None)  # a setup reachable only through second parents

    def setups(self) -> list[str]:
        """Every setup (a root commit tagged setup) reachable from the refs, earliest first: a walk of the
        whole graph (73 s at a million contributions), for a clone no index has told yet."""
        tips = list(self.repo.git.for_each_ref(ROOT).values())
        if not tips:
            return []
        # --date-order: the default walk order is pathological on the log merges (9 s against 0.4 s at 100k)
        roots = self.repo.git.run("rev-list", "--date-order", "--max-parents=0", *tips).split()
        found = [c for c in map(self.repo.contribution, roots) if c is not None and c.is_setup]
        return [c.sha or "" for c in sorted(found, key=lambda c: (c.timestamp or 0, c.sha or ""))]

    @cached_property
    def config(self) -> ProjectConfig:
        """agora.toml of the setup: the one place a project's config is read. A broken file is an error
        for every command (never silently replaced by defaults)."""
        from .config import CONFIG_FILE, ConfigError, ProjectConfig

        setup = self.repo.commit_info(self.setup)
        assert setup is not None
        out = self.repo.file_text(setup.tree, CONFIG_FILE)
        try:
            return ProjectConfig.parse(out) if out else ProjectConfig()
        except ConfigError as exc:
            raise AgoraError(f"the setup {self.setup[:12]}: {exc}") from None

    @property
    def signing_key(self) -> SigningKey:
        """The account's SSH key (`identity.keys.signing_key`): configured, or made on first use."""
        from .identity.keys import signing_key

        if self._signing_key is None:
            self._signing_key = signing_key(self.repo, self.account, self.feedback.notice)
        return self._signing_key

    def use_signing_key(self, key: SigningKey) -> None:
        """Sign as `key` from now on (a CI secret held in memory: `identity.keys.held_key`) instead of the
        configured or default key file."""
        if self.repo.signer is not None:
            raise AgoraError("the signing key cannot change once this project has signed")
        self._signing_key = key

    def enable_signing(self) -> None:
        """Sign every commit written from now on, and make sure the account's identity ref exists."""
        from .identity.chain import ensure_identity

        if self.repo.signer is None:
            self.repo.signer = self.signing_key.sign
            ensure_identity(self.repo, self.account, self.signing_key)

    @property
    def signatures_required(self) -> bool:
        return self.config.sections.get("identity", {}).get("signatures") == "required"

    def policy(self, sha: str) -> Policy:
        """The policy in force for contribution `sha` (`policy.Policy`): the setup's agora.toml and
        evaluator files, or those of the nearest amendment on its first-parent line."""
        from .config import ConfigError
        from .policy import load_policy, policy_sha_for

        try:
            return load_policy(self.repo, policy_sha_for(self.repo, sha, self.setup))
        except ConfigError as exc:
            raise AgoraError(f"the policy of {sha[:12]}: {exc}") from None

    def policy_config(self, sha: str) -> ProjectConfig:
        """The agora.toml of the policy in force for `sha` (`policy`'s config, without its evaluator files)."""
        from .config import ConfigError
        from .policy import load_policy_config, policy_sha_for

        try:
            policy_sha = policy_sha_for(self.repo, sha, self.setup)
            return self.config if policy_sha == self.setup else load_policy_config(self.repo, policy_sha)
        except ConfigError as exc:
            raise AgoraError(f"the policy of {sha[:12]}: {exc}") from None

    def policy_members(self, sha: str) -> dict[str, str]:
        """`[identity] members` of the policy in force for `sha` (account -> public key line; empty: an
        open project). Remembered by the policy's sha (`memo`), so a post reads no agora.toml."""
        import json

        from .amendments import policy_sha_for
        from .memo import recall, remember

        policy_sha = policy_sha_for(self.repo, sha, self.setup)
        known = recall(self.repo.agora_path, MEMBERS_MEMO, policy_sha)
        if known is not None:
            return json.loads(known)
        members = self.policy_config(sha).sections.get("identity", {}).get("members") or {}
        remember(self.repo.agora_path, MEMBERS_MEMO, policy_sha, json.dumps(members))
        return members

    # --- the contribution the next push builds on (per work tree) ----------------------------

    @property
    def _base_file(self) -> str:
        return os.path.join(self.repo.worktree_state_path, "base")

    @property
    def base(self) -> str:
        sha = self.recorded_base()
        return sha if sha is not None and self.repo.contribution(sha) is not None else self.setup

    def set_base(self, sha: str) -> None:
        os.makedirs(self.repo.worktree_state_path, exist_ok=True)
        tmp = f"{self._base_file}.{os.getpid()}"
        with open(tmp, "w") as out:
            out.write(sha + "\n")
        os.replace(tmp, self._base_file)

    def recorded_base(self) -> str | None:
        """The base as recorded in this work tree (None: none recorded yet), for `restore_base`."""
        try:
            with open(self._base_file) as recorded:
                return recorded.read().strip() or None
        except FileNotFoundError:
            return None

    def restore_base(self, recorded: str | None) -> None:
        """Put back what `recorded_base` returned (a rolled-back checkout)."""
        if recorded is None:
            with suppress(FileNotFoundError):
                os.unlink(self._base_file)
        else:
            self.set_base(recorded)

    # --- reading contributions -------------------------------------------------------------

    def contribution_sha(self, rev: str) -> str:
        """The full sha of the contribution `rev` names; a clear error when it names none."""
        sha = self.contribution(rev).sha
        assert sha is not None
        return sha

    def contribution(self, rev: str) -> Contribution:
        """The contribution a sha (or unique prefix) names; a clear error otherwise."""
        sha = self.repo.resolve(rev)
        if sha is None:
            raise AgoraError(f"unknown commit {rev!r}")
        info = self.repo.commit_info(sha)
        if info is None:
            raise AgoraError(f"{rev} is a commit that cannot be read (malformed): see `git agora log --rejected`")
        try:
            return Contribution.from_message(
                info.message, sha=sha, parents=info.parents, timestamp=info.timestamp, tree=info.tree
            )
        except NewerFormat as exc:
            raise AgoraError(f"{rev} is {exc}") from None
        except ContributionError:
            raise AgoraError(f"{rev} is not an Agora contribution") from None
