"""The synthetic tasks' landscapes: the true loss of a knob setting, and what the evaluator measures.

This file is copied into each synthetic project as one of its evaluator files (fixed by the setup), and
the harness imports it to judge runs on the true loss, which the workers never see. Standard library
only; every function is pure and deterministic (the noise is drawn from a hash of the seed and the
setting, so a verification reproduces the value exactly and a replicate under another seed gets
another draw).

Every knob holds an integer level (0 .. levels-1); the loss is minimised.

- ``noisy``: a smooth bowl over 8 knobs of unequal weight, optimum 1.0; measured = true + Gaussian
  luck with a standard deviation of 0.01, the project's tolerance. Near the optimum most one-level
  steps change the true loss by less than the luck.
- ``deceptive``: a bowl over 5 knobs (optimum 1.0 without the switches) and two switches, SWITCH_A and
  SWITCH_B: each alone costs 0.12, both together gain 0.35 (optimum 0.65). Single-knob descent from
  the best never turns one switch on, so it stalls at 1.0. Deterministic.
- ``wide``: a bowl over 24 knobs whose weights fall geometrically (0.25 x 0.85^i), optimum 1.0:
  a few knobs matter a lot, most a little. Deterministic.
"""

from __future__ import annotations

import random

NOISY_WEIGHTS = (0.40, 0.30, 0.20, 0.12, 0.08, 0.05, 0.03, 0.02)
NOISY_OPTIMUM = (6, 2, 7, 1, 5, 3, 8, 0)
NOISY_LEVELS = 9
NOISE_SD = 0.01

DECEPTIVE_WEIGHTS = (0.30, 0.20, 0.15, 0.10, 0.05)
DECEPTIVE_OPTIMUM = (6, 1, 5, 3, 7)
DECEPTIVE_LEVELS = 9
SWITCH_ALONE = 0.12
SWITCH_BOTH = -0.35

WIDE_KNOBS = 24
WIDE_WEIGHTS = tuple(0.25 * 0.85**i for i in range(WIDE_KNOBS))
WIDE_OPTIMUM = tuple((3 * i + 1) % 7 for i in range(WIDE_KNOBS))
WIDE_LEVELS = 7


def noisy_names() -> list[str]:
    return [f"K{i}" for i in range(len(NOISY_WEIGHTS))]


def deceptive_names() -> list[str]:
    return [f"D{i}" for i in range(len(DECEPTIVE_WEIGHTS))] + ["SWITCH_A", "SWITCH_B"]


def wide_names() -> list[str]:
    return [f"W{i:02d}" for i in range(WIDE_KNOBS)]


def bowl(levels: list[int], optimum: tuple[int, ...], weights: tuple[float, ...], span: int) -> float:
    """1 + sum of w_i ((x_i - o_i) / (span - 1))^2: 1.0 at the optimum."""
    return 1.0 + sum(w * ((x - o) / (span - 1)) ** 2 for x, o, w in zip(levels, optimum, weights))


def true_loss(task: str, values: dict[str, int]) -> float:
    """The loss without luck, which only the harness knows."""
    if task == "noisy":
        return bowl([values[n] for n in noisy_names()], NOISY_OPTIMUM, NOISY_WEIGHTS, NOISY_LEVELS)
    if task == "deceptive":
        loss = bowl([values[f"D{i}"] for i in range(5)], DECEPTIVE_OPTIMUM, DECEPTIVE_WEIGHTS, DECEPTIVE_LEVELS)
        a, b = bool(values["SWITCH_A"]), bool(values["SWITCH_B"])
        return loss + (SWITCH_BOTH if a and b else SWITCH_ALONE * (a + b))
    if task == "wide":
        return bowl([values[n] for n in wide_names()], WIDE_OPTIMUM, WIDE_WEIGHTS, WIDE_LEVELS)
    raise ValueError(f"unknown task {task!r}")


def optimum(task: str) -> float:
    return {"noisy": 1.0, "deceptive": 1.0 + SWITCH_BOTH, "wide": 1.0}[task]


def luck(seed: int, values: dict[str, int]) -> float:
    """The noisy task's seed-dependent luck: Gaussian, sd NOISE_SD, fixed by the seed and the setting."""
    setting = ",".join(f"{name}={values[name]}" for name in noisy_names())
    return random.Random(f"{seed}|{setting}").gauss(0.0, NOISE_SD)


def measured(task: str, values: dict[str, int]) -> float:
    """What the evaluator prints: the true loss, plus luck on the noisy task (its SEED knob)."""
    loss = true_loss(task, values)
    if task == "noisy":
        loss += luck(int(values["SEED"]), values)
    return round(loss, 6)
