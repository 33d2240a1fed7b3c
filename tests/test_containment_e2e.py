"""Containment: evaluating someone else's work never touches your keys, your machine or the record.

Each test plays a hostile contribution against the real `git agora` command, as CI runs it (as root,
where bubblewrap, cgroups and setpriv are at hand), and checks the artifact: what the build could see,
what is left on the host, what the remote holds afterwards. A control run with --no-sandbox shows that
each probe does find what the sandbox hides.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from agora_testing import agora, demo_task_clone, forge, git, make_clone, publish_forged_log
from git_agora.config import Limits

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox is bubblewrap, on Linux")

TOKEN = "ghp_" + "A1b2C3d4" * 5  # the shape of a GitHub token, planted in the verifier's environment

# A one-command project whose "metric" is what the contribution's code could reach: each number is
# printed locally by `git agora run --json` (a run's whole output stays local), never published.
PROBE = r"""import glob, json, os, socket, subprocess, sys, sysconfig
paths = json.load(open("probe_paths.json"))
seen = {"score": 1.0}

def readable(path):
    try:
        with open(path, "rb") as handle:
            return bool(handle.read(1) or True)
    except OSError:
        return False

seen["keys_read"] = sum(readable(p) for p in paths["secrets"])
environ = "".join(f"{k}={v}" for k, v in os.environ.items())
for proc in glob.glob("/proc/[0-9]*/environ"):
    try:
        environ += open(proc, "rb").read().decode("utf-8", "replace")
    except OSError:
        pass
seen["token_seen"] = int(paths["token"] in environ)
seen["uid"] = os.getuid()
seen["caps"] = int(open("/proc/self/status").read().split("CapEff:")[1].split()[0], 16)
for name in (".bashrc", ".gitconfig"):
    try:
        open(os.path.expanduser("~/" + name), "a").write("echo pwned\n")
    except OSError:
        pass
site = sysconfig.get_paths()["purelib"]
try:
    open(os.path.join(site, "agora_pwned.pth"), "w").write("import os\n")
    seen["wrote_site"] = 1
except OSError:
    seen["wrote_site"] = 0
for target in paths["host_writes"]:
    try:
        open(target, "w").write("pwned")
    except OSError:
        pass
s = socket.socket()
s.settimeout(2)
seen["reached_port"] = int(s.connect_ex(("127.0.0.1", paths["port"])) == 0)
escape = [["mount", "-o", "remount,rw", "/"], ["nsenter", "-t", "1", "-m", "true"], ["unshare", "-m", "true"]]
tried = [c for c in escape if os.path.exists("/usr/bin/" + c[0])]
seen["escaped"] = sum(subprocess.run(c, capture_output=True).returncode == 0 for c in tried)
seen["host_folders"] = sum(os.path.exists(p) for p in paths["host_folders"])
found = 0
for root, dirs, files in os.walk("/"):  # stops at the first .git: whether any is visible, not how many
    if root.startswith(("/proc", "/sys", "/dev", "/usr")):
        dirs[:] = []
        continue
    if ".git" in dirs:
        found = 1
        break
seen["git_folders"] = found
print(json.dumps(seen))
"""


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def plant(path: Path, text: str = "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n") -> Path:
    """A root-owned 0600 file, as a key is kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.fixture
