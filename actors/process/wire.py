"""The frames a ``ProcessSlot`` and its child process exchange over their two pipes.

Every frame is an 8-byte big-endian length, then that many bytes of pickle. The parent sends
one handshake frame (``Handshake``), then one request frame per call (``(reference, args,
kwargs)``); an empty frame asks the child to exit. The child answers each request with exactly
one reply frame (``(RETURNED, value)``, ``(RAISED, ...)`` or ``(UNPICKLABLE_RESULT, ...)``) and
never writes anything else, so a reply is always the next frame on the pipe.

Pickle is safe here: both ends are the same program, parent and its own child, and nothing is
stored. No callable is ever pickled: a request names its function by reference.
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import BinaryIO, Final, TypedDict

HEADER: Final = struct.Struct(">Q")
PICKLE_PROTOCOL: Final = pickle.HIGHEST_PROTOCOL

STOP: Final = b""
"""The payload of the frame that asks the child to exit (no pickle can be empty)."""

# The first item of a reply says what the rest of it holds.
RETURNED: Final = 0
"""``(RETURNED, value)``: the task returned ``value``."""
RAISED: Final = 1
"""``(RAISED, pickled_error | None, error_type, error_message, traceback, reason)``.

The exception is pickled on its own so that the reply always loads even when the exception
does not; ``reason`` says why it is ``None``.
"""
UNPICKLABLE_RESULT: Final = 2
"""``(UNPICKLABLE_RESULT, value_type, reason)``: the task returned something pickle refuses."""


class Handshake(TypedDict):
    """The first frame: what the child needs to import what the parent imports."""

    sys_path: list[str]


def frame(payload: bytes) -> bytes:
    """Return ``payload`` with its length header, ready for one ``write_all``."""
    return HEADER.pack(len(payload)) + payload


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the blocking file descriptor ``fd`` (on the calling thread).

    Raises:
        BrokenPipeError: the reading end is closed (its process died).
    """
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_frame(stream: BinaryIO) -> bytes | None:
    """Read one frame's payload from a buffered binary stream; ``None`` at a clean end of stream.

    Raises:
        EOFError: the stream ended inside a frame.
    """
    header = stream.read(HEADER.size)
    if not header:
        return None
    if len(header) < HEADER.size:
        raise EOFError("the pipe closed inside a frame header")
    (size,) = HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError(f"the pipe closed after {len(payload)} of {size} bytes of a frame")
    return payload
