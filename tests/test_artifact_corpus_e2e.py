"""A hostile-artifact corpus (issue 45): builds whose artifact (and working folder) is as deep, wide,
oddly named or oddly typed as a build can make it, played against every command that reruns code
(`run`, sandboxed and not, `push --check`, `verify`, `verify --pending`, `ci`), as root and as an
unprivileged user. Each ends in a verdict or a reason from the fixed list, never a traceback; nothing
is left on the machine that the next honest verification trips on, even once the stale sweep meets it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from agora_testing import Result
from git_agora.evaluate.cleanup import remove_tree
from git_agora.evaluate.record import Reason

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox is bubblewrap, on Linux")

OK = "ok"  # the evaluation scored: `run` ok, a check published, a claim of 7 confirmed
SPECIAL, DEEP, LARGE = Reason.ARTIFACT_SPECIAL.value, Reason.ARTIFACT_TOO_DEEP.value, Reason.ARTIFACT_TOO_LARGE.value

HEAD = "import os, socket, subprocess, sys\nout = sys.argv[2]\nopen(out + '/value.txt', 'w').write('7')\n"
NESTED = """
def nested(top, depth):
    fd = os.open(top, os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    return fd
"""
# name: (what the build does after writing value.txt, outcomes sandboxed, outcomes unsandboxed)
CORPUS = {
    "deep": (NESTED + "os.close(nested(out, 20000))\nos.close(nested('.', 20000))\n", {DEEP}, {DEEP}),
    "wide": (
        "os.mkdir(out + '/w')\nfor i in range(50000):\n"
        "    os.close(os.open(f'{out}/w/{i}', os.O_CREAT | os.O_WRONLY))\n",
        {OK, LARGE},
        {OK, LARGE},
    ),
    "names": (
        "os.close(os.open(out + '/' + 'n' * 255, os.O_CREAT | os.O_WRONLY))\n"
        "os.mkdir(os.fsencode(out) + b'/\\xff\\xfe' + b'm' * 250)\n"
        "open(os.fsencode(out) + b'/\\xff\\xfe' + b'm' * 250 + b'/\\x80', 'w').write('x')\n",
        {OK},
        {OK},
    ),
    "symlinks": (
        "for target, name in (('/', 'root'), ('../../..', 'up'), ('nowhere', 'dangling'), ('loop', 'loop')):\n"
        "    os.symlink(target, f'{out}/{name}')\n    os.symlink(target, name)\n",
        {SPECIAL},
        {SPECIAL},
    ),
    "hardlink": ("os.link(out + '/value.txt', out + '/hard')\n", {SPECIAL}, {SPECIAL}),
    "fifo": ("os.mkfifo(out + '/fifo')\nos.mkfifo('fifo')\n", {SPECIAL}, {SPECIAL}),
    "socket": (
        "for where in (out, os.getcwd()):\n    os.chdir(where)\n    socket.socket(socket.AF_UNIX).bind('sock')\n",
        {OK},
        {OK},
    ),
    "sparse": (
        "os.truncate(os.open(out + '/huge', os.O_CREAT | os.O_WRONLY), 1 << 40)\n",
        {LARGE},
        {LARGE, "build failed"},
    ),
    "modes": (
        "for top in (out, '.'):\n    os.makedirs(top + '/shut/in')\n    open(top + '/shut/in/f', 'w').close()\n"
        "    open(top + '/secret', 'w').close()\n    os.chmod(top + '/secret', 0)\n    os.chmod(top + '/shut', 0)\n",
        {OK, Reason.ARTIFACT_UNREADABLE.value},
        {OK, Reason.ARTIFACT_UNREADABLE.value},
    ),
    "immutable": (
        "for top in (out, '.'):\n    open(top + '/stuck', 'w').close()\n"
        "    subprocess.run(['chattr', '+i', top + '/stuck'], capture_output=True)\n",
        {OK},
        {OK},
    ),
}
SCORE = """import json, os, sys
print(json.dumps({"value": float(open(os.path.join(sys.argv[1], "value.txt")).read())}))
"""
HONEST = "import sys\nopen(sys.argv[2] + '/value.txt', 'w').write('7')\n"
TOML = """[metric]
name = "value"
direction = "min"
tolerance = 0.0

[eval]
format = 2
build = "python3 build.py --out {artifact}"
score = "python3 score.py {artifact}"
files = ["score.py"]
timeout = 60

[eval.limits]
disk = "64M"
artifact = "16M"
"""


class User:
    """Commands as one user (`uid` None: this process's), with a HOME, TMPDIR and caches of its own
    under `base`."""

    def __init__(self, base: Path, uid: int | None):
        self.base, self.uid = base, uid
        self.tmp = base / "tmp"
        for folder in ("home", "tmp", "cache"):
            (base / folder).mkdir()
        (base / "home" / ".gitconfig").write_text(
            '[init]\n\tdefaultBranch = main\n[protocol "file"]\n\tallow = always\n[user]\n\tname = t\n\temail = t@t\n'
        )
        if uid is not None:
            for path in (base, *base.rglob("*")):
                os.chown(path, uid, uid)

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "AGORA_", "XDG_", "TMP"))}
        if self.uid is not None:
            keep.pop("PYTHONPATH", None) if not _readable_by_all(keep.get("PYTHONPATH", "")) else None
        home = str(self.base / "home")
        mine = {"HOME": home, "TMPDIR": str(self.tmp), "XDG_CACHE_HOME": str(self.base / "cache")}
        mine |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": f"{home}/.gitconfig"}
        return {**keep, **mine, **(extra or {})}

    def run(self, cwd: Path, argv: list[str], extra: dict[str, str] | None = None, timeout: float = 300) -> Result:
        become = None
        if self.uid is not None:
            uid = self.uid

            def become() -> None:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)

        done = subprocess.run(
            argv, cwd=cwd, env=self.env(extra), capture_output=True, text=True, timeout=timeout, preexec_fn=become
        )
        return Result(done.returncode, done.stdout, done.stderr, " ".join(argv))

    def agora(self, cwd: Path, *args: str, extra: dict[str, str] | None = None) -> Result:
        done = self.run(cwd, ["git", "agora", *args], extra)
        assert "Traceback" not in done.stderr, done
        return done

    def git(self, cwd: Path, *args: str) -> str:
        done = self.run(cwd, ["git", *args])
        assert done.returncode == 0, done
        return done.stdout

    def clone(self, name: str, account: str) -> Path:
        path = self.base / name
        self.run(self.base, ["mkdir", str(path)])
        self.git(path, "init", "-q")
        self.git(path, "remote", "add", "origin", str(self.base / "remote.git"))
        self.git(path, "config", "agora.account", account)
        return path

    def leftovers(self) -> list[str]:
        return sorted(os.listdir(self.tmp))


def _readable_by_all(path_list: str) -> bool:
    return all(os.stat(p).st_mode & 0o005 == 0o005 for p in path_list.split(os.pathsep) if p and os.path.exists(p))


def outcome(result: Result) -> str:
    """What one command ended in: OK, or the reason from the fixed list (in its JSON, else in its one
    error line)."""
    if result.stdout.strip().startswith("{"):
        out = result.json()
        if "verdict" in out:
            return OK if out["verdict"] == "confirmed" else out["reason"]
        if out.get("ok", True):
            assert result.returncode == 0, result
            return OK
        assert result.returncode != 0, result
        return out["reason"]
    said = [line for line in result.stderr.splitlines() if "error:" in line]
    assert result.returncode != 0 and len(said) == 1, result
    return max((r.value for r in Reason if r.value in said[0]), key=len, default=said[0])


def immutable_works(folder: Path) -> bool:
    probe = folder / "probe"
    probe.touch()
    works = subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode == 0
    subprocess.run(["chattr", "-i", str(probe)], capture_output=True)
    probe.unlink()
    return works


def release(user: User) -> None:
    """What stays after the test: the immutable files made mutable again, then everything removed."""
    if user.tmp.exists():
        subprocess.run(["chattr", "-R", "-i", str(user.tmp)], capture_output=True)
    assert remove_tree(str(user.base)) == []


def scratch() -> Path:
    """A folder for one user's clones and temporary folders: in memory where the machine has a
    writable /dev/shm (tens of thousands of folders made and removed a dozen times take minutes on a
    busy disk), else the temporary folder."""
    shm = "/dev/shm"
    where = shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None
    return Path(tempfile.mkdtemp(prefix="agora-corpus-", dir=where))


@pytest.fixture(params=["as me", "as nobody"])
def user(request):
    if request.param == "as me":
        base = scratch()
        who = User(base, None)
    else:
        if os.geteuid() != 0:
            pytest.skip("needs root to become another user for the test")
        probe = subprocess.run(
            [sys.executable, "-c", "import git_agora"],
            capture_output=True,
            preexec_fn=lambda: (os.setgroups([]), os.setresgid(65534, 65534, 65534), os.setresuid(65534, 65534, 65534)),
        )
        if probe.returncode != 0:
            assert os.environ.get("CI") is None, f"nobody must be able to run this interpreter in CI: {probe.stderr!r}"
            pytest.skip(f"nobody cannot run this interpreter here ({sys.executable})")
        base = scratch()
        base.chmod(0o755)
        who = User(base, 65534)
    try:
        yield who
    finally:
        release(who)


@pytest.mark.slow
def test_every_hostile_artifact_ends_in_a_verdict_and_the_machine_stays_usable(user):
    corpus = dict(CORPUS)
    if not (immutable_works(user.tmp) and user.uid is None and os.geteuid() == 0):
        corpus.pop("immutable")  # only root sets it, and only unsandboxed: the case would be an honest build
    remote = user.base / "remote.git"
    user.git(user.base, "init", "-q", "--bare", str(remote))
    alice = user.clone("alice", "alice")
    (alice / "score.py").write_text(SCORE)
    (alice / "build.py").write_text(HONEST)
    (alice / "agora.toml").write_text(TOML)
    if user.uid is not None:
        for path in alice.rglob("*"):
            os.chown(path, user.uid, user.uid)
    keys = user.base / "keys"
    user.run(user.base, ["mkdir", str(keys)])
    user.run(keys, ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci@agora", "-f", str(keys / "ci")])
    assert user.agora(alice, "init", "--ci-account", "ci", "--ci-key", str(keys / "ci.pub")).returncode == 0
    seen: dict[str, dict[str, str]] = {}
    claims: dict[str, str] = {}
    for name, (build, sandboxed, unsandboxed) in corpus.items():
        (alice / "build.py").write_text(HEAD + build + f"# {name}\n")
        ran = {
            "run": outcome(user.agora(alice, "run", "--json")),
            "run --no-sandbox": outcome(user.agora(alice, "run", "--no-sandbox", "--json")),
        }
        left = user.leftovers()
        checked = user.agora(alice, "push", "--check", "-m", f"{name} checked", "--tag", "result", "--json")
        ran["push --check"] = outcome(checked)
        assert user.leftovers() == left, name
        (alice / "build.py").write_text(HEAD + build + f"# {name}, claimed\n")
        claimed = user.agora(alice, "push", "-m", name, "--tag", "result", "--metric", "value=7", "--json")
        claims[name] = claimed.json()["sha"]
        seen[name] = ran
        assert ran["run"] in sandboxed and ran["push --check"] in sandboxed, (name, ran)
        assert ran["run --no-sandbox"] in unsandboxed, (name, ran)
        if name != "immutable":
            assert left == [], (name, left)  # each run removed its temporary folder, whatever the build made
        else:
            assert len(left) == 1, left  # the unsandboxed run's: said once, left for the sweep
            stuck = [*left, "agora-eval-{gone}-immutable"]
    (alice / "build.py").write_text(HONEST + "# honest, claimed\n")
    honest = user.agora(alice, "push", "-m", "honest", "--tag", "result", "--metric", "value=7", "--json").json()
    bob = user.clone("bob", "bob")
    user.agora(bob, "fetch")
    for name, sha in claims.items():
        verified = user.agora(bob, "verify", sha, "--json")
        seen[name]["verify"] = outcome(verified)
        assert seen[name]["verify"] in corpus[name][1], (name, seen[name])

    carol = user.clone("carol", "carol")
    pending = user.agora(carol, "verify", "--pending", "--max-evaluations", "50", "--json")
    assert pending.returncode == 0, pending
    by_target = {c["target"]: c for c in pending.json()["checked"]}
    ci_clone = user.clone("ci", "ci")
    env = {"AGORA_CI_KEY": (keys / "ci").read_text(), "AGORA_ACCOUNT": "ci"}
    ci = user.agora(ci_clone, "ci", "--no-site", "--max-evaluations", "50", "--json", extra=env)
    assert ci.returncode == 0 and ci.json()["witness_records"], ci
    by_ci = {c["target"]: c for c in ci.json()["checked"]}
    for name, sha in claims.items():
        for report, where in ((by_target, "verify --pending"), (by_ci, "ci")):
            checked = report[sha]
            seen[name][where] = OK if checked["verdict"] == "confirmed" else checked["reason"]
            assert seen[name][where] in corpus[name][1], (name, where, seen[name])
    assert by_target[honest["sha"]]["verdict"] == "confirmed" and by_ci[honest["sha"]]["verdict"] == "confirmed"

    # what a killed evaluation would have left, made by the builds themselves, two days old: the sweep
    # removes it (and says once what it cannot), and the next honest verification confirms
    gone = next(pid for pid in range(4_000_000, 4_100_000) if not Path(f"/proc/{pid}").exists())
    for name, (build, _, _) in corpus.items():
        stale = user.tmp / f"agora-eval-{gone}-{name}"
        for folder in (stale, stale / "built", stale / "tree"):
            user.run(user.base, ["mkdir", str(folder)])
        (user.base / "plant.py").write_text(HEAD + build)
        user.run(stale / "tree", [sys.executable, str(user.base / "plant.py"), "--out", str(stale / "built")])
    for stale in user.tmp.iterdir():
        old = time.time() - 2 * 86400
        os.utime(stale, (old, old))
    (alice / "build.py").write_text(HONEST + "# after the sweep\n")
    last = user.agora(alice, "push", "-m", "honest again", "--tag", "result", "--metric", "value=7", "--json")
    user.agora(bob, "fetch")
    confirmed = user.agora(bob, "verify", last.json()["sha"], "--json")
    assert outcome(confirmed) == OK, confirmed
    if "immutable" in corpus:
        assert [line for line in confirmed.stderr.splitlines() if "cannot be removed" in line], confirmed
        assert user.leftovers() == sorted(name.replace("{gone}", str(gone)) for name in stuck), user.leftovers()
    else:
        assert user.leftovers() == [], user.leftovers()
