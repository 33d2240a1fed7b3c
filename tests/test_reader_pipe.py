"""`reader.record_blocks`: git's NUL-separated records read from a pipe in blocks of whole records, the
same records however the writer splits its writes and whatever the block size."""

from __future__ import annotations

import os
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from git_agora.index import reader

records = st.lists(st.binary(min_size=1, max_size=300).map(lambda b: b.replace(b"\0", b"x")), max_size=40)


def _through_a_pipe(data: bytes, writes: list[int], size: int) -> list[bytes]:
    """The blocks `record_blocks` reads while another thread writes `data` in pieces of `writes` bytes."""
    read_end, write_end = os.pipe()

    def write() -> None:
        at, pieces = 0, iter(writes)
        while at < len(data):
            step = next(pieces, len(data))
            os.write(write_end, data[at : at + step])
            at += step
        os.close(write_end)

    writer = threading.Thread(target=write)
    writer.start()
    with os.fdopen(read_end, "rb") as stream:
        blocks = list(reader.record_blocks(stream, size))
    writer.join()
    return blocks


@settings(max_examples=150, deadline=None)
@given(records, st.lists(st.integers(1, 700), max_size=30), st.integers(2, 600))
def test_blocks_hold_the_records_as_written(written, writes, size):
    data = b"".join(record + b"\0" for record in written)  # as `git log -z` prints them
    blocks = _through_a_pipe(data, writes, size)
    assert [r for block in blocks for r in reader.records(block)] == written
    assert all(block for block in blocks), "no empty block (an empty block would be an empty record)"
    assert all(len(block) <= max(size, max(map(len, written), default=0) * 2 + 2) for block in blocks)


def test_a_record_longer_than_the_block_comes_whole():
    long = b"y" * 5000
    blocks = _through_a_pipe(b"a\0" + long + b"\0b\0", [3, 4000, 10], 64)
    assert [r for block in blocks for r in reader.records(block)] == [b"a", long, b"b"]
