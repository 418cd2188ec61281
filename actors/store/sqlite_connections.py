"""One SQLite connection per thread, every one of which can be closed at once.

An ``sqlite3.Connection`` must not be used by two threads at the same time, and the store is
called from any thread (callers add and cancel, the scheduler saves), so each thread gets its
own connection on first use. ``close_all`` closes them all from one thread; for that, the
connections are made with ``check_same_thread=False``, and each is used only under its
slot's lock, so none is closed while its thread is inside a call.

Connections of threads that have ended are closed when the next thread connects.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable

from actors.errors import StoreError

logger = logging.getLogger(__name__)


class Slot:
    """One thread's connection. Use ``db`` only while holding ``lock``.

    Attributes:
        lock: Held by the owning thread for the whole of each call on ``db``, and by
            ``close_all`` while it closes it: guards ``db`` against being closed mid-call.
        db: The connection; ``None`` once closed (the store was closed, or this is a
            forked child).
    """

    __slots__ = ("_thread", "db", "lock")

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db: sqlite3.Connection | None = db
        self.lock = threading.Lock()
        self._thread = weakref.ref(threading.current_thread())

    def owner_alive(self) -> bool:
        """Whether the thread that made this slot still runs."""
        thread = self._thread()
        return thread is not None and thread.is_alive()


class ThreadConnections:
    """The connections of one open store, one per thread that used it.

    ``get`` may be called from any thread; ``close_all`` and ``abandon`` from any thread,
    once each opening (the store calls them when it closes).
    """

    __slots__ = ("_closed", "_connect", "_local", "_lock", "_slots", "location")

    def __init__(self, connect: Callable[[], sqlite3.Connection], location: str) -> None:
        """Remember how to connect; no connection is made yet."""
        self._connect = connect
        self.location = location
        self._local = threading.local()
        self._lock = threading.Lock()  # guards _slots and _closed
        self._slots: list[Slot] = []
        self._closed = False

    def get(self) -> Slot:
        """Return this thread's slot, connecting on the first call from this thread.

        Raises:
            StoreError: the store is closed, or the connection could not be made.
        """
        try:
            slot: Slot = self._local.slot
        except AttributeError:
            slot = self._add_slot()
        return slot

    def _add_slot(self) -> Slot:
        with self._lock:
            if self._closed:
                raise StoreError(f"{self.location}: the store is closed")
            finished = [slot for slot in self._slots if not slot.owner_alive()]
            try:
                slot = Slot(self._connect())
            except sqlite3.Error as error:
                raise StoreError(f"{self.location}: cannot connect: {error}") from error
            self._slots = [slot for slot in self._slots if slot not in finished]
            self._slots.append(slot)
        for old in finished:  # their threads are gone, so no one holds their locks for long
            _close(old)
        self._local.slot = slot
        logger.debug("%s: connected thread %s", self.location, threading.current_thread().name)
        return slot

    def close_all(self) -> None:
        """Close every connection, waiting for calls in progress on each. Idempotent."""
        with self._lock:
            self._closed = True
            slots, self._slots = self._slots, []
        for slot in slots:
            _close(slot)

    def abandon(self) -> None:
        """Drop every connection without closing it: for a forked child.

        SQLite connections must not be used, nor closed, in a child made by ``fork``: a
        close could checkpoint or delete the parent's write-ahead log.
        """
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._closed = True
        for slot in self._slots:
            slot.lock = threading.Lock()
            db, slot.db = slot.db, None
            if db is not None:
                _ABANDONED.append(db)  # kept referenced, so never finalized (closed)
        self._slots = []


_ABANDONED: list[sqlite3.Connection] = []


def _close(slot: Slot) -> None:
    with slot.lock:
        db, slot.db = slot.db, None
    if db is not None:
        try:
            db.close()
        except sqlite3.Error:  # closing must not fail the caller; the log says what was lost
            logger.warning("error closing a store connection", exc_info=True)
