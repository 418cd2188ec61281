"""``OutcomeSaver``: commits of fenced outcomes in groups, on a thread of its own.

Items ``put`` here are committed in one call (``commit``, one fenced statement) for all that
wait, so the more come while a commit is in flight, the more the next one carries (group
commit). A shared node hands it every outcome of a leased run, so its actor never waits for a
save. What the node promises stays: every outcome is saved under its fence, its lease is
renewed until the commit answers (``LeaseBook.saving``), its events are published only once it
is committed (the node's ``commit`` tells the actor), and then only that lease is forgotten, by
fence: the row, free once committed, may be claimed here again meanwhile (its next slot).

Items whose commit failed (the store failed; maybe at its commit, which may have landed) are
tried again after a pause that grows with the failures in a row (``store_retry_pause``), or at
once on ``wake``, each time with whatever new items are waiting. ``busy`` says whether fresh
items are queued or in flight (not those waiting for a retry): the actor is neither settled nor
drained before they land, so a run's events are out before ``settle`` or ``shutdown`` returns,
while a store that is down does not hold a shutdown up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from actors.shared.plan import store_retry_pause
from actors.sync.threads import Role, ThreadRegistry

__all__ = ["OutcomeSaver"]

T = TypeVar("T")

logger = logging.getLogger(__name__)


class OutcomeSaver(Generic[T]):
    """Commits queued items in groups on its own daemon thread. Every method: any thread."""

    def __init__(
        self,
        commit: Callable[[list[T]], bool],
        *,
        poll: float,
        threads: ThreadRegistry | None = None,
    ) -> None:
        """Prepare the saver; ``start`` starts its thread.

        Args:
            commit: Saves the items given in one call (this thread); ``False``: the store failed
                and nothing is known to be saved (they are tried again).
            poll: The longest pause between two attempts after failures (the store's poll).
            threads: Where the thread is recorded.
        """
        self._commit = commit
        self._poll = poll
        self._threads = threads
        # _changed guards the fields below; the thread waits on it for items, a retry or a stop.
        self._changed = threading.Condition(threading.Lock())
        self._queued: list[T] = []  # fresh items, not tried yet
        self._failed: list[T] = []  # items whose last attempt failed
        self._failures = 0  # attempts failed in a row
        self._retry_at = 0.0  # monotonic time of the next retry of _failed
        self._fresh_in_flight = False  # the attempt going on carries fresh items
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="outcome-saver", daemon=True)
        self.commits = 0  # commit calls made (for tests and stats)

    def start(self) -> None:
        """Start the thread."""
        if self._threads is not None:
            self._threads.add(self._thread, Role.NODE)
        self._thread.start()

    def put(self, item: T) -> None:
        """Queue ``item`` for the next commit (it starts at once if none is in flight)."""
        with self._changed:
            self._queued.append(item)
            self._changed.notify()

    def wake(self) -> None:
        """Try the failed items again now, not at the end of their pause."""
        with self._changed:
            self._retry_at = 0.0
            self._changed.notify()

    def busy(self) -> bool:
        """Whether fresh items are queued or being committed (not those waiting for a retry)."""
        with self._changed:
            return self._fresh_in_flight or bool(self._queued)

    def unsaved(self) -> int:
        """How many items are not saved yet (queued, in flight or failed)."""
        with self._changed:
            return len(self._queued) + len(self._failed) + self._fresh_in_flight

    def stop(self, timeout: float = 10.0) -> list[T]:
        """Commit what is queued (one last attempt, failed items too), stop; return what is left unsaved.

        Waits up to ``timeout`` seconds for the thread; if it is still in a commit then, the
        items of that commit are not returned (they may yet land).
        """
        with self._changed:
            self._stopping = True
            self._retry_at = 0.0
            self._changed.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        with self._changed:
            left, self._queued, self._failed = self._queued + self._failed, [], []
        return left

    def _run(self) -> None:
        while True:
            with self._changed:
                items = self._next()
                if items is None:
                    return
            try:
                ok = self._commit(items)  # logs and returns False on a store error
            except Exception:  # a bug must not end the saving: tried again, as after a failure
                logger.exception("outcome saver failed; it tries again")
                ok = False
            if self._done(items, ok):
                return  # one last attempt each at a stop: stop() returns what failed

    def _done(self, items: list[T], ok: bool) -> bool:
        """Take an attempt's result; whether the thread stops now (a stop, and it failed)."""
        with self._changed:
            self._fresh_in_flight = False
            if ok:
                self._failures = 0
            else:
                self._failed.extend(items)
                self._failures += 1
                self._retry_at = time.monotonic() + store_retry_pause(self._failures, self._poll)
            self._changed.notify_all()
            return self._stopping and not ok

    def _next(self) -> list[T] | None:
        """The items to commit next, once there are some; ``None``: stop (under ``_changed``)."""
        while True:
            retry = bool(self._failed) and (self._stopping or time.monotonic() >= self._retry_at)
            if self._queued or retry:
                items, self._queued = self._queued, []
                self._fresh_in_flight = bool(items)
                if retry:
                    items, self._failed = self._failed + items, []
                return items
            if self._stopping:
                return None
            timeout = None if not self._failed else max(0.0, self._retry_at - time.monotonic())
            self._changed.wait(timeout)
