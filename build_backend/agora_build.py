"""setuptools' build backend, with the data files (the man pages) in editable installs too.

setuptools' `editable_wheel` installs data files only when `Distribution.has_data()` says so, a method
distutils never had (it has `has_data_files`), so `pip install -e .` silently left out
`share/man/man1` and `git agora --help` found no page. Naming the one after the other fixes that;
everything else is setuptools' own backend.
"""

from setuptools.build_meta import *  # noqa: F403 (the backend's hooks, unchanged)
from setuptools.dist import Distribution

if not hasattr(Distribution, "has_data"):
    Distribution.has_data = Distribution.has_data_files  # type: ignore[attr-defined]
