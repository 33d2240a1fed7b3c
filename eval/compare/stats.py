"""The comparison's statistics: pure functions over plain lists (no Git, no disk), tested on hand-made inputs.

- ``t_interval``: mean and the two-sided 95% Student-t confidence interval over seeds (one value per
  community run; the unit of analysis is the whole run, as the paper's Appendix C asks).
- ``effective_count``: exp(entropy) of cluster sizes, the project's effective cluster count
  (``frontier.clusters``): 1 for one cluster, k for k equal clusters.
- ``equal_score_pairs``: pairs of results from different accounts whose scores differ by at most the
  tolerance (the paper's "parallel rediscovery", section 4.6).
- ``identical_choice_pairs``: pairs of results from different accounts that evaluated the same choices.
- ``repeats``: results whose choices were already evaluated earlier in the run (by anyone, the
  baseline included): evaluations that could not teach the community anything new.
- ``unchanged``: results whose score equals their parent's within the tolerance: the change did
  nothing measurable (a knob the chosen method ignores, say); the other kind of wasted evaluation.
- ``first_new_best``: the 1-based position of the first result that beats the starting score by more
  than the tolerance; None when none does.
- ``best_so_far``: the running best (smaller is better).
- ``reported_best``: the result a community hands in: the setting of lowest mean measured value.
- ``first_reaching``: evaluations spent until a result's true loss first reaches a target.
- ``corrected_level``, ``non_inferiority`` (with ``t_cdf``, ``t_upper_quantile``): the confirmatory
  question's test (`QUESTION-11.md`): Agora no worse than an arm by more than a margin, the one-sided
  upper bound's level divided by the comparisons and by the questions asked so far.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t, t_{0.975, df}, df = 1..30 (beyond: the normal's 1.96 is
# within 2% of the exact value, and this harness runs far fewer seeds).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile(df: int) -> float:
    """t_{0.975} with ``df`` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("a t-interval needs at least two values")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t-interval of the mean. One value: the interval is the value itself
    (nan half-width would hide the mean); no values: all nan."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not xs:
        return math.nan, math.nan, math.nan
    mean = sum(xs) / len(xs)
    if len(xs) == 1:
        return mean, mean, mean
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    half = t_quantile(len(xs) - 1) * sd / math.sqrt(len(xs))
    return mean, mean - half, mean + half


def effective_count(sizes: Sequence[int]) -> float:
    """exp(-sum p ln p) over cluster sizes (zeros ignored); 0 when there is nothing."""
    total = sum(s for s in sizes if s > 0)
    if total == 0:
        return 0.0
    shares = [s / total for s in sizes if s > 0]
    return math.exp(-sum(p * math.log(p) for p in shares))


def equal_score_pairs(accounts: Sequence[str], scores: Sequence[float], tolerance: float = 1e-6) -> int:
    """Pairs (i < j) with different accounts and |score_i - score_j| <= tolerance."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    pairs = 0
    for a, i in enumerate(order):
        for j in order[a + 1 :]:
            if scores[j] - scores[i] > tolerance:
                break
            pairs += accounts[i] != accounts[j]
    return pairs


def identical_choice_pairs(accounts: Sequence[str], choices: Sequence[Hashable]) -> int:
    """Pairs (i < j) with different accounts and equal choice sets (any hashable fingerprint)."""
    pairs = 0
    for i in range(len(choices)):
        for j in range(i + 1, len(choices)):
            pairs += accounts[i] != accounts[j] and choices[i] == choices[j]
    return pairs


def repeats(choices: Sequence[Hashable], seen: Sequence[Hashable] = ()) -> int:
    """How many of ``choices`` (in evaluation order) repeat an earlier one or one of ``seen``."""
    known = set(seen)
    count = 0
    for c in choices:
        count += c in known
        known.add(c)
    return count


def unchanged(parent_scores: Sequence[float], scores: Sequence[float], tolerance: float = 1e-6) -> int:
    """How many scores equal their parent's score within the tolerance."""
    return sum(abs(s - p) <= tolerance for p, s in zip(parent_scores, scores))