def probe(tmp_path, remote, listener, monkeypatch):
    """A project whose evaluation is PROBE, with keys planted at every kind of key location."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    home = Path(os.environ["HOME"])
    custom = plant(tmp_path / "elsewhere" / "custom_ed25519")
    secrets = [
        plant(home / ".config" / "git-agora" / "keys" / "founder_ed25519"),  # the default keys
        custom,  # a custom agora.signingkey
        plant(tmp_path / "launch" / "agent-01" / "key" / "agent-01_ed25519"),  # a launcher's agent key
        plant(tmp_path / "ci" / "ci_ed25519"),  # a CI key file
        plant(home / ".ssh" / "id_ed25519"),
        a / ".git" / "config",  # the clone's own config (fsmonitor, hooks)
    ]
    secrets += [Path(p) for p in ("/etc/ssh/ssh_host_ed25519_key", "/root/.bash_history") if Path(p).exists()]
    git(a, "config", "agora.signingkey", str(custom))
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(custom), "-C", "alice"],
        input="y\n",
        text=True,
        capture_output=True,
        check=True,
    )
    custom.chmod(0o600)
    host_writes = [tmp_path / "host-marker", home / "pwned"]
    paths = {
        "secrets": [str(p) for p in secrets],
        "token": TOKEN,
        "port": listener,
        "host_writes": [str(p) for p in host_writes],
        "host_folders": [str(home), "/home", str(tmp_path), str(a)],
    }
    (a / "probe_paths.json").write_text(json.dumps(paths))
    (a / "probe.py").write_text(PROBE)
    agora(a, "init", "--metric", "score", "--eval", "python3 probe.py")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    return a, secrets, host_writes


def test_a_build_sees_no_key_token_home_network_or_host(probe):
    a, secrets, host_writes = probe
    home = Path(os.environ["HOME"])
    gitconfig_before = (home / ".gitconfig").read_text()
    seen = agora(a, "run", "--json").json()
    assert seen["ok"] and seen["sandbox"] is True, seen
    m = seen["metrics"]
    assert m["keys_read"] == 0 and m["token_seen"] == 0, m
    assert m["uid"] == 65534 and m["caps"] == 0, m  # an unprivileged user with no capability, even as root
    assert m["wrote_site"] == 0 and m["reached_port"] == 0 and m["escaped"] == 0, m
    assert m["host_folders"] == 0 and m["git_folders"] == 0, m
    assert not (home / ".bashrc").exists() and (home / ".gitconfig").read_text() == gitconfig_before
    assert not any(p.exists() for p in host_writes)
    site = Path(
        subprocess.run(
            [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    assert not (site / "agora_pwned.pth").exists()


def test_the_same_probe_unsandboxed_finds_what_the_sandbox_hides(probe):
    """The control: the probe is not blind; run as you, it reads your keys and sees your token."""
    a, secrets, host_writes = probe
    r = agora(a, "run", "--json", "--no-sandbox")
    assert "the sandbox is off (--no-sandbox)" in r.stderr
    m = r.json()["metrics"]
    assert m["keys_read"] >= 5 and m["token_seen"] == 1 and m["reached_port"] == 1, m
    assert m["git_folders"] == 1 and m["host_folders"] == 4, m  # the host's clones and folders are in view
    assert r.json()["sandbox"] is False
    for leftover in host_writes + [Path(os.environ["HOME"]) / ".bashrc"]:
        leftover.unlink(missing_ok=True)
    site = Path(
        subprocess.run(
            [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "agora_pwned.pth").unlink(missing_ok=True)


def test_network_is_the_setups_choice(tmp_path, remote, listener):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "net.py").write_text(
        "import json, socket, sys\ns = socket.socket()\ns.settimeout(2)\n"
        f"print(json.dumps({{'reached': int(s.connect_ex(('127.0.0.1', {listener})) == 0)}}))\n"
    )
    (a / "agora.toml").write_text(
        '[metric]\nname = "reached"\ndirection = "max"\n[eval]\nformat = 2\ncommand = "python3 net.py"\n'
        'files = ["net.py"]\nnetwork = true\n'
    )
    agora(a, "init")
    assert agora(a, "run", "--json").json()["metrics"]["reached"] == 1
    shown = agora(a, "show", agora(a, "whoami", "--json").json()["setup"]).stdout
    assert "evaluations run in the sandbox: network allowed ([eval] network = true)" in shown


# --- two phases: builds that try to get around the scorer ---------------------------------------------

SCORE = """import json, os, sys
path = os.path.join(sys.argv[1], "value.txt")
value = float(open(path).read())
if not 0 <= value <= 100:
    raise SystemExit("value out of range")
note = os.path.join(sys.argv[1], "note.txt")
print(json.dumps({"value": value, "note": open(note).read() if os.path.exists(note) else "plain"}))
"""
HONEST = "import sys\nopen(sys.argv[2] + '/value.txt', 'w').write('7')\n"
TWO_PHASE = """[metric]
name = "value"
direction = "min"
tolerance = 0.0

