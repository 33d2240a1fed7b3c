"""Synthetic Agora projects at any size, for tests and benchmarks.

`generate(path, contributions, accounts)` writes a bare repository that looks like a real Agora
project: one setup, then results, insights, hypotheses, verifications and reports in the paper's mix,
each a valid contribution commit (messages from `Contribution.to_message`), each appended to its
account's log `refs/agora/log/<account>` by a log commit (`log_message`, empty tree, parents
[previous log tip, contribution]). Everything streams through one `git fast-import` process, so
100,000 contributions (200,000 commits) take seconds, not minutes.

The model behind the numbers (all drawn from `random.Random(seed)`, base time 1_750_000_000, earlier for
projects too large to end before 2026-07-25: see `start_time`):

- Mix (paper scale, 1,703 contributions over 17 accounts): tag counts setup 1, result 1,124,
  insight 284, hypothesis 203, verification 165, report 1. These add up to 1,778, so 75 contributions
  carry two reserved tags: 50 results that are also insights, 25 insights that are also hypotheses.
  Larger projects scale the same mix (largest remainder).
- Metric (`bpb`, minimised, tolerance 0.0013): a spine of new-best results, each built on the
  previous best by a different draw of account, goes from ~3.39 down to ~1.04 (exponential decay with
  noise). Every other result starts from some parent and is usually slightly worse (a few diverge,
  some improve a little but never beat the current best).
- Parents: `recent` draws mostly from the last ~200 contributions (tournament selection favours
  better metrics), sometimes one of the ten leaders, and rarely (3%) anywhere in history; `uniform`
  draws uniformly from all history. About 5% of results have 2-3 parents.
- Trees: the setup holds agora.toml, program.md and transfer.py; a result rewrites one line of
  transfer.py (tiny blobs); light contributions keep their first parent's tree.
- Descriptions: templates over a dozen method families with varied slots; each account prefers a
  few families and children mostly stay in their parent's family, so clustering finds structure.

`append(path, account, n)` continues a generated project (state in `<repo>/tracegen-state.pkl`).

CLI:
    python eval/bench/tracegen.py OUT.git --paper
    python eval/bench/tracegen.py OUT.git --contributions 100000 --accounts 100 --parents uniform
    python eval/bench/tracegen.py OUT.git --append 1 --account ada --kind result
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import pickle
import random
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from git_agora.config import ProjectConfig
from git_agora.contribution import Contribution, Verdict
from git_agora.refs.store import log_message

BASE_TIME = 1_750_000_000
LATEST_TIME = 1_785_000_000  # 2026-07-25: a generated project ends before it, so no row is pending
SECONDS_PER_CONTRIBUTION = 120  # above the mean gap the clock draws (about 107 s), so the bound holds


def start_time(contributions: int) -> int:
    """BASE_TIME, or earlier for a project so large that starting there would run past LATEST_TIME (a
    million contributions span about 3.4 years): its rows would be dated in the future and pending."""
    return min(BASE_TIME, LATEST_TIME - contributions * SECONDS_PER_CONTRIBUTION)


STATE_FILE = "tracegen-state.pkl"
SCRATCH_REF = "refs/tracegen/scratch"
PROJECT_NAME = "weight-transfer"
TOLERANCE = 0.0013
BASELINE = 3.39
FLOOR = 1.0
RECENT_WINDOW = 200
BATCH = 400  # contributions between two get-mark round trips (responses must fit a pipe buffer)

PAPER_CONTRIBUTIONS = 1703
PAPER_ACCOUNTS = 17
# Distinct categories at paper scale (sum 1,702 + the setup = 1,703); the tag counts they give are
# result 1,124, insight 284, hypothesis 203, verification 165, report 1.
PAPER_MIX = {
    "result": 1074,
    "result+insight": 50,
    "insight": 209,
    "insight+hypothesis": 25,
    "hypothesis": 178,
    "verification": 165,
    "report": 1,
}
PAPER_TAG_COUNTS = {"setup": 1, "result": 1124, "insight": 284, "hypothesis": 203, "verification": 165, "report": 1}
KIND_TAGS = {
    "setup": ("setup",),
    "result": ("result",),
    "result+insight": ("result", "insight"),
    "insight": ("insight",),
    "insight+hypothesis": ("insight", "hypothesis"),
    "hypothesis": ("hypothesis",),
    "verification": ("verification",),
    "report": ("report",),
}
METRIC_KINDS = frozenset({"result", "result+insight"})

NAMES = [
    "ada",
    "bayes",
    "curie",
    "dirac",
    "euler",
    "fermi",
    "gauss",
    "hopper",
    "ising",
    "joule",
    "kepler",
    "lovelace",
    "maxwell",
    "noether",
    "ohm",
    "planck",
    "quine",
    "riemann",
    "shannon",
    "turing",
    "ulam",
    "volta",
    "wiener",
    "yukawa",
    "zuse",
]

# --- description vocabulary ------------------------------------------------------------------------

DONORS = ["gpt2", "gpt2-medium", "pythia-160m", "pythia-410m", "opt-125m", "qwen2-0.5b", "smollm-135m"]
GPUS = ["H100", "A100", "L40S", "RTX 4090", "A10G"]
FAMILIES = [
    (
        "svd-embed",
        [
            "SVD projection of {donor} embeddings to rank {rank}",
            "truncated SVD of the {donor} token embeddings (rank {rank}) as the input table",
            "project donor embeddings from {donor} through their top-{rank} singular vectors",
        ],
    ),
    (
        "copy-attn",
        [
            "copy attention from {donor} layers {layers}",
            "initialise attention blocks from {donor} layers {layers}, heads remapped by norm",
            "transplant q/k/v/o weights of {donor} layers {layers} into the hybrid attention slots",
        ],
    ),
    (
        "ssm-distil",
        [
            "distil SSM from donor MLP of {donor} layers {layers}",
            "fit the SSM kernels to {donor} MLP outputs on {steps} calibration batches",
            "least-squares distillation of {donor} MLPs into the state-space blocks (state {rank})",
        ],
    ),
    (
        "procrustes",
        [
            "orthogonal Procrustes alignment of {donor} and target embedding spaces",
            "align {donor} hidden states to the target with Procrustes on {steps} anchor tokens",
        ],
    ),
    (
        "vocab-remap",
        [
            "remap the {donor} vocabulary by token overlap, averaging subword pieces",
            "vocabulary transfer from {donor}: exact matches copied, the rest mean of constituent pieces",
        ],
    ),
    (
        "depth-upscale",
        [
            "depth upscaling: repeat {donor} layers {layers} to fill the hybrid stack",
            "interpolate between adjacent {donor} layers to initialise the extra depth",
        ],
    ),
    (
        "net2net",
        [
            "Net2Net width expansion of {donor} MLPs with {frac} noise",
            "function-preserving widening of the {donor} feed-forward blocks (noise scale {frac})",
        ],
    ),
    (
        "lowrank-adapt",
        [
            "rank-{rank} adapters on transferred attention, base frozen",
            "low-rank correction of the copied {donor} attention (rank {rank}, alpha {alpha})",
        ],
    ),
    (
        "freeze-sched",
        [
            "freeze transferred layers for the first {steps} steps",
            "progressive unfreezing of transferred blocks every {steps} steps",
        ],
    ),
    (
        "lr-sched",
        [
            "cosine schedule with peak lr {lr} and {warmup} warmup steps",
            "lower lr {lr} on transferred weights, default on new ones",
            "lr warmup of {warmup} steps, then linear decay from {lr}",
        ],
    ),
    (
        "logit-distil",
        [
            "logit distillation from {donor} at temperature {temp}",
            "KL to {donor} logits (T={temp}) for the first {steps} steps",
        ],
    ),
    (
        "soup",
        [
            "average {k} transferred inits from different {donor} layer maps",
            "weight soup of {k} recipes sharing the {donor} embedding",
        ],
    ),
    (
        "norm-fix",
        [
            "rescale transferred weights to match target RMSNorm statistics",
            "re-estimate norm gains of copied {donor} layers on {steps} batches",
        ],
    ),
]
TWEAKS = [
    "raised warmup to {warmup} steps",
    "dropped weight decay to {wd}",
    "switched to AdamW with beta2 0.95",
    "doubled the batch size",
    "kept only layers {layers}",
    "used rank {rank} instead",
    "froze the embeddings",
    "re-initialised the output head",
    "added gradient clipping at {clip}",
    "shortened the run to {steps} steps",
    "tied input and output embeddings",
    "scaled the copied residual branches by {frac}",
    "used {donor} instead of the parent's donor",
    "removed the layer-norm copy",
    "seeded with {seed}",
]
INSIGHT_TEMPLATES = [
    "{Method} only helps when the donor is at least as wide as the target; with {donor} it costs {x} bpb.",
    "Across {n} runs, {method} beats {method2} by about {x} bpb, but the gap closes after {steps} steps.",
    "The gain from {method} is a warm-start effect: it vanishes once training passes {steps} steps.",
    "{Method} is sensitive to the learning rate: above {lr} the copied layers diverge within {warmup} steps.",
    "Most of the improvement from {method} comes from layers {layers}; the rest adds noise.",
    "Reruns of {method} on {gpu} differ by up to {tol} bpb, close to the project tolerance.",
    "Combining {method} with {method2} is not additive: the second adds under {x} bpb.",
    "Negative result: {method} never beat its parent in {n} attempts; stop spending runs on it.",
]
HYPOTHESIS_TEMPLATES = [
    "If we {method} and then {tweak}, bpb should drop below {target}.",
    "{Method} should transfer better from {donor} than from {donor2}, because its heads are less redundant.",
    "Hypothesis: {method} fails because of norm mismatch; rescaling first should recover {x} bpb.",
    "Stacking {method} on the current leader should give {x} bpb, since the two touch disjoint layers.",
    "Untested: {method} with rank {rank} may match full-rank results at a third of the memory.",
]
VERIFICATION_TEXT = {
    Verdict.CONFIRMED: "Reproduced: {value} bpb against the reported {reported} on {gpu}, within tolerance.",
    Verdict.PARTIAL: "Partly reproduced: {value} bpb against the reported {reported} on {gpu}; the trend holds but the gap exceeds the tolerance.",  # noqa: E501
    Verdict.FAILED: "Could not reproduce: {value} bpb against the reported {reported} on {gpu}.",
}


def _slots(rng: random.Random) -> dict:
    lo = rng.randrange(0, 8)
    donor, donor2 = rng.sample(DONORS, 2)
    return {
        "donor": donor,
        "donor2": donor2,
        "rank": rng.choice([8, 16, 32, 64, 128, 256, 512]),
        "layers": f"{lo}-{lo + rng.randrange(1, 6)}",
        "steps": rng.choice([200, 500, 1000, 2000, 3000, 5000]),
        "lr": rng.choice(["1e-4", "2e-4", "3e-4", "6e-4", "1e-3", "3e-3"]),
        "warmup": rng.choice([50, 100, 200, 400, 800]),
        "frac": rng.choice([0.01, 0.05, 0.1, 0.25, 0.5]),
        "alpha": rng.choice([8, 16, 32]),
        "temp": rng.choice([1.0, 1.5, 2.0, 4.0]),
        "k": rng.randrange(2, 6),
        "wd": rng.choice([0.0, 0.01, 0.05]),
        "clip": rng.choice([0.5, 1.0, 2.0]),
        "seed": rng.randrange(10_000),
        "gpu": rng.choice(GPUS),
        "n": rng.randrange(3, 25),
        "x": f"{rng.uniform(0.002, 0.08):.3f}",
        "tol": f"{rng.uniform(0.0005, 0.002):.4f}",
    }


def _method(rng: random.Random, family: int, slots: dict) -> str:
    return rng.choice(FAMILIES[family][1]).format(**slots)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# --- the generator --------------------------------------------------------------------------------


@dataclass
class TraceInfo:
    path: str
    contributions: int
    accounts: list[str]
    tag_counts: dict[str, int]
    setup: str
    best: float
    spine: int
    first_timestamp: int
    last_timestamp: int
    seconds: float
    parent_mode: str
    new: list[str] = field(default_factory=list)  # shas written by this call

    def to_dict(self) -> dict:
        return asdict(self)


class _Trace:
    """All generator state; pickled next to the repository so that `append` can continue it."""

    def __init__(self, contributions: int, accounts: int, seed: int, parent_mode: str, metric: str, direction: str):
        if contributions < 1 or accounts < 1:
            raise ValueError("need at least one contribution and one account")
        self.rng = random.Random(seed)
        self.seed, self.parent_mode, self.metric, self.direction = seed, parent_mode, metric, direction
        self.accounts = [
            NAMES[i % len(NAMES)] + (f"-{i // len(NAMES) + 1}" if i >= len(NAMES) else "") for i in range(accounts)
        ]
        weights = [1.0 / (i + 1) ** 0.6 for i in range(accounts)]
        self.rng.shuffle(weights)
        self.cum_weights = [sum(weights[: i + 1]) for i in range(accounts)]
        self.prefs = [self.rng.sample(range(len(FAMILIES)), 3) for _ in range(accounts)]
        # per node, parallel lists
        self.kind: list[str] = []
        self.account: list[int] = []
        self.loss: list[float | None] = []  # metric in "lower is better" space
        self.family: list[int] = []
        self.title: list[str] = []
        self.sha: list[str | None] = []
        self.node_ts: list[int] = []
        self.result_nodes: list[int] = []  # results and the setup: what a result starts from
        self.results_only: list[int] = []
        self.leaders: list[tuple[float, int]] = []  # ten best (loss, node)
        self.log_tip: dict[int, str] = {}  # account -> log tip sha (after a finished session)
        self.timestamp = start_time(contributions)
        self.n_results = 0
        n_results_planned = round((contributions - 1) * (PAPER_MIX["result"] + PAPER_MIX["result+insight"]) / 1702)
        self.spine_len = max(2, min(400, round(0.04 * max(n_results_planned, 1))))
        self.spine_positions = set(
            sorted(
                self.rng.sample(
                    range(1, max(n_results_planned, 2)), min(self.spine_len - 1, max(n_results_planned - 1, 1))
                )
            )
            + [0]
        )
        self.spine_done = 0
        self.plan = self._plan(contributions, accounts)
        self.run_counter = 0

    # --- planning ---------------------------------------------------------------------------

    def _plan(self, n: int, accounts: int) -> list[str]:
        counts = _scale(PAPER_MIX, n - 1)
        if accounts < 2:  # nobody else to verify
            counts["result"] += counts.pop("verification", 0)
        kinds = [k for k, c in counts.items() if k != "report" for _ in range(c)]
        self.rng.shuffle(kinds)
        # the first few contributions are results, so that everything else has something to build on
        head = min(3, len(kinds))
        for i in range(head):
            if kinds[i] != "result":
                j = kinds.index("result", i) if "result" in kinds[i:] else None
                if j is not None:
                    kinds[i], kinds[j] = kinds[j], kinds[i]
        reports = counts.get("report", 0)
        for r in range(reports):  # evenly spaced, the last one near the end
            kinds.insert(min(len(kinds), round((r + 1) * len(kinds) / reports) - 0), "report")
        return ["setup"] + kinds

    def next_kind(self) -> str:
        i = len(self.kind)
        if i < len(self.plan):
            return self.plan[i]
        mix = list(PAPER_MIX)
        return self.rng.choices(mix, weights=[PAPER_MIX[k] for k in mix])[0]

    # --- choices ----------------------------------------------------------------------------

    def pick_account(self) -> int:
        """One of the generated accounts (an account `append` added by name posts only when named)."""
        return self.rng.choices(range(len(self.cum_weights)), cum_weights=self.cum_weights)[0]

    def _metric_of(self, node: int) -> float:
        value = self.loss[node]
        return BASELINE + 0.03 if value is None else value

    def pick_result_parent(self, mode: str) -> int:
        pool, rng = self.result_nodes, self.rng
        if mode == "uniform":
            return pool[rng.randrange(len(pool))]
        r = rng.random()
        if r < 0.07 and self.leaders:
            return self.leaders[rng.randrange(len(self.leaders))][1]
        if r < 0.10:
            return pool[rng.randrange(len(pool))]
        window = len(pool) if len(pool) < RECENT_WINDOW else RECENT_WINDOW
        cands = [pool[-1 - rng.randrange(window)] for _ in range(3)]
        return min(cands, key=self._metric_of) if rng.random() < 0.6 else cands[0]

    def pick_any(self, mode: str, exclude: set[int]) -> int | None:
        n, rng = len(self.kind), self.rng
        for _ in range(20):
            if mode == "uniform":
                node = rng.randrange(n)
            else:
                r = rng.random()
                if r < 0.05 and self.leaders:
                    node = self.leaders[rng.randrange(len(self.leaders))][1]
                elif r < 0.08:
                    node = rng.randrange(n)
                else:
                    node = n - 1 - rng.randrange(min(n, RECENT_WINDOW))
            if node not in exclude:
                return node
        return None

    def pick_target(self, mode: str, verifier: int) -> int | None:
        pool, rng = self.results_only, self.rng
        if not pool:
            return None
        for _ in range(30):
            if mode == "uniform":
                node = pool[rng.randrange(len(pool))]
            else:
                node = pool[-1 - rng.randrange(min(len(pool), RECENT_WINDOW))]
            if self.account[node] != verifier:
                return node
        for node in reversed(pool):
            if self.account[node] != verifier:
                return node
        return None

    def pick_family(self, account: int, parent: int | None) -> int:
        r = self.rng.random()
        if parent is not None and self.family[parent] >= 0 and r < 0.6:
            return self.family[parent]
        if r < 0.9:
            return self.rng.choice(self.prefs[account])
        return self.rng.randrange(len(FAMILIES))

    def spine_value(self, k: int) -> float:
        span = max(self.spine_len - 1, 1)
        u = self.rng.uniform(-0.3, 0.3) if 0 < k else 0.0
        return FLOOR + (BASELINE - FLOOR) * math.exp(-4.0 * (k + u) / span)

    def add_leader(self, loss: float, node: int) -> None:
        if len(self.leaders) < 10 or loss < self.leaders[-1][0]:
            bisect.insort(self.leaders, (loss, node))
            del self.leaders[10:]

    def best(self) -> float:
        return self.leaders[0][0] if self.leaders else BASELINE + 0.03

    def out_metric(self, loss: float) -> float:
        return round(loss if self.direction == "min" else 5.0 - loss, 4)

    def tick(self) -> int:
        rng = self.rng
        gap = max(1, int(rng.expovariate(1 / 45.0)))
        if rng.random() < 0.005:
            gap += rng.randrange(3600, 6 * 3600)
        self.timestamp += gap
        return self.timestamp


def _scale(mix: dict[str, int], total: int) -> dict[str, int]:
    """Largest-remainder apportionment of `total` in the proportions of `mix`."""
    whole = sum(mix.values())
    exact = {k: v * total / whole for k, v in mix.items()}
    counts = {k: int(x) for k, x in exact.items()}
    left = total - sum(counts.values())
    for k in sorted(exact, key=lambda k: exact[k] - counts[k], reverse=True)[:left]:
        counts[k] += 1
    return counts


# --- the fast-import stream -----------------------------------------------------------------------


def _setup_files() -> dict[str, str]:
    return {
        "agora.toml": "",  # filled in by the caller (depends on metric and direction)
        "program.md": (
            f"# {PROJECT_NAME}\n\nTransfer the weights of pretrained donor models into a randomly initialised\n"
            "hybrid attention/SSM language model, without training on the evaluation texts.\n\n"
            "The primary metric is `bpb` (minimise); reproductions agree within 0.0013.\n"
        ),
        "transfer.py": _transfer_py('{"method": "identity"}'),
    }


def _transfer_py(recipe: str) -> str:
    return f'"""Weight transfer recipe."""\n\nRECIPE = {recipe}\n\n\ndef transfer(model, config):\n    return model\n'


class _Writer:
    """One `git fast-import` process; contributions get marks, their shas come back via get-mark."""

    def __init__(self, repo: Path, trace: _Trace, mode: str):
        self.trace, self.mode = trace, mode
        self.proc = subprocess.Popen(
            ["git", "-C", str(repo), "fast-import", "--quiet", "--done", "--active-branches=1024", "--depth=50"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.buf: list[bytes] = []
        self.pending: list[int] = []  # nodes whose sha is not known yet
        self.mark_of: dict[int, int] = {}
        self.next_mark = 1
        self.seen_accounts: set[int] = set()
        self.new: list[int] = []

    def ref(self, node: int) -> str:
        # fast-import cannot read back by sha what it wrote in this session: use its mark
        mark = self.mark_of.get(node)
        return f":{mark}" if mark is not None else self.trace.sha[node]  # type: ignore[return-value]

    def sha(self, node: int) -> str:
        if self.trace.sha[node] is None:
            self.flush()
        return self.trace.sha[node]  # type: ignore[return-value]

    def commit(
        self, node: int, account: str, ts: int, message: str, parents: list[int], files: dict[str, str] | None
    ) -> None:
        mark = self.next_mark
        self.next_mark += 1
        self.mark_of[node] = mark
        ident = f"{account} <{account}@agora> {ts} +0000\n"
        msg = message.encode()
        parts = [
            f"commit {SCRATCH_REF}\nmark :{mark}\nauthor {ident}committer {ident}data {len(msg)}\n".encode(),
            msg,
            b"\n",
        ]
        if parents:
            parts.append(f"from {self.ref(parents[0])}\n".encode())
            parts += [f"merge {self.ref(p)}\n".encode() for p in parents[1:]]
        for name, text in (files or {}).items():
            data = text.encode()
            parts.append(f"M 100644 inline {name}\ndata {len(data)}\n".encode() + data + b"\n")
        parts.append(b"\n")
        self.buf += parts
        self.pending.append(node)
        self.new.append(node)
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Learn the shas of pending contributions, then append them to their account logs."""
        if not self.pending:
            return
        trace = self.trace
        self.buf += [f"get-mark :{self.mark_of[n]}\n".encode() for n in self.pending]
        self._send()
        for node in self.pending:
            line = self.proc.stdout.readline()  # type: ignore[union-attr]
            if len(line) < 40:
                raise RuntimeError("git fast-import stopped answering")
            trace.sha[node] = line[:40].decode()
        for node in self.pending:
            acct = trace.account[node]
            name = trace.accounts[acct]
            ts = trace.node_ts[node]
            ident = f"{name} <{name}@agora> {ts} +0000\n"
            msg = log_message(name, trace.sha[node]).encode()
            head = f"commit refs/agora/log/{name}\nauthor {ident}committer {ident}data {len(msg)}\n".encode()
            self.buf += [head, msg, b"\n"]
            if acct not in self.seen_accounts:
                self.seen_accounts.add(acct)
                if acct in trace.log_tip:
                    self.buf.append(f"from {trace.log_tip[acct]}\n".encode())
            self.buf.append(f"merge :{self.mark_of[node]}\n\n".encode())
        self.pending = []

    def _send(self) -> None:
        self.proc.stdin.write(b"".join(self.buf))  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        self.buf = []

    def close(self) -> None:
        self.flush()
        self.buf.append(b"done\n")
        self._send()
        self.proc.stdin.close()  # type: ignore[union-attr]
        if self.proc.wait() != 0:
            raise RuntimeError("git fast-import failed")


