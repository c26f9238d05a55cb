"""The pipe between a worker and its child processes: length-prefixed pickles.

Both ends are ours (the same interpreter and the same code), so pickle is safe
here; the frames carry claimed jobs one way and outcomes the other.
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import Any

_HEADER = struct.Struct("!Q")


def send(fd: int, message: Any) -> None:
    """Write one message whole (the reader blocks until it has all of it)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def receive(fd: int) -> Any:
    """Read one message; ``EOFError`` when the other end closed (or died)."""
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size))
    return pickle.loads(_read_exactly(fd, size))


def _read_exactly(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("the other end of the pipe closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
