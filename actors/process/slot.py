"""One worker process that runs task calls for one owning thread, one call at a time.

``ProcessSlot.call`` sends a function *reference* and pickled arguments to a child process and
blocks (in ``poll``, with the GIL released) until the child answers or dies. The child is a
fresh interpreter started with ``subprocess`` (``python -c`` and ``actors.process.child``), not
``multiprocessing``, so it never re-runs the user's ``__main__``; it is started on the first
call and again on the call after it died. The frames are described in ``actors.process.wire``.

Where ``os.pidfd_open`` exists (Linux), the slot also holds a pidfd for its child: ``call``
then notices the child's death even if a process the task started still holds the reply pipe,
and ``kill`` signals exactly that process even if it has just been reaped.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final

from actors.errors import (
    ProcessDiedError,
    RemoteTraceback,
    SchedulerShutdownError,
    UnpicklableExceptionError,
    UnpicklableResultError,
)
from actors.process import wire
from actors.process.wire import HEADER, PICKLE_PROTOCOL, STOP, Handshake, frame, write_all

__all__ = ["ProcessSlot"]

logger = logging.getLogger(__name__)

# The child imports ``actors`` from the very directory this parent did, before the handshake
# hands it the parent's whole ``sys.path`` (a user's own ``actors`` package must not win).
# This file is actors/process/slot.py: the root is three folders up.
_PACKAGE_ROOT: Final = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BOOTSTRAP: Final = (
    "import sys; sys.path.insert(0, sys.argv[1]); import actors.process.child as c; c.main(sys.argv[2:])"
)

_READ_CHUNK: Final = 1 << 16
_EXIT_GRACE: Final = 1.0
"""Seconds a child that closed its reply pipe gets to finish exiting before it is killed."""
_TERMINATE_GRACE: Final = 1.0
"""Seconds ``stop`` gives a child between SIGTERM and SIGKILL."""


class _ChildGone(Exception):
    """The child closed its reply pipe or exited: no answer will come (never leaves this module)."""


class ProcessSlot:
    """Owns one child process and runs the calls of one owning thread in it, one at a time.

    Thread-safety: ``call`` belongs to one owning thread (the worker actor's); a second ``call``
    while one is running raises ``RuntimeError``. ``kill``, ``stop``, ``pid`` and ``alive`` may
    be used from any thread, including while ``call`` is blocked.

    A child that dies, or is killed, during a call fails that call with ``ProcessDiedError``;
    a child found dead between calls (killed while idle, say) is replaced silently, since no
    call was lost. Printing in a task goes to this process's stdout and stderr, unbuffered.
    """

    def __init__(self, name: str = "process-slot") -> None:
        """Prepare a slot; no process is started until the first ``call`` (caller's thread)."""
        self._name = name
        # _lock guards _process, _pidfd, _busy, _kill_reason and _stopped. It is also held for
        # every signal sent to the child and for every reap of it (Popen.wait/poll), so that a
        # signal can never reach a pid that has been reaped and perhaps reused. _idle (same
        # lock) is notified whenever _busy goes back to False.
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._process: subprocess.Popen[bytes] | None = None
        self._pidfd: int | None = None
        self._busy = False  # a call, or stop, is using the pipes
        self._kill_reason: str | None = None  # set when we signalled the current child to end it
        self._stopped = False
        # The parent's ends of the pipes and the poller over them. Only the thread that set
        # _busy reads or writes them, so they need no lock; they change only under _lock.
        self._to_child = -1
        self._from_child = -1
        self._lifeline = -1  # never written: the child ends when it closes
        self._poller = select.poll()

    def __repr__(self) -> str:
        return f"<ProcessSlot {self._name!r} pid={self.pid}>"

    def __enter__(self) -> ProcessSlot:
        """Return the slot; leaving the ``with`` block stops it."""
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop the slot (the thread leaving the block)."""
        self.stop()

    @property
    def pid(self) -> int | None:
        """The current child's pid, or ``None`` when no child is running (any thread)."""
        process = self._process
        return None if process is None else process.pid

    @property
    def alive(self) -> bool:
        """Whether a child is running right now (any thread; reaps a child that has exited)."""
        with self._lock:
            return self._process is not None and self._process.poll() is None

    def call(self, reference: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> object:
        """Run ``reference(*args, **kwargs)`` in the child and return its value (owning thread).

        Starts the child first if there is none. Blocks, without holding the GIL, until the
        child answers or dies; there is no timeout: another thread ends a call with ``kill``.

        Args:
            reference: ``"package.module:function"``; the child imports it (see
                ``actors.references.resolve``).
            args: positional arguments; pickled (check them with ``check_picklable_arguments``).
            kwargs: keyword arguments; pickled likewise.

        Returns:
            What the function returned, unpickled.

        Raises:
            BaseException: whatever the task raised (the reference not importing included), of
                the same type and with the same args, its ``__cause__`` a ``RemoteTraceback``
                with the child's traceback; or ``UnpicklableExceptionError`` standing in for an
                exception that does not pickle.
            UnpicklableResultError: the task's return value does not pickle (or unpickle here).
            TypeError: ``args`` or ``kwargs`` do not pickle (nothing was sent).
            ProcessDiedError: the child died or was killed before answering; the message says
                how (exit status or signal name). The next call starts a new child.
            SchedulerShutdownError: the slot has been stopped.
            RuntimeError: another call is running on this slot.
            OSError: a child could not be started.
        """
        try:
            request = frame(pickle.dumps((reference, args, dict(kwargs)), PICKLE_PROTOCOL))
        except Exception as error:  # pickle raises many kinds (PicklingError, TypeError, ...)
            raise TypeError(
                f"the arguments of {reference!r} cannot be sent to a worker process: {error}"
            ) from None
        with self._lock:
            if self._stopped:
                raise SchedulerShutdownError(f"{self!r} has been stopped and runs no more calls")
            if self._busy:
                raise RuntimeError(f"{self!r} is already running a call; it runs one at a time")
            self._busy = True
            self._drop_dead_child_locked()
        try:
            try:
                if self._process is None:
                    request = self._spawn() + request
                write_all(self._to_child, request)
                payload = self._receive()
            except (_ChildGone, BrokenPipeError):
                raise self._died(reference) from None
            except BaseException:
                # Interrupted mid-exchange (a KeyboardInterrupt in poll, say): the reply would be
                # read by the next call, so this child can no longer be trusted.
                self._abandon()
                raise
            return self._unpack(reference, payload)
        finally:
            with self._lock:
                self._busy = False
                self._idle.notify_all()

    def kill(self) -> bool:
        """Kill the child with SIGKILL (any thread); a blocked ``call`` raises ``ProcessDiedError``.

        A child killed between calls is replaced by the next call, without an error. If a call is
        just starting a child, that child is killed as soon as it exists.

        Returns:
            Whether there was a child (or a child being started) to kill.
        """
        with self._lock:
            return self._kill_locked("was killed by ProcessSlot.kill()")

    def stop(self, timeout: float = 5.0) -> int | None:
        """End the child and release everything the slot holds; later calls raise (any thread).

        Waits up to ``timeout`` seconds in all: for a running call to finish (then kills its
        child), and for the child to exit when asked through the pipe; then sends SIGTERM, and
        SIGKILL a second later. The child is reaped and every file descriptor closed before
        this returns. Idempotent.

        Returns:
            The exit status of the child it stopped (negative: killed by that signal), or
            ``None`` if no child was running.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            self._stopped = True
            if not self._idle.wait_for(lambda: not self._busy, timeout):
                # A call is still running and cannot end politely in time: end it; its thread
                # then reaps the child and closes the pipes.
                self._kill_locked("was killed by ProcessSlot.stop() (the call outlasted the stop timeout)")
                self._idle.wait_for(lambda: not self._busy)
            process = self._process
            if process is None:
                return None
            self._busy = True
        try:
            return self._shut_down(process, deadline)
        finally:
            with self._lock:
                self._busy = False
                self._idle.notify_all()

    # -- the owning thread's side (the thread that set _busy) --------------------------------

    def _spawn(self) -> bytes:
        """Start a child; return the handshake frame to send before the first request."""
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        lifeline_read, lifeline_write = os.pipe()
        child_ends = (request_read, reply_write, lifeline_read)
        try:
            process = subprocess.Popen(
                [sys.executable, "-u", "-c", _BOOTSTRAP, _PACKAGE_ROOT, *map(str, child_ends)],
                stdin=subprocess.DEVNULL,
                close_fds=True,
                pass_fds=child_ends,
                # Its own process group: a Ctrl-C at the terminal is the parent's to handle.
                process_group=0,
            )
        except BaseException:
            for fd in (request_write, reply_read, lifeline_write):
                os.close(fd)
            raise
        finally:
            for fd in child_ends:
                os.close(fd)
        pidfd = _open_pidfd(process.pid)
        poller = select.poll()
        poller.register(reply_read, select.POLLIN)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        with self._lock:
            self._process, self._pidfd, self._poller = process, pidfd, poller
            self._to_child, self._from_child, self._lifeline = request_write, reply_read, lifeline_write
            if self._kill_reason is not None:  # kill() came while the child was being started
                self._signal_locked(signal.SIGKILL)
        logger.info("%s: started worker process %d", self._name, process.pid)
        return frame(pickle.dumps(Handshake(sys_path=list(sys.path)), PICKLE_PROTOCOL))

    def _unpack(self, reference: str, payload: memoryview) -> object:
        """Turn a reply into the task's value, or raise the task's exception."""
        try:
            reply = pickle.loads(payload)
        except Exception as error:  # only a returned value can fail to load: its class, its state
            raise UnpicklableResultError(
                f"the value {reference!r} returned cannot be unpickled in this process: {error}"
            ) from None
        match reply:
            case (wire.RETURNED, value):
                return value
            case (wire.RAISED, pickled, str(error_type), str(message), str(text), str(reason)):
                raise _rebuild(pickled, error_type, message, text, reason)
            case (wire.UNPICKLABLE_RESULT, str(value_type), str(reason)):
                raise UnpicklableResultError(
                    f"{reference!r} returned a {value_type}, which cannot be sent back from the "
                    f"worker process: {reason}"
                )
        # Only bytes a task wrote to the reply pipe itself could get here.
        self._abandon()
        raise ProcessDiedError(f"the worker process sent a malformed reply to {reference!r} and was killed")

    def _receive(self) -> memoryview:
        """Read one reply frame's payload (a small one in one read; a big one straight into place)."""
        first = self._read_some(_READ_CHUNK)
        while len(first) < HEADER.size:
            first += self._read_some(HEADER.size - len(first))
        (size,) = HEADER.unpack_from(first)
        end = HEADER.size + size
        if len(first) >= end:
            return memoryview(first)[HEADER.size : end]
        payload = bytearray(size)
        view = memoryview(payload)
        got = len(first) - HEADER.size
        view[:got] = first[HEADER.size :]
        while got < size:
            self._wait_readable()
            count = os.readv(self._from_child, [view[got:]])
            if not count:
                raise _ChildGone
            got += count
        return view

    def _read_some(self, size: int) -> bytes:
        self._wait_readable()
        data = os.read(self._from_child, size)
        if not data:
            raise _ChildGone
        return data

    def _wait_readable(self) -> None:
        """Block until the reply pipe has data or end-of-file, or the child has exited."""
        # poll() releases the GIL; no timeout, since kill() ends the wait by ending the child.
        events = self._poller.poll()
        if not any(fd == self._from_child for fd, _ in events):
            raise _ChildGone  # only the pidfd: it exited, and a process it started holds the pipe

    def _died(self, reference: str) -> ProcessDiedError:
        """Reap the dead child, release its pipes; return the error that says how it ended."""
        with self._lock:
            process = self._process
            assert process is not None  # the busy thread alone clears it
            reason = self._kill_reason
            status = self._reap_locked(process)
            self._close_locked()
        how = reason or _describe_status(status)
        logger.debug("%s: worker process %d %s", self._name, process.pid, how)
        return ProcessDiedError(
            f"worker process {process.pid} {how} while running {reference!r}; "
            "the next call starts a new process"
        )

    def _abandon(self) -> None:
        """Kill and reap a child whose protocol state is unknown; the next call starts afresh."""
        with self._lock:
            process = self._process
            if process is not None:
                self._signal_locked(signal.SIGKILL)
                self._reap_locked(process)
                self._close_locked()

    def _shut_down(self, process: subprocess.Popen[bytes], deadline: float) -> int:
        """Ask the child to exit, then SIGTERM, then SIGKILL; reap it and close its pipes."""
        with contextlib.suppress(BrokenPipeError):  # it is already gone
            write_all(self._to_child, frame(STOP))
        exited = self._wait_for_exit(deadline)
        if not exited:
            with self._lock:
                self._signal_locked(signal.SIGTERM)
            exited = self._wait_for_exit(time.monotonic() + _TERMINATE_GRACE)
        with self._lock:
            if not exited:
                self._signal_locked(signal.SIGKILL)
            status = self._reap_locked(process)
            self._close_locked()
        logger.info("%s: worker process %d stopped (%s)", self._name, process.pid, _describe_status(status))
        return status

    def _wait_for_exit(self, deadline: float) -> bool:
        """Wait until the child has exited (its pidfd, or else its reply pipe, says so), or ``deadline``."""
        poller = select.poll()
        watched = self._from_child if self._pidfd is None else self._pidfd
        poller.register(watched, select.POLLIN)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(math.ceil(remaining * 1000)):
                return False
            # A pidfd becomes readable at exit; the pipe at end-of-file (stray bytes are dropped).
            if watched == self._pidfd or not os.read(watched, _READ_CHUNK):
                return True

    # -- under _lock -------------------------------------------------------------------------

    def _drop_dead_child_locked(self) -> None:
        """At the start of a call: forget a child that was killed or died between calls."""
        process = self._process
        if process is not None and (self._kill_reason is not None or process.poll() is not None):
            logger.info(
                "%s: worker process %d ended between calls (%s); starting a new one",
                self._name,
                process.pid,
                self._kill_reason or _describe_status(process.returncode),
            )
            self._reap_locked(process)
            self._close_locked()
        self._kill_reason = None

    def _kill_locked(self, reason: str) -> bool:
        process = self._process
        if process is None:
            if not self._busy:
                return False
            self._kill_reason = reason  # a call is starting a child: _spawn kills it at once
            return True
        if process.returncode is not None:
            return False
        self._kill_reason = reason
        self._signal_locked(signal.SIGKILL)
        return True

    def _signal_locked(self, signum: signal.Signals) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return  # reaped: its pid may already belong to another process
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signum)
            else:
                os.kill(process.pid, signum)
        except ProcessLookupError:
            pass  # it exited on its own meanwhile (a zombie takes signals; this is a race)

    def _reap_locked(self, process: subprocess.Popen[bytes]) -> int:
        try:
            return process.wait(_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            # It closed its reply pipe but lives on, so it can never answer: end it.
            self._signal_locked(signal.SIGKILL)
            return process.wait()

    def _close_locked(self) -> None:
        for fd in (self._to_child, self._from_child, self._lifeline, self._pidfd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._to_child = self._from_child = self._lifeline = -1
        self._pidfd = None
        self._process = None
        self._poller = select.poll()


def _rebuild(pickled: bytes | None, error_type: str, message: str, text: str, reason: str) -> BaseException:
    """Return the task's exception, or a stand-in for it, with the child's traceback as its cause."""
    error: BaseException | None = None
    if pickled is not None:
        try:
            loaded = pickle.loads(pickled)
        except Exception as problem:  # its class does not import here, or __init__ wants other args
            reason = f"it does not unpickle here: {type(problem).__name__}: {problem}"
        else:
            if isinstance(loaded, BaseException):
                error = loaded
            else:
                reason = f"it unpickles as {type(loaded).__name__}"
    if error is None:
        error = UnpicklableExceptionError(error_type, message, text, reason)
    error.__cause__ = RemoteTraceback(text)
    return error


def _describe_status(status: int | None) -> str:
    if status is None:
        return "is still running"
    if status >= 0:
        return f"exited with code {status}"
    try:
        name = signal.Signals(-status).name
    except ValueError:
        name = f"signal {-status}"
    return f"was killed by signal {name}"


def _open_pidfd(pid: int) -> int | None:
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # a kernel older than 5.3, or a seccomp filter refusing the call
        return None