[eval]
format = 2
build = "python3 build.py --out {artifact}"
score = "python3 score.py {artifact}"
files = ["score.py"]
output = ["note"]
timeout = 20

[eval.limits]
disk = "16M"
artifact = "4M"
processes = 64
memory = "512M"
"""


@pytest.fixture
def two_phase(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "score.py").write_text(SCORE)
    (a / "build.py").write_text(HONEST)
    (a / "agora.toml").write_text(TWO_PHASE)
    agora(a, "init")
    honest = agora(a, "push", "--check", "--rerun", "-m", "honest", "--tag", "result", "--json").json()["sha"]
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    return a, b, honest


def claim(clone: Path, build: str, value: float = 1.0) -> str:
    (clone / "build.py").write_text(build)
    return agora(clone, "push", "-m", "a claim", "--tag", "result", "--metric", f"value={value}", "--json").json()[
        "sha"
    ]


HOSTILE = {
    "pre-creates the folders": (
        "import os, sys\nfor d in ('../scorer', '../artifact', '/agora/scorer', '../tree', '/tmp/x'):\n"
        "    os.makedirs(d, exist_ok=True) if not d.startswith('/agora') else None\n"
        "open(sys.argv[2] + '/value.txt', 'w').write('1')\nos.makedirs('../scorer/score.py', exist_ok=True)\n",
        {"score failed", "build failed", "confirmed"},
    ),
    "prints megabytes": (
        "import sys\nfor _ in range(300):\n    sys.stdout.write('x' * 100000)\n"
        "    sys.stderr.write('y' * 100000 + '\\n')\n"
        "open(sys.argv[2] + '/value.txt', 'w').write('1')\n",
        {"confirmed"},
    ),
    "sleeps forever": ("import time\ntime.sleep(3600)\n", {"timed out"}),
    "kills every process it can": (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)\n",
        {"build failed"},
    ),
    "leaves its process group": (
        "import os, subprocess, sys\nos.setsid()\nsubprocess.Popen(['sleep', '600.25'], start_new_session=True)\n"
        "open(sys.argv[2] + '/value.txt', 'w').write('1')\n",
        {"confirmed"},
    ),
    "fills its disk": (
        "import sys\nwith open('/tmp/fill', 'wb') as f:\n    while True:\n        f.write(b'0' * (1 << 20))\n",
        {"over the disk limit"},
    ),
    "links its artifact to the scorer": (
        "import os, sys\nos.symlink('/etc/passwd', sys.argv[2] + '/value.txt')\n",
        {"the artifact holds a link, a special file or a name outside it"},
    ),
    "makes a fifo": (
        "import os, sys\nos.mkfifo(sys.argv[2] + '/value.txt')\n",
        {"the artifact holds a link, a special file or a name outside it"},
    ),
    "writes a huge artifact": (
        "import sys\nopen(sys.argv[2] + '/value.txt', 'w').write('1')\n"
        "open(sys.argv[2] + '/big', 'wb').write(b'0' * (6 << 20))\n",
        {"the artifact is over its size limit", "over the disk limit"},
    ),
    "echoes free text into a declared field": (
        "import sys\nopen(sys.argv[2] + '/value.txt', 'w').write('1')\n"
        "open(sys.argv[2] + '/note.txt', 'w').write('the key is BEGIN PRIVATE stuff')\n",
        {"an output field is neither a number nor a plain word"},
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_every_hostile_build_ends_in_a_verdict(two_phase, name):
    a, b, _ = two_phase
    build, reasons = HOSTILE[name]
    sha = claim(a, build, 1.0)
    agora(b, "fetch")
    started = time.monotonic()
    limit = "3" if name == "sleeps forever" else "20"  # the others finish long before theirs
    r = agora(b, "verify", sha, "--json", "--timeout", limit, timeout=120)
    out = r.json()
    assert "Traceback" not in r.stderr
    assert (out["reason"] if out["verdict"] == "failed" else out["verdict"]) in reasons, out
    assert time.monotonic() - started < 60
    orphan = ["sleep", "600.25"]  # no other test sleeps 600.25 s (test_launch_e2e's agents sleep 600)
    assert not [p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[:2] == orphan]
    published = git(b, "cat-file", "commit", out["sha"])
    assert "yyyy" not in published and "BEGIN PRIVATE" not in published  # free text never published


def test_a_process_that_outlives_the_build_cannot_touch_the_score(two_phase, tmp_path):
    """A daemon the build starts with setsid waits for the score, then rewrites what it can find."""
    a, b, _ = two_phase
    marker = f"agora-survivor-{uuid.uuid4().hex}"
    survivor = (
        "import os, subprocess, sys\nopen(sys.argv[2] + '/value.txt', 'w').write('50')\n"
        f"subprocess.Popen(['bash', '-c', 'exec -a {marker} bash -c \"sleep 2; for f in /agora/*/value.txt "
        f"/agora/scorer/score.py ../*/score.py; do echo 1 > $f; done; touch {tmp_path}/{marker}\"'], "
        "start_new_session=True)\n"
    )
    sha = claim(a, survivor, 1.0)  # a false claim: the build writes 50
    agora(b, "fetch")
    out = agora(b, "verify", sha, "--json").json()
    assert out["verdict"] == "failed" and out["reproduced"]["value"] == 50.0, out
    time.sleep(3)
    assert not (tmp_path / marker).exists()
    assert not [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]


def test_fork_bomb_and_memory_hog_hit_their_caps(two_phase):
    a, b, honest = two_phase
    limits = agora(b, "verify", honest, "--no-publish", "--json").json()["limits"]
    if limits["processes"]["by"] != "cgroup" or limits["memory"]["by"] != "cgroup":
        assert os.environ.get("CI") is None or os.geteuid() != 0, "as root in CI the cgroup caps must apply"
        pytest.skip(f"no cgroup caps here ({limits}): rlimits only")
    bomb = "import os\nwhile True:\n    os.fork()\n"  # every process forks until the cap refuses one
    hog = "chunks = []\nwhile True:\n    chunks.append(bytearray(1 << 24))\n"
    for build, reason in ((bomb, "over the process limit"), (hog, "over the memory limit")):
        sha = claim(a, build)
        agora(b, "fetch")
        out = agora(b, "verify", sha, "--json", "--timeout", "8", timeout=120).json()
        assert out["verdict"] == "failed" and out["reason"] == reason, out
    assert psutil.virtual_memory().available > 1 << 30  # the machine is left as it was


def test_a_verdict_carries_numbers_and_fixed_words_only(two_phase):
    """The build prints a marker; the scorer's output holds fields the setup does not declare: none of
    it reaches the remote, which is scanned object by object."""
    a, b, _ = two_phase
    marker = f"MARK{uuid.uuid4().hex}"  # printed by the build, written nowhere in its code
    printed = f"print('{marker[::-1]}'[::-1], file=sys.stderr)"
    sha = claim(a, f"import sys\n{printed}\nopen(sys.argv[2] + '/value.txt', 'w').write('3')\n")
    agora(b, "fetch")
    out = agora(b, "verify", sha, "--json").json()
    assert out["verdict"] == "failed" and out["reason"] == "contradicts the claim" and out["sandbox"] is True, out
    assert out["output"] == {"note": "plain"} and out["exit_status"] == 0
    assert marker in (Path(out["run_folder"]) / "build.err").read_text()  # kept for the verifier
    remote = Path(git(b, "remote", "get-url", "origin").strip())
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=remote, capture_output=True
    ).stdout
    assert marker.encode() not in objects and TOKEN.encode() not in objects


# --- hostile trees ----------------------------------------------------------------------------------


def test_attributes_in_the_checked_out_tree_change_no_evaluator(tmp_path, remote):
    """A result whose tree adds `.gitattributes` asking for UTF-16 on the evaluator files (published with
    plain git); a verifier who checked it out still exports the evaluator as stored, and confirms."""
    a = demo_task_clone(tmp_path, remote)
    baseline = agora(a, "push", "--check", "--rerun", "-m", "baseline", "--tag", "result", "--json").json()["sha"]
    m = make_clone(tmp_path, "m", str(remote), "mallory")
    agora(m, "fetch")
    attributes = "score.py working-tree-encoding=UTF-16LE\ncorpus.py working-tree-encoding=UTF-16LE\n"
    blob = run_git(m, "hash-object", "-w", "--stdin", input=attributes)
    listing = git(m, "ls-tree", f"{baseline}^{{tree}}") + f"100644 blob {blob}\t.gitattributes\n"
    message = "attributes\n\nAgora-Format: 1\nAgora-Account: mallory\nAgora-Tag: result\nAgora-Metric: bpc=3.05\n"
    hostile = forge(m, message, [baseline], tree=run_git(m, "mktree", input=listing))
    publish_forged_log(m, "mallory", [hostile])
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    agora(c, "checkout", hostile)
    assert (c / ".gitattributes").exists()
    assert agora(c, "verify", baseline, "--json").json()["verdict"] == "confirmed"


def run_git(cwd: Path, *args: str, input: str = "") -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, input=input, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_tree_with_a_dotgit_path_is_invalid_for_readers_and_refused_by_writers(tmp_path, remote, monkeypatch):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "e.py").write_text("print('{\"bpc\": 1}')\n")
    agora(a, "init", "--metric", "bpc", "--direction", "min", "--eval", "python3 e.py")
    setup = agora(a, "whoami", "--json").json()["setup"]
    blob = run_git(a, "hash-object", "-w", "--stdin", input="[core]\n\tfsmonitor = touch /tmp/p\n")
    inner = run_git(a, "mktree", input=f"100644 blob {blob}\tconfig\n")
    hooks = run_git(a, "mktree", input=f"100755 blob {blob}\tpost-checkout\n")
    dotgit = run_git(a, "mktree", input=f"100644 blob {blob}\tconfig\n040000 tree {hooks}\thooks\n")
    top = run_git(a, "mktree", input=f"040000 tree {dotgit}\t.Git\n040000 tree {inner}\tsub\n")
    message = "hostile\n\nAgora-Format: 1\nAgora-Account: mallory\nAgora-Tag: result\nAgora-Metric: bpc=1\n"
    hostile = forge(a, message, [setup], tree=top)
    # what NTFS and HFS+ read as `.git` (git refuses to check either out; `git fsck` warns of both)
    also = {
        name: run_git(a, "mktree", input=f"{entry}\t{name}\n")
        for name, entry in (
            (".git::$INDEX_ALLOCATION", f"040000 tree {dotgit}"),
            (".g\u200cit", f"040000 tree {dotgit}"),
            ("GITMOD~1", f"120000 blob {blob}"),  # NTFS's name of .gitmodules, as a link: git refuses it too
            ("..", f"100644 blob {blob}"),
        )
    }
    forged = {name: forge(a, message.replace("hostile", name), [setup], tree=tree) for name, tree in also.items()}
    publish_forged_log(a, "mallory", [hostile, *forged.values()])
    c = make_clone(tmp_path, "c", str(remote), "carol")
    agora(c, "fetch")
    rejected = {row["sha"]: row for row in agora(c, "log", "--rejected", "--json").json()}
    reasons = " ".join(rejected[hostile]["reasons"])
    assert "the tree holds '.Git'" in reasons and "refuses to check out" in reasons, reasons
    for name, sha in forged.items():
        assert f"the tree holds {name!r}" in " ".join(rejected[sha]["reasons"]), rejected.get(sha)
    assert agora(c, "index", "--check").returncode == 0
    assert "the tree holds '.Git'" in " ".join(in_bulk_rejections(c, tmp_path, monkeypatch)[hostile])  # read aside
    for sha in (hostile, forged["GITMOD~1"]):  # and it can still be failed
        out = agora(c, "verify", sha, "--no-publish", "--json").json()
        assert out["verdict"] == "failed" and out["reason"] == "the tree cannot be exported", out

    import git_agora as agora_lib
    from git_agora.ops.publish import publish

    project = agora_lib.open_project(c, account="carol")
    draft = agora_lib.Contribution(account="carol", tags=("result",), description="x", parents=(setup,))
    for tree in (top, *also.values()):
        with pytest.raises(agora_lib.AgoraError, match="refuses to check out"):
            publish(project, draft, tree)
    assert git(c, "for-each-ref", "refs/agora/log/carol").strip() == ""


def in_bulk_rejections(clone: Path, tmp_path: Path, monkeypatch) -> dict[str, list[str]]:
    """sha -> reasons of the invalid rows of a rebuild through worker processes (as at a million
    contributions), whose `.git` check runs in a process of its own (`parallel.Aside`)."""
    from git_agora.index import parallel, store
    from git_agora.ops.indexing import _rules
    from git_agora.project import Project

    monkeypatch.setattr(parallel, "THRESHOLD", 0)
    p = Project.open(clone)
    store.update_index(p.repo, _rules(p), rebuild=True, directory=tmp_path / "in-bulk")
    rows = store._read(tmp_path / "in-bulk", None)[1].select(["sha", "valid", "reasons"]).to_pylist()
    return {row["sha"]: row["reasons"] for row in rows if not row["valid"]}


# --- the interpreter where it lives, the setup's keys -------------------------------------------------


def test_a_virtualenv_under_a_temporary_folder_is_the_one_the_sandbox_runs(tmp_path, remote):
    venv = tmp_path / "tmp-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    here = [p for p in sys.path if p.endswith("site-packages") and "tmp-venv" not in p]
    (site / "ours.pth").write_text("\n".join(here + [str(Path(__file__).resolve().parents[1] / "src")]) + "\n")
    (site / "only_in_this_venv.py").write_text("VALUE = 42\n")
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "e.py").write_text("import json, only_in_this_venv\nprint(json.dumps({'v': only_in_this_venv.VALUE}))\n")
    agora(a, "init", "--metric", "v", "--eval", "python3 e.py")
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from git_agora.cli import main; main()", "run", "--json"],
        cwd=a,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["metrics"]["v"] == 42 and json.loads(out.stdout)["sandbox"] is True


def test_a_demo_model_with_impossible_counts_fails_the_score(tmp_path, remote):
    a = demo_task_clone(tmp_path, remote)
    (a / "train.py").write_text(
        (a / "train.py")
        .read_text()
        .replace(
            "    os.makedirs(out, exist_ok=True)",
            "    model['counts'][0][''] = {ch: -5 for ch in model['counts'][0]['']}\n"
            "    os.makedirs(out, exist_ok=True)",
        )
    )
    sha = agora(a, "push", "-m", "negative counts", "--tag", "result", "--metric", "bpc=-3.29", "--json").json()["sha"]
    b = make_clone(tmp_path, "b", str(remote), "bob")
    agora(b, "fetch")
    out = agora(b, "verify", sha, "--json").json()
    assert out["verdict"] == "failed" and out["reason"] == "score failed", out
    assert "positive counts" in (Path(out["run_folder"]) / "score.err").read_text()


def test_publishing_refuses_key_material_and_tokens(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "model.py").write_text("order = 3\n")
    agora(a, "init", "--metric", "bpc", "--direction", "min")
    before = git(a, "ls-remote", str(remote))
    for text in (f"found {TOKEN} in the logs", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA"):
        r = agora(a, "post", "-m", text, "--tag", "insight", check=False)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "looks like" in r.stderr
        assert TOKEN not in r.stderr
    r = agora(a, "post", "-m", "fine", "--tag", "insight", "--meta", f"env=GITHUB_TOKEN={TOKEN}", check=False)
    assert r.returncode == 1 and "looks like" in r.stderr
    assert git(a, "ls-remote", str(remote)) == before


def test_new_eval_keys_need_their_format_and_a_newer_format_says_so(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "e.py").write_text("print('{\"m\": 1}')\n")
    (a / "agora.toml").write_text('[metric]\nname = "m"\n[eval]\ncommand = "python3 e.py"\nnetwork = true\n')
    r = agora(a, "init", check=False)
    assert r.returncode == 1 and "need format = 2" in r.stderr
    (a / "agora.toml").write_text('[metric]\nname = "m"\n[eval]\nformat = 4\ncommand = "python3 e.py"\n')
    r = agora(a, "init", check=False)
    assert r.returncode == 1 and "needs a newer git-agora" in r.stderr
    assert git(a, "for-each-ref", "refs/agora/").strip() == ""


def test_a_scorer_that_differs_from_its_pin_is_refused_before_anything_runs(tmp_path, remote):
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "build.py").write_text("import sys\nopen(sys.argv[2] + '/x', 'w').write('1')\n")
    (a / "agora.toml").write_text(
        '[metric]\nname = "bpb"\n[eval]\nformat = 2\nbuild = "python3 build.py --out {artifact}"\n'
        'score = "hybridlm score {artifact} --json"\nscorer = ["hybridlm"]\n'
        f'pins = {{ hybridlm = "{"0" * 64}" }}\n'
    )
    agora(a, "init")
    r = agora(a, "run", check=False)
    assert r.returncode == 1 and "the installed hybridlm differs from the project's" in r.stderr
    assert "an amendment" in r.stderr and not (a / ".git" / "agora" / "runs").exists()


def test_the_weight_transfer_kit_pins_the_installed_hybridlm():
    """Change hybridlm and this fails: put the new digest in eval/weight_transfer/agora.toml (the kit's
    projects adopt it by a policy amendment, docs/hybridlm.md)."""
    import tomllib

    from git_agora.evaluate.identity import package_identity

    kit = tomllib.loads((Path(__file__).resolve().parents[1] / "eval" / "weight_transfer" / "agora.toml").read_text())
    assert kit["eval"]["pins"]["hybridlm"] == package_identity("hybridlm")["sha256"]


# --- the mechanisms that differ for an unprivileged user -------------------------------------------------


def test_as_an_unprivileged_user_the_sandbox_hides_what_is_not_listed():
    """The user-namespace path (bubblewrap without root), run as nobody against a key nobody owns and
    can read outside the sandbox (the control): inside, it is not there."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user for the test")
    import tempfile

    from git_agora.evaluate import sandbox as jail

    reachable = Path(tempfile.mkdtemp(prefix="agora-nobody-"))
    try:
        reachable.chmod(0o755)
        secret = plant(reachable / "home" / ".ssh" / "id_ed25519")
        for path in (secret, secret.parent, secret.parent.parent):
            os.chown(path, 65534, 65534)
        jail.write_etc(str(reachable / "etc"))
        as_nobody = {
            "env": {"PATH": jail.SYSTEM_PATH},
            "preexec_fn": lambda: (
                os.setgroups([]),
                os.setresgid(65534, 65534, 65534),
                os.setresuid(65534, 65534, 65534),
            ),
        }
        assert subprocess.run(["cat", str(secret)], capture_output=True, **as_nobody).returncode == 0  # the control
        box = jail.Box((), (("/tmp", 1 << 20), ("/agora/home", 1 << 20)), "/", {"PATH": jail.SYSTEM_PATH}, False)
        probe = (
            f"cat {secret} >/dev/null 2>&1 && echo READ; id -u; grep CapEff /proc/self/status; "
            "ls /proc | grep -c '^[0-9]'; touch /x 2>/dev/null && echo WROTE; "
            "dd if=/dev/zero of=/tmp/f bs=1M count=4 2>/dev/null; ls -s /tmp/f"
        )
        read, write = os.pipe()
        argv = jail.bwrap_argv(box, ["sh", "-c", probe], str(reachable / "etc"), write, as_root=False)
        done = subprocess.run(argv, capture_output=True, text=True, pass_fds=(write,), **as_nobody)
        os.close(write)
        os.close(read)
    finally:
        shutil.rmtree(reachable, ignore_errors=True)
    if "No permissions to create new namespace" in done.stderr or "setting up uid map" in done.stderr:
        assert os.environ.get("CI") is None, f"user namespaces must work in CI: {done.stderr}"
        pytest.skip(f"user namespaces are off here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert "READ" not in lines and "WROTE" not in lines, done.stdout
    assert lines[0] == "65534" and "0000000000000000" in done.stdout
    assert int(lines[3]) <= 4  # its own PID namespace: the reaper, sh, ls and grep
    assert int(lines[-2]) <= 1024  # the 1 MiB /tmp: the 4 MiB write was cut short


def test_where_user_namespaces_are_off_the_command_refuses_in_one_line(tmp_path, remote, monkeypatch):
    """bubblewrap that cannot make its namespaces (as on Ubuntu 24.04's AppArmor default): nothing runs
    unsandboxed, and the one line says why and what to do."""
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "e.py").write_text("open('/tmp/ran-unsandboxed', 'w')\nprint('{\"m\": 1}')\n")
    agora(a, "init", "--metric", "m", "--eval", "python3 e.py")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "bwrap").write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not "
        "allow non-privileged user namespaces.' >&2\nexit 1\n"
    )
    (tools / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    r = agora(a, "run", check=False)
    error = [line for line in r.stderr.splitlines() if "error" in line]
    assert r.returncode == 1 and len(error) == 1, r.stderr
    assert "the sandbox cannot start" in error[0] and "user namespaces are off here" in error[0]
    assert "--no-sandbox" in error[0] and "agora.sandbox off" in error[0]
    assert not Path("/tmp/ran-unsandboxed").exists()


def test_the_setups_mounts_are_shown_read_only_and_a_key_folder_never(tmp_path, remote, monkeypatch):
    donors = tmp_path / "donors"
    donors.mkdir()
    (donors / "weights.txt").write_text("42\n")
    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "e.py").write_text(
        "import json, os\nfolder = os.environ['DONORS']\nvalue = float(open(folder + '/weights.txt').read())\n"
        "try:\n    open(folder + '/weights.txt', 'w')\n    wrote = 1\nexcept OSError:\n    wrote = 0\n"
        "print(json.dumps({'m': value, 'wrote': wrote}))\n"
    )
    (a / "agora.toml").write_text(
        '[metric]\nname = "m"\n[eval]\nformat = 2\ncommand = "python3 e.py"\nfiles = ["e.py"]\n'
        'env = ["DONORS"]\nmounts = ["$DONORS"]\n'
    )
    agora(a, "init")
    monkeypatch.setenv("DONORS", str(donors))
    out = agora(a, "run", "--json").json()
    assert out["metrics"] == {"m": 42.0, "wrote": 0.0} and (donors / "weights.txt").read_text() == "42\n"
    monkeypatch.setenv("DONORS", os.environ["HOME"])  # a folder that holds the signing keys
    r = agora(a, "run", check=False)
    assert r.returncode == 1 and "the sandbox would show" in r.stderr and "holds" in r.stderr


