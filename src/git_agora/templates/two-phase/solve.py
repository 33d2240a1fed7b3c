"""The build step: the file to change. It writes a polynomial of degree at most 5 that approximates
sin(x) on [0, pi] to ARTIFACT/coefficients.json (the coefficient of x**0 first); the project's fixed
scorer (`python3 score.py ARTIFACT`) measures its worst error on [0, pi].

    python3 solve.py ARTIFACT

The baseline is the Taylor series at 0, good near 0 and poor near pi.
"""

import json
import math
import os
import sys


def coefficients():
    return [0.0, 1.0, 0.0, -1 / math.factorial(3), 0.0, 1 / math.factorial(5)]


def main(argv):
    if len(argv) != 1:
        raise SystemExit("usage: python3 solve.py ARTIFACT")
    os.makedirs(argv[0], exist_ok=True)
    with open(os.path.join(argv[0], "coefficients.json"), "w") as handle:
        json.dump(coefficients(), handle)


if __name__ == "__main__":
    main(sys.argv[1:])