def _emit(trace: _Trace, w: _Writer, mode: str, kind: str | None = None, account: int | None = None) -> int:
    """Generate one contribution and stream it; returns its node number."""
    rng = trace.rng
    node = len(trace.kind)
    planned = kind is None
    kind = kind or trace.next_kind()
    if account is None:
        account = 0 if kind == "setup" else trace.pick_account()
    tgt = trace.pick_target(mode, account) if kind == "verification" else None
    if kind == "verification" and tgt is None:
        if not planned:
            raise ValueError(f"{trace.accounts[account]} has no result of another account to verify")
        # too early for a verification: swap it with the next planned result
        later = next((j for j in range(node + 1, len(trace.plan)) if trace.plan[j] == "result"), None)
        if later is not None:
            trace.plan[node], trace.plan[later] = trace.plan[later], trace.plan[node]
        kind = "result"
    name = trace.accounts[account]
    ts = trace.tick()
    slots = _slots(rng)
    parents: list[int] = []
    metrics: dict[str, float] = {}
    metadata: dict[str, object] = {}
    files: dict[str, str] | None = None
    target = verdict = None
    tags = list(KIND_TAGS[kind])
    family = -1

    if kind == "setup":
        description = (
            f"Setup: {PROJECT_NAME}\n\nPrimary metric: {trace.metric} "
            f"({'lower' if trace.direction == 'min' else 'higher'} is better, tolerance {TOLERANCE:g})."
        )
        metadata = {"metric": trace.metric, "direction": trace.direction, "tolerance": TOLERANCE}
        files = _setup_files()
        files["agora.toml"] = ProjectConfig(
            name=PROJECT_NAME, metric=trace.metric, direction=trace.direction, tolerance=TOLERANCE
        ).dump()
        loss = None
    elif kind in METRIC_KINDS:
        ordinal = trace.n_results
        trace.n_results += 1
        spine = ordinal in trace.spine_positions and trace.spine_done < trace.spine_len
        if spine:
            first = trace.leaders[0][1] if trace.leaders else 0
            value = trace.spine_value(trace.spine_done)
            trace.spine_done += 1
            if value >= trace.best() - TOLERANCE:
                value = trace.best() - TOLERANCE * (1.5 + rng.random())
        else:
            first = trace.pick_result_parent(mode)
            pm = trace._metric_of(first)
            r = rng.random()
            if r < 0.03:
                value = pm + rng.uniform(0.2, 1.5)
            elif r < 0.15:
                value = pm - abs(rng.gauss(0, 0.01))
            else:
                value = pm + abs(rng.gauss(0, 0.015)) + 0.0005
            value = max(value, trace.best() + 0.003 + abs(rng.gauss(0, 0.002)))
        loss = round(value, 4)
        parents = [first]
        if rng.random() < 0.05 and node > 2:
            for _ in range(rng.choice((1, 2))):
                extra = trace.pick_any(mode, set(parents))
                if extra is not None:
                    parents.append(extra)
        family = trace.pick_family(account, first)
        method = _method(rng, family, slots)
        delta = loss - trace._metric_of(first)
        tweak = rng.choice(TWEAKS).format(**slots)
        if spine and node > 1:
            verdict_text = f"New best: {loss:.4f} bpb, {abs(delta):.4f} better than its parent."
        elif delta > 0.15:
            verdict_text = f"Diverged early; ended at {loss:.4f} bpb ({delta:+.4f})."
            if rng.random() < 0.6:
                tags.append("negative-result")
        else:
            verdict_text = f"{loss:.4f} bpb ({delta:+.4f} against the parent) on {slots['gpu']}."
        description = f"{_cap(method)}, {tweak}\n\n{verdict_text}"
        if kind == "result+insight":
            description += " " + rng.choice(INSIGHT_TEMPLATES).format(
                method=method, Method=_cap(method), method2=_method(rng, rng.randrange(len(FAMILIES)), slots), **slots
            )
        if rng.random() < 0.5:
            tags.append(FAMILIES[family][0])
        metrics = {trace.metric: trace.out_metric(loss)}
        metadata = {"gpu": slots["gpu"], "steps": slots["steps"], "seconds": rng.randrange(120, 3600)}
        trace.run_counter += 1
        recipe = json.dumps(
            {
                "method": FAMILIES[family][0],
                "donor": slots["donor"],
                "rank": slots["rank"],
                "lr": slots["lr"],
                "steps": slots["steps"],
                "run": trace.run_counter,
            }
        )
        files = {"transfer.py": _transfer_py(recipe)}
    elif kind == "verification":
        assert tgt is not None
        parents = [tgt]
        family = trace.family[tgt]
        reported = trace._metric_of(tgt)
        v = rng.random()
        verdict = Verdict.CONFIRMED if v < 0.78 else Verdict.PARTIAL if v < 0.92 else Verdict.FAILED
        value = (
            reported
            + {
                Verdict.CONFIRMED: rng.gauss(0, 0.0005),
                Verdict.PARTIAL: rng.choice((-1, 1)) * rng.uniform(0.0015, 0.01),
                Verdict.FAILED: rng.uniform(0.02, 0.3),
            }[verdict]
        )
        target = w.sha(tgt)
        description = f"Verify: {trace.title[tgt][:70]}\n\n" + VERIFICATION_TEXT[verdict].format(
            value=f"{trace.out_metric(value):.4f}", reported=f"{trace.out_metric(reported):.4f}", gpu=slots["gpu"]
        )
        metadata = {"reproduced": trace.out_metric(value), "gpu": slots["gpu"]}
        loss = None
    elif kind == "report":
        leaders = [n for _, n in trace.leaders[:3]] or [0]
        parents = leaders
        top = ", ".join(FAMILIES[trace.family[n]][0] for n in leaders if trace.family[n] >= 0) or "none yet"
        description = (
            f"Progress report after {node} contributions: best {trace.best():.4f} bpb\n\n"
            f"The leading recipes combine {top}. {len(trace.results_only)} results so far; "
            f"{sum(1 for k in trace.kind if k == 'verification')} verifications. "
            f"Open directions: {rng.choice(FAMILIES)[0]} and {rng.choice(FAMILIES)[0]}."
        )
        loss = None
    else:  # insight, hypothesis, insight+hypothesis: light, mostly on a result
        first = trace.pick_result_parent(mode) if rng.random() < 0.7 else trace.pick_any(mode, set())
        if first is None:
            first = node - 1
        parents = [first]
        if rng.random() < 0.1:
            extra = trace.pick_any(mode, {first})
            if extra is not None:
                parents.append(extra)
        family = trace.pick_family(account, first)
        method = _method(rng, family, slots)
        fill = dict(
            method=method,
            Method=_cap(method),
            method2=_method(rng, rng.randrange(len(FAMILIES)), slots),
            tweak=rng.choice(TWEAKS).format(**slots),
            target=f"{max(FLOOR, trace.best() - rng.uniform(0.001, 0.05)):.3f}",
            **slots,
        )
        if kind == "hypothesis":
            description = rng.choice(HYPOTHESIS_TEMPLATES).format(**fill)
            lo = round(trace.best() - rng.uniform(0.0, 0.03), 3)
            metadata = {"prediction": [lo, round(lo + rng.uniform(0.005, 0.03), 3)]}
            if rng.random() < 0.1:
                tags.append("explore-novel")
        elif kind == "insight+hypothesis":
            description = (
                rng.choice(INSIGHT_TEMPLATES).format(**fill) + "\n\n" + rng.choice(HYPOTHESIS_TEMPLATES).format(**fill)
            )
        else:
            description = rng.choice(INSIGHT_TEMPLATES).format(**fill)
        loss = None

    message = Contribution(
        account=name,
        tags=tuple(tags),
        description=description,
        metrics=metrics,
        metadata=metadata,
        target=target,
        verdict=verdict,
    ).to_message()
    trace.kind.append(kind)
    trace.account.append(account)
    trace.loss.append(loss)
    trace.family.append(family)
    trace.title.append(description.split("\n", 1)[0])
    trace.sha.append(None)
    trace.node_ts.append(ts)
    if kind in METRIC_KINDS:
        trace.result_nodes.append(node)
        trace.results_only.append(node)
        trace.add_leader(loss, node)  # type: ignore[arg-type]
    elif kind == "setup":
        trace.result_nodes.append(node)
    w.commit(node, name, ts, message, parents, files)
    return node


