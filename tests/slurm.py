"""A real single-node Slurm cluster for the Slurm tests: Debian's `slurm-wlm` and `munge`, their daemons
(`munged`, `slurmctld`, `slurmd`) started on 127.0.0.1 from a generated `slurm.conf` in a temporary
folder, and ended afterwards by the pids this module started (never by name).

The node declares 8 CPUs on whatever the machine has (`SlurmdParameters=config_overrides`), so several
one-CPU jobs run at once on two cores, and 4 GPUs that are empty files (`gres.conf`: `Name=gpu
File=.../gpu[0-3]`; slurmd 22.05 drops a count-only GPU, with no File) so `--gres=gpu:1` is accepted,
accounted and sets `CUDA_VISIBLE_DEVICES`. There is no accounting database: `scontrol` keeps ended
jobs for `MinJobAge` (a day here). Ports and the munge socket are this cluster's own, so two pytest
workers may each run one.

Packages missing: the tests skip, except under CI (`CI` or `AGORA_REQUIRE_SLURM` set), where `.ci/run`
installs them and a missing Slurm is a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
SBIN = ("/usr/sbin", "/usr/bin")


@dataclass
class Cluster:
    folder: Path
    conf: Path
    env: dict[str, str]
    processes: list[subprocess.Popen] = field(default_factory=list)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(argv, env={**os.environ, **self.env}, capture_output=True, text=True, check=check)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.folder.glob("*.log"))
        )


def required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("AGORA_REQUIRE_SLURM"))


def _which(name: str) -> str | None:
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *SBIN]))


def _missing() -> list[str]:
    return [name for name in DAEMONS if _which(name) is None]


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def write_conf(folder: Path, ctld_port: int, slurmd_port: int) -> Path:
    host = socket.gethostname().split(".")[0]
    lines = {
        "ClusterName": "agora-test",
        "SlurmctldHost": f"{host}(127.0.0.1)",
        "SlurmctldPort": str(ctld_port),
        "SlurmdPort": str(slurmd_port),
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "AuthType": "auth/munge",
        "CredType": "cred/munge",
        "AuthInfo": f"socket={folder / 'munge.socket'}",
        "StateSaveLocation": str(folder / "state"),
        "SlurmdSpoolDir": str(folder / "spool"),
        "SlurmctldPidFile": str(folder / "slurmctld.pid"),
        "SlurmdPidFile": str(folder / "slurmd.pid"),
        "SlurmctldLogFile": str(folder / "slurmctld.log"),
        "SlurmdLogFile": str(folder / "slurmd.log"),
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "JobCompType": "jobcomp/none",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core",
        "SlurmdParameters": "config_overrides",
        "GresTypes": "gpu",
        "MpiDefault": "none",
        "SwitchType": "switch/none",
        "ReturnToService": "2",
        "KillWait": "2",
        "MinJobAge": "86400",
        "InactiveLimit": "0",
        "Waittime": "0",
        "SchedulerParameters": "sched_interval=1",
        "SlurmctldDebug": "info",
        "SlurmdDebug": "info",
    }
    text = "".join(f"{k}={v}\n" for k, v in lines.items())
    text += "NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=4000 Gres=gpu:4 State=UNKNOWN\n"
    text += "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n"
    conf = folder / "slurm.conf"
    conf.write_text(text)
    for n in range(4):  # slurmd drops a file-less GPU ("Removing file-less GPU"): empty stand-ins
        (folder / f"gpu{n}").touch()
    (folder / "gres.conf").write_text(f"AutoDetect=off\nNodeName=localhost Name=gpu File={folder}/gpu[0-3]\n")
    return conf


def start(folder: Path) -> Cluster:
    """Start munged, slurmctld and slurmd in `folder`; returns once `sinfo` shows the node idle."""
    for sub in ("state", "spool", "munge"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(folder / "munge", 0o700)
    ctld_port, slurmd_port = _free_ports(2)
    conf = write_conf(folder, ctld_port, slurmd_port)
    cluster = Cluster(folder, conf, {"SLURM_CONF": str(conf)})
    key = folder / "munge" / "munge.key"
    subprocess.run([_which("mungekey"), "--create", "--keyfile", str(key)], check=True, capture_output=True)
    os.chmod(key, 0o400)
    munged = [
        _which("munged"),
        "--foreground",
        "--force",
        f"--socket={folder / 'munge.socket'}",
        f"--key-file={key}",
        f"--pid-file={folder / 'munge' / 'munged.pid'}",
        f"--log-file={folder / 'munged.log'}",
        f"--seed-file={folder / 'munge' / 'munged.seed'}",
    ]
    daemons = [
        munged,
        [_which("slurmctld"), "-D", "-i", "-f", str(conf)],
        [_which("slurmd"), "-D", "-N", "localhost", "-f", str(conf)],
    ]
    env = {**os.environ, **cluster.env}
    try:
        for argv in daemons:
            name = Path(str(argv[0])).name
            with open(folder / f"{name}.out.log", "ab") as out:
                cluster.processes.append(
                    subprocess.Popen([str(a) for a in argv], env=env, stdout=out, stderr=out, start_new_session=True)
                )
            if name == "munged":
                _wait(lambda: (folder / "munge.socket").exists(), 20, "munged's socket", cluster)
        _wait(lambda: _idle(cluster), 90, "the node to be idle", cluster)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def _idle(cluster: Cluster) -> bool:
    for proc in cluster.processes:
        if proc.poll() is not None:
            raise RuntimeError(f"a Slurm daemon ended ({proc.args[0]}, exit {proc.returncode}):\n{cluster.logs()}")
    done = cluster.run("sinfo", "-h", "-N", "-o", "%t", check=False)
    return done.returncode == 0 and done.stdout.strip() == "idle"


def _wait(predicate, timeout: float, what: str, cluster: Cluster) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise RuntimeError(f"timed out waiting for {what}:\n{cluster.logs()}")


def stop(cluster: Cluster) -> None:
    """Cancel what is left, then end the daemons this module started, by their pids, newest first."""
    cluster.run("scancel", "--full", "--user", str(os.getuid()), check=False) if cluster.processes else None
    for proc in reversed(cluster.processes):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """The single-node cluster of this session (one per pytest worker), its `SLURM_CONF` in `env`."""
    missing = _missing()
    if missing:
        message = f"Slurm is not installed here ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
        if required():
            pytest.fail(message)
        pytest.skip(message)
    if os.getuid() != 0:
        message = "the Slurm test cluster runs its daemons as root (SlurmUser=root)"
        pytest.fail(message) if required() else pytest.skip(message)
    cluster = start(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        stop(cluster)


@pytest.fixture
def slurm(slurm_cluster, monkeypatch) -> Cluster:
    """The session's cluster, its `SLURM_CONF` set for this test's `git agora` commands."""
    for key, value in slurm_cluster.env.items():
        monkeypatch.setenv(key, value)
    return slurm_cluster
