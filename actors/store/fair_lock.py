"""A lock that serves waiting threads in the order they arrived.

``threading.Lock`` lets the thread that releases it take it straight back, before the waiter
it woke gets the GIL; a thread that writes in a loop then keeps the lock for a whole GIL
switch interval while the others wait: with several threads adding to the store at once, a
few were served over and over and the slowest adds waited tens of times longer than the
median. Handing the lock to the longest waiter bounds every wait by the queue ahead of it.
The figures, before and after, are in docs/performance.md ("The SQLite store's tail").
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType


class FairLock:
    """A mutual-exclusion lock, handed to waiters first come, first served.

    Any thread may acquire it; only the holder may release it. Not reentrant. Use it as a
    context manager.
    """

    __slots__ = ("_held", "_mutex", "_waiters")

    def __init__(self) -> None:
        # Guards _held and _waiters. Invariant: _waiters is empty whenever _held is False,
        # because a release with waiters hands the lock over instead of freeing it.
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque[threading.Lock] = deque()  # each locked until its turn comes

    @property
    def queued(self) -> int:
        """How many threads wait for the lock (a snapshot, for tests and monitoring)."""
        with self._mutex:
            return len(self._waiters)

    def acquire(self) -> None:
        """Take the lock, waiting behind every thread that asked before."""
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        try:
            turn.acquire()  # released by the holder that hands the lock to us
        except BaseException:
            # Interrupted while waiting (KeyboardInterrupt, in the main thread): leave the
            # queue, or pass the lock on, or every later thread would wait for us forever.
            # (A signal landing in the few bytecodes outside this wait is not covered, as
            # it is not for threading's own locks.)
            with self._mutex:
                try:
                    self._waiters.remove(turn)
                except ValueError:  # it was handed to us just now: hand it on
                    self._hand_on()
            raise

    def release(self) -> None:
        """Hand the lock to the longest waiter, or free it."""
        with self._mutex:
            self._hand_on()

    def _hand_on(self) -> None:
        # Under _mutex.
        if self._waiters:
            self._waiters.popleft().release()  # _held stays True: ownership moves directly
        else:
            self._held = False

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
