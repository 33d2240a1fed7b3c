"""Publish latency of one light contribution, against `git commit --allow-empty && git push`.

    python eval/bench/bench_publish.py                    # paper-scale project, local bare remote + git daemon
    python eval/bench/bench_publish.py --size 100000 --accounts 100 --repeat 15 --no-daemon

- project: a generated origin (cached under $AGORA_BENCH_DIR) cloned with `git agora fetch`; the
  publisher is a new account per transport (so every post is one fast-forward of its own log; the
  untimed warm-up post also caches the setup sha in git config, as any first command does);
- `git agora post -m ... --tag insight` (the real CLI, interpreter start-up included), median of
  --repeat runs, against `git commit --allow-empty -m x && git push` of one commit to the same kind of
  remote (a local bare repository holding a single branch); target at most 3x (issue 11). The CLI runs
  with bytecode caches (PYTHONPYCACHEPREFIX under the bench folder, written by the warm-up), as an
  installed package does, even where PYTHONDONTWRITEBYTECODE is set;
- signing: every post is signed (the contribution and its log entry) and cannot be turned off, so its
  cost is measured apart: two in-process ed25519 signatures (key file read included) plus the import
  of the signer (`python -c` importing the post's modules and the signer, minus the post's modules
  alone); the issue's targets are for unsigned projects, so the post is also reported less that cost;
- the in-process library path: `git_agora.ops.publish.publish(project, contribution, tree)` with the
  project opened once (what an agent harness that imports git_agora pays per contribution);
- over `git daemon` on 127.0.0.1 as well (unless --no-daemon), both sides;
- start-up: `python -c pass`, `git agora -h` (`--help` goes to man), and the slowest imports of `git agora post` from
  `python -X importtime`.
Results: bench-out/bench_publish.json.
"""

from __future__ import annotations

import argparse
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from _common import WORK_DIR, env, project, ratio, sample, sh, stats, verdict, write_json
from git_agora.contribution import Contribution
from git_agora.ops.publish import publish
from git_agora.project import Project

TARGET = 3.0  # issue 11: a light post <= 3x git commit --allow-empty && git push
ACCOUNT = "bench-publisher"
IDENT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, base: Path):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--export-all",
                "--enable=receive-pack",
                "--reuseaddr",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                f"--base-path={base}",
                str(base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("git daemon did not start")

    def url(self, repo: Path) -> str:
        return f"git://127.0.0.1:{self.port}/{repo.name}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def make_agora_clone(url: str, path: Path, account: str) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    sh("git", "init", "-q", cwd=path)
    sh("git", "remote", "add", "origin", url, cwd=path)
    sh("git", "config", "agora.account", account, cwd=path)
    sh("git", "agora", "fetch", cwd=path)
    return path


def make_plain(base: Path, name: str) -> tuple[Path, Path]:
    origin, work = base / f"{name}.git", base / f"{name}-work"
    for p in (origin, work):
        shutil.rmtree(p, ignore_errors=True)
    sh("git", "init", "-q", "--bare", "-b", "main", str(origin))
    sh("git", "init", "-q", "-b", "main", str(work))
    sh("git", "remote", "add", "origin", str(origin), cwd=work)
    sh("git", "commit", "-q", "--allow-empty", "-m", "start", cwd=work, extra_env=IDENT)
    sh("git", "push", "-q", "origin", "main", cwd=work)
    return origin, work


def plain_round(work: Path) -> None:
    sh("git", "commit", "-q", "--allow-empty", "-m", "x", cwd=work, extra_env=IDENT)
    sh("git", "push", "-q", "origin", "main", cwd=work)


def cached_bytecode(base: Path) -> dict[str, str]:
    """The environment of an installed package: bytecode cached (an editable source tree under
    PYTHONDONTWRITEBYTECODE would otherwise be compiled by every command)."""
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(base / "pycache")}


def measure(clone: Path, work: Path, repeat: int, label: str, account: str) -> dict:
    counter = iter(range(10**6))
    bytecode = cached_bytecode(clone.parent)

    def post():
        out = sh(
            "git",
            "agora",
            "post",
            "-m",
            f"bench insight {next(counter)}: nothing to see",
            "--tag",
            "insight",
            "--json",
            cwd=clone,
            extra_env=bytecode,
        )
        assert '"pushed"' in out, out

    res = {
        "agora_post_cli_s": stats(sample(post, repeat, warmup=1)),
        "git_commit_push_s": stats(sample(lambda: plain_round(work), repeat, warmup=1)),
    }
    res["ratio_cli"] = ratio(res["agora_post_cli_s"]["median"], res["git_commit_push_s"]["median"])

    proj = Project.open(clone, account=account)
    setup = proj.setup
    tree = proj.repo.commit_info(setup).tree

    def library():
        c = Contribution(
            account=account, tags=("insight",), description=f"library insight {next(counter)}", parents=(setup,)
        )
        assert publish(proj, c, tree).push.outcome.value == "pushed"

    res["publish_in_process_s"] = stats(sample(library, repeat, warmup=1))
    res["ratio_in_process"] = ratio(res["publish_in_process_s"]["median"], res["git_commit_push_s"]["median"])
    res["signing"] = signing_cost(proj, repeat, bytecode)
    base = res["git_commit_push_s"]["median"]
    unsigned_cli = res["agora_post_cli_s"]["median"] - res["signing"]["per_cli_post_s"]
    unsigned_lib = res["publish_in_process_s"]["median"] - res["signing"]["two_signatures_s"]["median"]
    res["agora_post_cli_less_signing_s"] = unsigned_cli
    res["ratio_cli_less_signing"] = ratio(unsigned_cli, base)
    res["publish_in_process_less_signing_s"] = unsigned_lib
    res["ratio_in_process_less_signing"] = ratio(unsigned_lib, base)
    med = lambda k: res[k]["median"]  # noqa: E731
    print(f"  [{label}]")
    print(
        f"    git agora post (CLI), signed          {med('agora_post_cli_s'):7.3f} s   ratio {res['ratio_cli']:.2f}x "
        f"(target <= {TARGET}x: {verdict(res['ratio_cli'], TARGET)})"
    )
    print(
        f"    the same less signing ({res['signing']['per_cli_post_s'] * 1e3:.1f} ms)      {unsigned_cli:7.3f} s   "
        f"ratio {res['ratio_cli_less_signing']:.2f}x (target <= {TARGET}x, unsigned: "
        f"{verdict(res['ratio_cli_less_signing'], TARGET)})"
    )
    print(
        f"    publish() in-process, signed          {med('publish_in_process_s'):7.3f} s   "
        f"ratio {res['ratio_in_process']:.2f}x; less signing {unsigned_lib:.3f} s"
    )
    print(f"    git commit --allow-empty && git push  {base:7.3f} s")
    return res


