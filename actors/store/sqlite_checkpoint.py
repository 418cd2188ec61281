"""Checkpoints of the SQLite store's write-ahead log, on a thread of their own.

In WAL mode every commit appends to ``<db>-wal``; a checkpoint copies the log back into the
database file (and fsyncs both) so that the log can start over. SQLite's automatic checkpoint
runs inside the commit that crosses its threshold (1,000 pages), in the committing thread:
here that is a caller's ``add``, under the store's write lock, so now and then one add took
a checkpoint's time instead of a commit's, and every thread queued behind it waited as long
(docs/performance.md, "The SQLite store's tail"). The store therefore asks this thread for a
``PASSIVE`` checkpoint every few hundred rows written; a passive checkpoint never blocks
writers or readers, nor waits for them.

The store's connections keep SQLite's automatic checkpoint as a backstop at a higher
threshold, so the log stays bounded even if this thread falls behind or fails.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Checkpointer:
    """A thread that runs a passive checkpoint whenever one was requested since the last.

    ``request`` may be called from any thread (it only sets a flag: requests made while a
    checkpoint runs fold into one more); ``start`` and ``stop`` from the store's owner.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection], location: str) -> None:
        """Prepare the thread; ``start`` runs it. ``connect`` makes its own connection."""
        self._connect = connect
        self._location = location
        # Guards _requested, _stopping and completed; the thread waits on it for work.
        self._condition = threading.Condition()
        self._requested = False
        self._stopping = False
        self.completed = 0  # checkpoints run so far (read under _condition)
        self._thread = threading.Thread(target=self._run, name="store-checkpoint", daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def request(self) -> None:
        """Ask for a checkpoint soon. Any thread; never blocks on the checkpoint."""
        with self._condition:
            self._requested = True
            self._condition.notify()

    def stop(self) -> None:
        """Stop the thread after the checkpoint in progress, if any, and wait for it."""
        with self._condition:
            self._stopping = True
            self._condition.notify()
        if self._thread.is_alive():
            self._thread.join()

    def wait_completed(self, count: int, timeout: float) -> bool:
        """Wait until ``count`` checkpoints have run; ``False`` on timeout (for tests)."""
        with self._condition:
            return self._condition.wait_for(lambda: self.completed >= count, timeout)

    def _run(self) -> None:
        try:
            db = self._connect()
        except sqlite3.Error:  # the backstop checkpoint still bounds the log
            logger.warning("%s: no checkpoint thread: cannot connect", self._location, exc_info=True)
            return
        try:
            while True:
                with self._condition:
                    self._condition.wait_for(lambda: self._requested or self._stopping)
                    if self._stopping:
                        return
                    self._requested = False
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:  # disk full, I/O error: the next request tries again
                    logger.warning("%s: checkpoint failed", self._location, exc_info=True)
                with self._condition:
                    self.completed += 1
                    self._condition.notify_all()
        finally:
            db.close()
