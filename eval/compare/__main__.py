"""`python -m eval.compare`: see run.py."""

import sys

from eval.compare.run import main

sys.exit(main())