def signing_cost(proj: Project, repeat: int, bytecode: dict[str, str]) -> dict:
    """What signing adds to one post: two signatures (the contribution and its log entry) with the key
    read from its file each time, as `SigningKey.sign` does, and, for the CLI, importing the signer."""
    key = proj.signing_key
    payload = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n" * 8
    key.sign(payload)
    two = stats(sample(lambda: (key.sign(payload), key.sign(payload)), max(repeat, 20)))

    def python(code: str) -> None:
        subprocess.run([sys.executable, "-c", code], check=True, env={**env(), **bytecode})

    bare = stats(sample(lambda: python(UNSIGNED_IMPORT), repeat, warmup=1))
    signer = stats(sample(lambda: python(f"{UNSIGNED_IMPORT}; {SIGNER_IMPORT}"), repeat, warmup=1))
    import_s = max(0.0, signer["median"] - bare["median"])
    return {
        "two_signatures_s": two,
        "signer_import_s": import_s,
        "per_cli_post_s": two["median"] + import_s,
        "in_process": _in_process_signer(key),
    }


UNSIGNED_IMPORT = "import git_agora.ops.publish, git_agora.cli.quick"  # what a post imports anyway
SIGNER_IMPORT = "import git_agora.identity.ssh_sign, cryptography.hazmat.primitives.asymmetric.ed25519"


def _in_process_signer(key) -> bool:
    from git_agora.identity.ssh_sign import load_ed25519

    return load_ed25519(key.path) is not None


def startup(repeat: int) -> dict:
    res = {
        "python_c_pass_s": stats(sample(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), repeat)),
        "git_version_s": stats(sample(lambda: subprocess.run(["git", "--version"], capture_output=True), repeat)),
        "git_agora_h_s": stats(sample(lambda: sh("git", "agora", "-h"), repeat)),
        "import_post_module_s": stats(
            sample(
                lambda: subprocess.run(
                    [sys.executable, "-c", "import git_agora.cli.quick, git_agora.ops.publish"], check=True
                ),
                repeat,
            )
        ),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "import git_agora.cli, git_agora.cli.quick, git_agora.ops.publish",
        ],
        capture_output=True,
        text=True,
        env=env(),
    )
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m.group(2)), int(m.group(1)), len(m.group(3)), m.group(4)))
    top_level = sorted((r for r in rows if r[2] <= 1), reverse=True)[:12]
    res["importtime_top_cumulative_us"] = [{"module": r[3], "cumulative_us": r[0], "self_us": r[1]} for r in top_level]
    res["importtime_total_us"] = sum(r[0] for r in rows if r[2] <= 1)
    print("  start-up:")
    for k in ("python_c_pass_s", "git_version_s", "import_post_module_s", "git_agora_h_s"):
        print(f"    {k:<26} {res[k]['median']:.3f} s")
    print(f"    -X importtime, top-level imports (cumulative, total {res['importtime_total_us'] / 1e3:.0f} ms):")
    for r in res["importtime_top_cumulative_us"]:
        print(f"      {r['module']:<34} {r['cumulative_us'] / 1e3:7.1f} ms")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="publish benchmark")
    ap.add_argument("--size", type=int, default=1703)
    ap.add_argument("--accounts", type=int, default=17)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--no-daemon", action="store_true")
    args = ap.parse_args(argv)
    base = WORK_DIR / f"publish-{args.size}"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    cached = project(args.size, args.accounts)
    origin = base / "agora-origin.git"
    shutil.copytree(cached, origin, symlinks=True)
    plain_origin, plain_work = make_plain(base, "plain")
    print(f"\n== publish one insight into a {args.size}-contribution project", flush=True)
    results: dict = {"size": args.size}
    clone = make_agora_clone(str(origin), base / "agora-clone", ACCOUNT)
    results["local"] = measure(clone, plain_work, args.repeat, "local bare remote (path)", ACCOUNT)
    if not args.no_daemon:
        daemon = Daemon(base)
        try:
            d_clone = make_agora_clone(daemon.url(origin), base / "agora-clone-daemon", ACCOUNT + "-d")
            d_work = base / "plain-work-daemon"
            sh("git", "clone", "-q", daemon.url(plain_origin), str(d_work))
            results["daemon"] = measure(d_clone, d_work, args.repeat, "git daemon on 127.0.0.1", ACCOUNT + "-d")
        finally:
            daemon.stop()
    results["startup"] = startup(max(5, args.repeat // 2))
    path = write_json("bench_publish", results)
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
