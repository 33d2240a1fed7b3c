import os
import sys

# `python -m hybridlm` puts the working directory first on sys.path. A contribution's folder must not
# shadow the modules (json, torch, tokenizers, ...) of the evaluator, least of all of the scorer; the
# build step appends the transfer file's own folder for its helper modules.
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]

from hybridlm.cli import main  # noqa: E402

raise SystemExit(main())