def _finish(path: Path, trace: _Trace, w: _Writer, started: float, commit_graph: bool) -> TraceInfo:
    w.close()
    subprocess.run(["git", "-C", str(path), "update-ref", "-d", SCRATCH_REF], check=True)
    out = subprocess.run(
        ["git", "-C", str(path), "for-each-ref", "--format=%(objectname) %(refname)", "refs/agora/log/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    index = {name: i for i, name in enumerate(trace.accounts)}
    for line in out.splitlines():
        sha, ref = line.split(" ", 1)
        account = ref.rsplit("/", 1)[1]
        if account in index:  # not the logs others published to the generated project (a benchmark's posts)
            trace.log_tip[index[account]] = sha
    if commit_graph:
        subprocess.run(
            ["git", "-C", str(path), "commit-graph", "write", "--reachable"], check=True, capture_output=True
        )
    with open(path / STATE_FILE, "wb") as fh:
        pickle.dump(trace.__dict__, fh, protocol=pickle.HIGHEST_PROTOCOL)  # plain data: loads from any module name
    return _info(path, trace, started, [trace.sha[n] for n in w.new])  # type: ignore[misc]


def _info(path: Path, trace: _Trace, started: float, new: list[str]) -> TraceInfo:
    counts: dict[str, int] = {}
    for kind in trace.kind:
        for tag in KIND_TAGS[kind]:
            counts[tag] = counts.get(tag, 0) + 1
    return TraceInfo(
        path=str(path),
        contributions=len(trace.kind),
        accounts=list(trace.accounts),
        tag_counts=counts,
        setup=trace.sha[0] or "",
        best=trace.out_metric(trace.best()),
        spine=trace.spine_done,
        first_timestamp=trace.node_ts[0],
        last_timestamp=trace.node_ts[-1],
        seconds=time.perf_counter() - started,
        parent_mode=trace.parent_mode,
        new=new,
    )


def generate(
    path: Path,
    contributions: int,
    accounts: int,
    seed: int = 0,
    parent_mode: str = "recent",
    metric: str = "bpb",
    direction: str = "min",
    commit_graph: bool = False,
) -> TraceInfo:
    """Write a synthetic Agora project with this many contributions into a new bare repository."""
    if parent_mode not in ("recent", "uniform"):
        raise ValueError("parent_mode is recent or uniform")
    started = time.perf_counter()
    path = Path(path)
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    trace = _Trace(contributions, accounts, seed, parent_mode, metric, direction)
    w = _Writer(path, trace, parent_mode)
    for _ in range(contributions):
        _emit(trace, w, parent_mode)
    return _finish(path, trace, w, started, commit_graph)


def append(
    path: Path,
    account: str | None = None,
    n: int = 1,
    parent_mode: str | None = None,
    kind: str | None = None,
    commit_graph: bool = False,
) -> TraceInfo:
    """Append n contributions to a generated project (by `account`, else drawn as usual)."""
    started = time.perf_counter()
    path = Path(path)
    with open(path / STATE_FILE, "rb") as fh:
        trace = _Trace.__new__(_Trace)
        trace.__dict__.update(pickle.load(fh))
    mode = parent_mode or trace.parent_mode
    acct = None
    if account is not None:
        if account not in trace.accounts:
            trace.accounts.append(account)
            trace.prefs.append(trace.rng.sample(range(len(FAMILIES)), 3))
        acct = trace.accounts.index(account)
    if kind is not None and kind not in KIND_TAGS or kind == "setup":
        raise ValueError(f"cannot append a {kind}")
    w = _Writer(path, trace, mode)
    for _ in range(n):
        _emit(trace, w, mode, kind=kind, account=acct)
    return _finish(path, trace, w, started, commit_graph)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the bare repository to create (or to append to)")
    ap.add_argument("--contributions", type=int, default=PAPER_CONTRIBUTIONS)
    ap.add_argument("--accounts", type=int, default=PAPER_ACCOUNTS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parents", choices=["recent", "uniform"], default=None)
    ap.add_argument("--metric", default="bpb")
    ap.add_argument("--direction", choices=["min", "max"], default="min")
    ap.add_argument("--paper", action="store_true", help="paper scale: 1,703 contributions, 17 accounts")
    ap.add_argument("--commit-graph", action="store_true", help="write a commit-graph afterwards")
    ap.add_argument("--append", type=int, metavar="N", help="append N contributions to an existing trace")
    ap.add_argument("--account", help="with --append: the publishing account")
    ap.add_argument("--kind", choices=sorted(set(KIND_TAGS) - {"setup"}), help="with --append: what to append")
    args = ap.parse_args(argv)
    if args.append:
        info = append(args.out, args.account, args.append, args.parents, args.kind, args.commit_graph)
    else:
        if args.paper:
            args.contributions, args.accounts = PAPER_CONTRIBUTIONS, PAPER_ACCOUNTS
        info = generate(
            args.out,
            args.contributions,
            args.accounts,
            args.seed,
            args.parents or "recent",
            args.metric,
            args.direction,
            args.commit_graph,
        )
    summary = info.to_dict()
    if len(summary["new"]) > 5:
        summary["new"] = summary["new"][:2] + ["..."] + summary["new"][-2:]
    if len(summary["accounts"]) > 20:
        summary["accounts"] = summary["accounts"][:5] + [f"... {len(info.accounts)} in all"]
    json.dump(summary, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
