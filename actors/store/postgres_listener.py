"""``Listener``: a thread that ``LISTEN``s on the store's channel and calls back on each hint.

The thread owns a connection of its own (a pooled one would be handed to other calls, and
``LISTEN`` belongs to a session). It waits in ``select`` on that connection's socket and on a
pipe that ``stop`` writes to, so it stops at once rather than at its next timeout.

Notifications are hints: PostgreSQL delivers them only at commit, folds identical ones of a
transaction, and drops them while the session is gone. So after the connection breaks (a
server restart, a terminated backend) the thread reconnects, with a growing pause, and calls
back once, since something may have changed while it was away. Every ``probe`` seconds of
silence it sends an empty query, so a connection that died quietly is noticed too.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable
from typing import Final

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

logger = logging.getLogger(__name__)

Connection = psycopg.Connection[TupleRow]

_FIRST_PAUSE: Final = 0.1  # seconds before the first reconnection attempt; doubles up to probe


class Listener:
    """Calls ``wakeup()`` on its own thread for every notification on ``channel``.

    ``start`` and ``stop`` may be called from any thread; ``stop`` is idempotent and waits for
    the thread. ``wakeup`` runs on the listener's thread.
    """

    def __init__(
        self,
        connect: Callable[[], Connection],
        channel: str,
        wakeup: Callable[[], None],
        *,
        location: str,
        probe: float,
        saved: Callable[[], None] | None = None,
        saved_payload: str = "",
    ) -> None:
        """Prepare a listener; ``start`` connects and starts the thread.

        ``saved``, if given, is called instead of ``wakeup`` for a notification whose payload
        is ``saved_payload`` (a save's hint).
        """
        self._connect = connect
        self._listen = sql.SQL("LISTEN {}").format(sql.Identifier(channel))
        self._wakeup = wakeup
        self._saved = saved
        self._saved_payload = saved_payload
        self._location = location
        self._probe = probe
        self._stop_read, self._stop_write = os.pipe()
        self._stopped = threading.Event()
        # Guards _closing and _thread: stop() runs once, and a stop from the listener's own
        # thread (its wakeup callback) leaves the pipe for that thread to close on its way out.
        self._lock = threading.Lock()
        self._closing = False
        self._stopped_from_inside = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Connect and ``LISTEN``, then start the thread: it is listening when this returns.

        Raises:
            psycopg.Error: The connection or the ``LISTEN`` failed (nothing was started).
        """
        try:
            db = self._connect_and_listen()
        except BaseException:
            self.stop()
            raise
        with self._lock:
            self._thread = threading.Thread(target=self._run, args=(db,), name="store-listener", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait for it. Idempotent; any thread, the listener's own too."""
        with self._lock:
            first = not self._closing
            if first:
                self._closing = True
                self._stopped.set()
                os.write(self._stop_write, b"x")
                self._stopped_from_inside = self._thread is threading.current_thread()
            thread = self._thread
        if thread is threading.current_thread():
            return  # the thread ends after this callback and closes the pipe itself
        if thread is not None:
            thread.join()
        if first:
            self._close_pipe()

    def _close_pipe(self) -> None:
        os.close(self._stop_read)
        os.close(self._stop_write)

    def _connect_and_listen(self) -> Connection:
        db = self._connect()
        try:
            db.execute(self._listen)
        except BaseException:
            db.close()
            raise
        return db

    def _run(self, db: Connection | None = None) -> None:
        pause = _FIRST_PAUSE
        try:
            while not self._stopped.is_set():
                if db is None:
                    db = self._reconnect(pause)
                    if db is None:
                        pause = min(pause * 2, self._probe)
                        continue
                    pause = _FIRST_PAUSE
                    self._call()  # hints sent while disconnected are lost
                try:
                    self._serve(db)
                except psycopg.Error as error:
                    if not self._stopped.is_set():
                        logger.warning("%s: listener lost its connection: %s", self._location, error)
                    db.close()
                    db = None
        finally:
            if db is not None:
                db.close()
            with self._lock:
                close = self._stopped_from_inside  # then nobody else closes the pipe
            if close:
                self._close_pipe()

    def _reconnect(self, pause: float) -> Connection | None:
        # Waits on the stop pipe, not a sleep: stop() ends the pause at once.
        if select.select([self._stop_read], [], [], pause)[0]:
            return None
        try:
            db = self._connect_and_listen()
        except psycopg.Error as error:
            logger.info("%s: listener cannot reconnect yet: %s", self._location, error)
            return None
        logger.info("%s: listener reconnected", self._location)
        return db

    def _serve(self, db: Connection) -> None:
        # Returns only when stopped; raises psycopg.Error when the connection breaks.
        while not self._stopped.is_set():
            ready = select.select([db.fileno(), self._stop_read], [], [], self._probe)[0]
            if self._stop_read in ready:
                return
            if ready:
                for notify in db.notifies(timeout=0):
                    saved = self._saved is not None and notify.payload == self._saved_payload
                    self._call(self._saved if saved else None)
            else:
                db.execute("")  # a round trip: raises if the connection died quietly

    def _call(self, callback: Callable[[], None] | None = None) -> None:
        try:
            (callback or self._wakeup)()
        except Exception:  # the caller's bug must not end the listening
            logger.warning("%s: the listener's wakeup callback raised", self._location, exc_info=True)