def test_what_a_killed_evaluation_left_is_swept_by_the_next(tmp_path, remote):
    """A git-agora killed with SIGKILL leaves its (empty) cgroups and its temporary folder; the next
    evaluation removes those of processes that are gone (a day-old folder, for /tmp is shared)."""
    import tempfile

    from git_agora.evaluate.limits import _make_groups

    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "e.py").write_text("print('{\"m\": 1}')\n")
    agora(a, "init", "--metric", "m", "--eval", "python3 e.py")
    gone = next(pid for pid in range(4_000_000, 4_100_000) if not Path(f"/proc/{pid}").exists())
    stale_tmp = Path(tempfile.gettempdir()) / f"agora-eval-{gone}-abcdef"
    (stale_tmp / "tree").mkdir(parents=True)
    os.utime(stale_tmp, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    fresh_tmp = Path(tempfile.gettempdir()) / f"agora-eval-{gone}-fresh"  # may be another namespace's
    fresh_tmp.mkdir()
    groups = _make_groups(Limits())
    stale_groups = []
    for group in groups:
        os.rmdir(group.path)
        stale = Path(group.path).with_name(f"agora-{gone}-deadbeef")
        stale.mkdir()
        stale_groups.append(stale)
    try:
        agora(a, "run")
        assert not stale_tmp.exists() and fresh_tmp.exists()
        assert not any(p.exists() for p in stale_groups)
    finally:
        shutil.rmtree(fresh_tmp, ignore_errors=True)
        shutil.rmtree(stale_tmp, ignore_errors=True)
        for stale in stale_groups:
            with contextlib.suppress(OSError):
                stale.rmdir()
