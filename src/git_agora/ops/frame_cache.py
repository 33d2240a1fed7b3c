"""The frame of the last analysis kept beside the index (`.git/agora/index/frame.state`), so that the
next one reuses it or adds what is new (`frontier.incremental`) instead of building it again.

Derived data, like the follow-on and embedding caches: not part of the index, not compared by
`index --check`, and deleting it costs one cold build. It names what it was computed from (the
settings and trust root as a key, the node shas and log positions), which `incremental.restore`
checks against the index every time, so no change of the index can make it wrong: at worst it is not
used. One file: a header (JSON: the key, and each array's dtype, length and offset) then the arrays,
each aligned to 64 bytes, read back memory-mapped (nothing is copied until used). It is written to a
temporary file and renamed into place, so a crash leaves the old file or the new one; a file that
cannot be read, is truncated or names arrays it lacks counts as missing. On a read-only `.git/agora`
nothing is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..drafts import draft_of, sweep_drafts
from ..followons_cache import cached_counter, write_follow_ons
from ..frontier.analyze import AnalyzeConfig, frame_for
from ..frontier.followons import FollowOns
from ..frontier.frame import Frame
from ..frontier.incremental import FLAGS, FrameState, capture, dangling_of, fits, restore, state_key
from ..index.segments import WriteFailed
from ..index.state import index_dir
from ..project import Project

Aside = Callable[[Callable[[], None]], None]  # runs a write of the kept state, here or on a thread


def _here(write: Callable[[], None]) -> None:
    write()


FRAME_FILE = "frame.state"
MAGIC = b"AGFRAME1"
ALIGN = 64
_STRINGS = ("sha", "dangling", "accounts")


def analysis_frame(project: Project, contributions: pa.Table, config: AnalyzeConfig, aside: Aside = _here) -> Frame:
    """The frame `frontier.analyze.analyze` reads, from the kept state when it still describes the
    index (`incremental.restore`), else built cold (n(v) from the follow-on cache); the state kept for
    the next run when it changed, written by `aside` (`writes_aside`: while the caller goes on)."""
    key = state_key(config.direction, config.tolerance, config.weights, config.root)
    path = index_dir(project.repo) / FRAME_FILE
    state = read_state(path)
    found = None
    if state is not None:
        found = restore(
            state,
            contributions,
            key,
            direction=config.direction,
            tolerance=config.tolerance,
            weights=config.weights,
            root=config.root,
        )
    if found is not None:
        frame, kept = found
        if kept is not state:
            aside(_keeping(path, _frozen(kept), project))
        return frame
    seen: list[np.ndarray] = []
    counter = cached_counter(project.repo)

    def counting(graph, qualifying):
        seen.append(np.asarray(qualifying, dtype=bool))
        return counter(graph, qualifying)

    frame = frame_for(contributions, config, counting)
    qualifying = seen[-1] if seen else np.zeros(frame.n, dtype=bool)
    aside(_keeping(path, _frozen(capture(frame, key, qualifying, dangling_of(frame.graph))), None))
    return frame


@contextmanager
def writes_aside() -> Iterator[Aside]:
    """An `aside` for `analysis_frame` that writes the kept state on a thread while the analysis goes
    on (at a million contributions, after a new one: 154 MB of state and 52 MB of follow-on counts,
    0.4 s, most of it in system calls that hold no lock), every write finished, and its exception
    raised, when the block ends."""
    started: list[Future] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agora-keep") as pool:
        yield lambda write: started.append(pool.submit(write))
    for future in started:
        future.result()


def _keeping(path: Path, state: FrameState, project: Project | None) -> Callable[[], None]:
    """The writes that keep `state`: the state file, then (`project`: a restored state) the follow-on
    cache the other commands read."""

    def write() -> None:
        write_state(path, state)
        if project is not None:
            _keep_follow_ons(project, state)

    return write


def _frozen(state: FrameState) -> FrameState:
    """The state with its arrays read-only: written while the analysis reads the frame that shares them,
    nothing may change them meanwhile (an attempt raises, as on a state read back memory-mapped)."""
    for values in state.arrays.values():
        values.setflags(write=False)
    return state


def _keep_follow_ons(project: Project, state: FrameState) -> None:
    """The follow-on cache the other commands read (`followons_cache`), as this state counted it."""
    qualifying = (np.asarray(state.arrays["flags"], np.uint16) >> FLAGS.index("qualifying")) & 1 == 1
    try:
        write_follow_ons(project.repo, FollowOns(state.sha, qualifying, np.asarray(state.arrays["follow_ons"])))
    except WriteFailed:
        pass  # read-only or full: the counts are right, the next reader updates from the older file


def read_state(path: Path) -> FrameState | None:
    """The kept state, memory-mapped; None when there is none or it cannot be read whole."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(MAGIC) + 8)
            if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
                return None
            (size,) = struct.unpack("<Q", head[len(MAGIC) :])
            header = json.loads(handle.read(size))
        data = np.memmap(path, dtype=np.uint8, mode="r")
        arrays = {}
        for name, (dtype, length, offset) in header["arrays"].items():
            width = np.dtype(dtype).itemsize
            if offset + width * length > len(data) or offset % ALIGN:
                return None
            arrays[name] = data[offset : offset + width * length].view(dtype)
        strings = {name: _string_array(arrays.pop(f"{name}.offsets"), arrays.pop(f"{name}.data")) for name in _STRINGS}
        state = FrameState(
            str(header["key"]), strings["sha"], strings["dangling"], strings["accounts"], arrays, bool(header["ranked"])
        )
        return state if fits(state) else None
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None


