"""The worker process's side of a ``ProcessSlot``: run the calls its parent sends, one at a time.

``ProcessSlot`` starts this with ``python -c`` and a one-line bootstrap that calls ``main``, so
the child never imports the user's ``__main__`` (a script without an ``if __name__ ==
"__main__"`` guard would otherwise start again in every child). The protocol is in
``actors.process.wire``.

The child must never outlive its parent. Between calls its main thread reads the request pipe,
which ends when the parent dies; during a call the task may run for ever, so a daemon thread
reads the *lifeline*, a pipe the parent never writes, and ends the process when it closes.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import BinaryIO, Final

from actors.process.wire import (
    PICKLE_PROTOCOL,
    RAISED,
    RETURNED,
    STOP,
    UNPICKLABLE_RESULT,
    Handshake,
    frame,
    read_frame,
    write_all,
)
from actors.references import resolve

ORPHANED_EXIT: Final = 70
"""The exit status when the lifeline closed: the parent is gone (nobody reads it; it helps debugging)."""

_READ_BUFFER: Final = 1 << 16


def main(argv: Sequence[str]) -> None:
    """Serve calls until the parent asks to stop or goes away (runs on the child's main thread).

    Args:
        argv: the request pipe's, reply pipe's and lifeline's file descriptors, as decimal strings.
    """
    request_fd, reply_fd, lifeline_fd = (int(arg) for arg in argv)
    for fd in (request_fd, reply_fd, lifeline_fd):
        # A process a task starts must not hold these: the parent and this process count on
        # the pipes closing when the other end's process exits.
        os.set_inheritable(fd, False)
    threading.Thread(
        target=_exit_when_orphaned, args=(lifeline_fd,), name="lifeline-watch", daemon=True
    ).start()
    with open(request_fd, "rb", buffering=_READ_BUFFER) as requests:
        try:
            payload = read_frame(requests)
            if payload is None:
                return
            handshake: Handshake = pickle.loads(payload)
            # Import the user's modules from where the parent imports them.
            sys.path[:] = handshake["sys_path"]
            _serve(requests, reply_fd)
        except (EOFError, BrokenPipeError):
            return  # the parent went away mid-frame: nobody is left to answer


def _serve(requests: BinaryIO, reply_fd: int) -> None:
    while True:
        payload = read_frame(requests)
        if payload is None or payload == STOP:
            return
        write_all(reply_fd, frame(_answer(payload)))


def _answer(payload: bytes) -> bytes:
    """Run the call ``payload`` describes; return the pickled reply (never raises)."""
    try:
        reference, args, kwargs = pickle.loads(payload)
        value = resolve(reference)(*args, **kwargs)
    except BaseException as error:  # SystemExit too: it is the task's failure, not this process's
        return _raised(error)
    try:
        return pickle.dumps((RETURNED, value), PICKLE_PROTOCOL)
    except BaseException as error:  # pickle raises many kinds (PicklingError, TypeError, ...)
        return pickle.dumps((UNPICKLABLE_RESULT, _type_name(type(value)), _describe(error)), PICKLE_PROTOCOL)


def _raised(error: BaseException) -> bytes:
    """Describe ``error`` as a ``RAISED`` reply: pickled if it pickles, and as text in any case."""
    text = "".join(traceback.format_exception(error))
    try:
        pickled: bytes | None = pickle.dumps(error, PICKLE_PROTOCOL)
        reason = ""
    except BaseException as problem:
        pickled = None
        reason = _describe(problem)
    return pickle.dumps(
        (RAISED, pickled, _type_name(type(error)), _safe_str(error), text, reason), PICKLE_PROTOCOL
    )


def _type_name(cls: type) -> str:
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except BaseException:  # a broken __str__ must not take the reply down with it
        return f"<{_type_name(type(error))}: str() failed>"


def _describe(error: BaseException) -> str:
    return f"{_type_name(type(error))}: {_safe_str(error)}"


def _exit_when_orphaned(lifeline_fd: int) -> None:
    """End the process when the lifeline closes (runs on the ``lifeline-watch`` daemon thread).

    The parent never writes to the lifeline, so a read returns only when the parent's end is
    closed: it exited, was killed, or crashed. ``os._exit`` then ends this process even in the
    middle of a task (a task that holds the GIL in C code delays it until it lets go).
    """
    try:
        while os.read(lifeline_fd, 1):
            pass
    except OSError:
        pass  # the descriptor is broken (a task closed it?): without a lifeline, end as if orphaned
    os._exit(ORPHANED_EXIT)