def first_new_best(start: float, scores: Sequence[float], tolerance: float = 1e-6) -> int | None:
    """1-based position of the first score below ``start - tolerance`` (smaller is better)."""
    for i, score in enumerate(scores):
        if score < start - tolerance:
            return i + 1
    return None


def best_so_far(start: float, scores: Sequence[float]) -> list[float]:
    """The running minimum after each score, starting from ``start``."""
    out, best = [], start
    for score in scores:
        best = min(best, score)
        out.append(best)
    return out


def reported_best(settings: Sequence[Hashable], measured: Sequence[float]) -> int | None:
    """The position of the result a community would hand in: the setting with the lowest mean measured
    value over all its evaluations (replicates and repeats of one setting merged), its first result.
    The same rule for every arm; None without results."""
    totals: dict[Hashable, list[float]] = {}
    first: dict[Hashable, int] = {}
    for i, (setting, value) in enumerate(zip(settings, measured)):
        totals.setdefault(setting, []).append(value)
        first.setdefault(setting, i)
    if not totals:
        return None
    best = min(totals, key=lambda s: (sum(totals[s]) / len(totals[s]), first[s]))
    return first[best]


def first_reaching(true_losses: Sequence[float], spent: Sequence[int], target: float) -> int | None:
    """Evaluations spent (verifications and replicates included) when the first result whose true loss
    is at most ``target`` came in; None when none did."""
    for loss, used in zip(true_losses, spent):
        if loss <= target:
            return used
    return None


# The confirmatory question's statistics (`QUESTION-11.md`, `confirm.py`): a one-sided non-inferiority
# test per task and arm, its level corrected (Bonferroni) for every comparison of the run and for every
# question asked so far, so that each further question makes the test harder.


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if not 0.0 <= x <= 1.0:
        raise ValueError("x must lie in [0, 1]")
    if x in (0.0, 1.0):
        return x
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("df must be at least 1")
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_upper_quantile(p: float, df: int) -> float:
    """The t with P(T > t) = ``p`` (0 < p < 1/2): the one-sided critical value, by bisection on the cdf."""
    if not 0.0 < p < 0.5:
        raise ValueError("p must lie in (0, 1/2)")
    low, high = 0.0, 1.0
    while 1.0 - t_cdf(high, df) > p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if 1.0 - t_cdf(middle, df) > p:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def corrected_level(alpha: float, comparisons: int, questions: int) -> float:
    """Bonferroni: the one-sided level of each test when a run makes ``comparisons`` tests and ``questions``
    questions have been asked so far (this one included), so that the chance of any false claim of
    non-inferiority across all of them stays at most ``alpha``."""
    if comparisons < 1 or questions < 1 or not 0.0 < alpha < 1.0:
        raise ValueError("need alpha in (0, 1) and at least one comparison and one question")
    return alpha / (comparisons * questions)


@dataclass(frozen=True)
class NonInferiority:
    """One task and arm: the paired excess loss of the reference (Agora minus the arm, per seed; positive:
    Agora worse), its mean, its one-sided upper confidence bound at the corrected level, and whether the
    bound lies below the margin (Agora is no worse than the arm by more than the margin)."""

    n: int
    mean: float
    sd: float
    level: float  # the one-sided level of this test (already corrected)
    critical: float  # t_{1 - level, n - 1}
    upper: float  # mean + critical * sd / sqrt(n)
    margin: float

    @property
    def non_inferior(self) -> bool:
        return self.upper < self.margin


def non_inferiority(excess: Sequence[float], margin: float, level: float) -> NonInferiority:
    """The test on paired differences ``excess`` (reference minus arm, one per seed) at one-sided ``level``."""
    xs = [float(v) for v in excess]
    if len(xs) < 2:
        raise ValueError("a non-inferiority test needs at least two paired differences")
    if margin <= 0:
        raise ValueError("the margin must be positive")
    mean = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    critical = t_upper_quantile(level, len(xs) - 1)
    return NonInferiority(len(xs), mean, sd, level, critical, mean + critical * sd / math.sqrt(len(xs)), margin)