def _string_array(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    if len(offsets) == 0:
        raise ValueError("no offsets")
    if int(offsets[-1]) > len(data) or (np.diff(offsets) < 0).any():
        raise ValueError("offsets out of range")
    return pa.Array.from_buffers(pa.string(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def write_state(path: Path, state: FrameState) -> None:
    """Replace the kept state (temporary file, then rename); nothing on a read-only or full disk."""
    arrays: dict[str, np.ndarray] = {}
    for name in _STRINGS:
        arrays[f"{name}.offsets"], arrays[f"{name}.data"] = _string_buffers(getattr(state, name))
    arrays.update({name: np.ascontiguousarray(value) for name, value in state.arrays.items()})
    sizes = {name: (value.dtype.str, int(len(value))) for name, value in arrays.items()}
    room = _aligned(len(MAGIC) + 8 + len(json.dumps(sizes)) + 40 * len(arrays) + 200)  # offsets fill in below
    places, offset = {}, room
    for name, value in arrays.items():
        places[name] = offset
        offset = _aligned(offset + value.nbytes)
    layout = {name: [dtype, length, places[name]] for name, (dtype, length) in sizes.items()}
    text = json.dumps({"key": state.key, "ranked": state.ranked, "arrays": layout}).encode()
    if len(MAGIC) + 8 + len(text) > room:
        raise AssertionError("the frame state's header outgrew its room")
    sweep_drafts(path)
    tmp = draft_of(path)
    try:
        with open(tmp, "wb") as out:
            out.write(MAGIC + struct.pack("<Q", len(text)) + text)
            for name, value in arrays.items():
                out.seek(places[name])
                if value.nbytes:
                    out.write(value.data)
            out.truncate(offset)
        os.replace(tmp, path)
    except OSError:  # read-only or full: the next run builds it again
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _string_buffers(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array's offsets (from 0) and bytes."""
    strings = strings.cast(pa.string()).fill_null("")
    if len(strings) == 0:
        return np.zeros(1, np.int32), np.zeros(0, np.uint8)
    offsets = np.frombuffer(strings.buffers()[1], np.int32)[strings.offset : strings.offset + len(strings) + 1]
    data = strings.buffers()[2]
    body = np.frombuffer(data, np.uint8)[offsets[0] : offsets[-1]] if data is not None else np.zeros(0, np.uint8)
    return offsets - offsets[0], body


def _aligned(offset: int) -> int:
    return (offset + ALIGN - 1) // ALIGN * ALIGN
