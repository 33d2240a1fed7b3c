"""Files handed to pyarrow already open, named by the operating system's bytes: pyarrow encodes a path
given as a string as UTF-8, which a folder whose name is not UTF-8 (a name Linux and git accept) cannot
be, so a clone under such a folder could write and read no index at all."""

from __future__ import annotations

import os

import pyarrow as pa


def reading(path: str | os.PathLike[str]) -> pa.NativeFile:
    return pa.OSFile(os.fsencode(path), "rb")


def writing(path: str | os.PathLike[str]) -> pa.NativeFile:
    return pa.OSFile(os.fsencode(path), "wb")
