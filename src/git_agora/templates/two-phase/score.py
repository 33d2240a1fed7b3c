"""The scorer (an evaluator file: the setup fixes it, and a contribution that changes it is invalid).
It reads the polynomial the build wrote to ARTIFACT/coefficients.json and prints its worst error
against sin(x) on [0, pi], measured on a fine grid with numpy (the setup's pinned scorer package).

    python3 score.py ARTIFACT            prints {"max_error": ..., "degree": ...}
    python3 score.py ARTIFACT --quick    a coarser grid (not comparable)

The artifact is a JSON list of at most DEGREE + 1 finite numbers, the coefficient of x**0 first.
"""

import json
import math
import os
import sys

import numpy as np

DEGREE = 5  # the highest power a solution may use
GRID = 100_001  # points of [0, pi] where the error is measured
QUICK_GRID = 1_001


def main(argv):
    if not argv:
        raise SystemExit("usage: python3 score.py ARTIFACT [--quick]")
    try:
        with open(os.path.join(argv[0], "coefficients.json")) as handle:
            coefficients = json.load(handle)
    except (OSError, ValueError) as exc:  # ValueError: not JSON
        raise SystemExit(f"coefficients.json cannot be read: {exc}") from None
    if not isinstance(coefficients, list) or not 1 <= len(coefficients) <= DEGREE + 1:
        raise SystemExit(f"coefficients.json must be a list of 1 to {DEGREE + 1} numbers")
    if not all(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) for c in coefficients):
        raise SystemExit("every coefficient must be a finite number")
    x = np.linspace(0.0, math.pi, QUICK_GRID if "--quick" in argv[1:] else GRID)
    error = np.abs(np.polynomial.polynomial.polyval(x, np.array(coefficients, dtype=np.float64)) - np.sin(x))
    print(json.dumps({"max_error": float(error.max()), "degree": len(coefficients) - 1}))


if __name__ == "__main__":
    main(sys.argv[1:])
