"""The PostgreSQL store's connections: a small pool, one retry, and errors as ``StoreError``.

Every call borrows a connection from a ``psycopg_pool.ConnectionPool`` (autocommit, with
``search_path`` set to the store's schema) for one short transaction or statement. After a
server restart every pooled connection is dead; the first call to notice checks the pool
(which replaces the dead ones) and tries once more, so a node survives a restart with at most
one failed call per thread in flight. While the server does not answer, the pool tries to
connect every ``RECONNECT_EVERY`` seconds (not with its own backoff, up to minutes apart), so
calls waiting for a connection get one as soon as it answers again. The retry is safe by
construction:

- a read, or a statement that may be repeated (claim, renew, release, reserving minted
  numbers), is retried after any ``OperationalError``;
- a transaction that may not be repeated (add, cancel, save) is retried only if it failed
  before ``COMMIT`` was sent, since a transaction is rolled back unless it commits. A
  failure at ``COMMIT`` leaves the outcome unknown, and the ``StoreError`` says so.

psycopg's exceptions never leave this module: each becomes a ``StoreError`` naming the
store and the operation, with the original as ``__cause__``.

Bounds: every session the store opens (pooled, its own, the schema's preparation) sets
``lock_timeout`` and ``statement_timeout``, so no statement waits without end for a lock
another session holds (``LOCK TABLE``, a long transaction) or runs without end. A statement
that times out is not tried again (that would double the bound): the call fails with a
``StoreError`` saying which timeout ended it.

Forks: a child made by ``fork`` shares the parent's sockets, and a connection closed in the
child would tell the server to end the parent's session. So in the child every open store
refuses every call, and ``close`` leaves what it inherited alone (psycopg itself never
finishes a connection made by another process when it is garbage-collected).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Final, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from actors.errors import StoreError
from actors.store.postgres_schema import set_search_path

logger = logging.getLogger(__name__)

T = TypeVar("T")
Connection = psycopg.Connection[TupleRow]

_SECRETS: Final = frozenset({"password", "sslpassword"})
_CONNECT_TIMEOUT: Final = 10  # seconds, unless the DSN says otherwise
# How long the pool retries one lost connection before it gives up on it (then it starts
# again at once, see _reconnect_failed): so, while the server is away, a connection attempt
# at least this often, and once it answers again a connection within about this long. The
# pool's own default (5 minutes, retries 1, 2, 4, 8 s apart) left calls failing 4-8 s after
# the server was back.
RECONNECT_EVERY: Final = 0.25
# SQLSTATE classes after which the pool's other idle connections are suspect too: 08 is a
# connection exception, 57P01-57P03 the server shutting down or restarting.
_CONNECTION_LOST: Final = ("08", "57P0")
# SQLSTATEs of a statement the server ended at a bound: 55P03 lock_timeout, 57014 statement_timeout.
_TIMED_OUT: Final = frozenset({"55P03", "57014"})


class Bounds:
    """How long a statement may wait for a lock and run in all, in seconds (session settings)."""

    __slots__ = ("lock_timeout", "statement_timeout")

    def __init__(self, lock_timeout: float, statement_timeout: float) -> None:
        """Keep the two bounds (checked by the caller: finite, > 0)."""
        self.lock_timeout = lock_timeout
        self.statement_timeout = statement_timeout

    def apply(self, db: Connection) -> None:
        """Set both on the session of ``db`` (autocommit, no transaction open)."""
        db.execute(
            "SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)",
            (_milliseconds(self.lock_timeout), _milliseconds(self.statement_timeout)),
        )

    def explain(self, error: psycopg.Error) -> str:
        """What ``error`` says, and which bound ended its statement if one did."""
        said = error.diag.message_primary or str(error)
        if error.sqlstate == "55P03":
            return f"{said} (a lock was held elsewhere for longer than lock_timeout={self.lock_timeout:g} s)"
        if error.sqlstate == "57014":
            return f"{said} (it took longer than statement_timeout={self.statement_timeout:g} s)"
        return str(error)


def _milliseconds(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def redact(dsn: str) -> str:
    """Return ``dsn`` without its password (URL or ``key=value`` form), for messages.

    Raises:
        ValueError: ``dsn`` is not a connection string libpq understands.
    """
    try:
        conninfo_to_dict(dsn)  # validates both forms
    except psycopg.Error as error:
        raise ValueError(f"not a PostgreSQL connection string: {error}") from None
    if "://" in dsn:
        parts = urlsplit(dsn)
        user, at, hosts = parts.netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{hosts}" if at else hosts
        query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k not in _SECRETS])
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    shown = {k: v for k, v in conninfo_to_dict(dsn).items() if k not in _SECRETS}
    return make_conninfo("", **shown) or "(libpq defaults: PGHOST, PGDATABASE, ...)"


def with_defaults(dsn: str, **defaults: str | int) -> str:
    """Return ``dsn`` with each of ``defaults`` that it does not set itself."""
    given = conninfo_to_dict(dsn)
    return make_conninfo(dsn, **{k: v for k, v in defaults.items() if k not in given})


class PostgresConnections:
    """The pool of one store, and the policy for using it.

    ``open`` and ``close`` from the store's owner (``close`` from any thread, more than once);
    ``run`` and ``connect`` from any thread.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        location: str,
        application_name: str,
        timeout: float,
        bounds: Bounds,
        max_size: int = 4,
    ) -> None:
        """Remember how to connect; nothing is connected until ``open`` or ``connect_raw``."""
        self.location = location
        self.bounds = bounds
        self._conninfo = with_defaults(
            conninfo, connect_timeout=_CONNECT_TIMEOUT, application_name=application_name
        )
        self._schema = ""  # set by open
        self._timeout = timeout
        self._max_size = max_size
        self._lock = threading.Lock()  # guards _pool and _forked
        self._pool: ConnectionPool[Connection] | None = None
        self._forked = False

    def connect_raw(self) -> Connection:
        """Make a connection of its own, with the store's bounds (for preparing the schema).

        Raises:
            psycopg.Error: It cannot be made.
        """
        db = psycopg.connect(self._conninfo, autocommit=True)
        try:
            self.bounds.apply(db)
        except BaseException:
            db.close()
            raise
        return db

    def connect(self, purpose: str) -> Connection:
        """Make a connection of its own (not pooled) in the store's schema; the caller closes it.

        Raises:
            psycopg.Error: It cannot be made (the caller wraps it: it knows the operation).
        """
        db = psycopg.connect(self._conninfo, autocommit=True)
        try:
            self._configure(db)
        except BaseException:
            db.close()
            raise
        logger.debug("%s: connected for %s", self.location, purpose)
        return db

    def _configure(self, db: Connection) -> None:
        set_search_path(db, self._schema, local=False)
        self.bounds.apply(db)

    def open(self, schema: str) -> None:
        """Open the pool on ``schema`` (prepared already) and wait for its first connection.

        Raises:
            StoreError: The pool cannot connect within the timeout.
        """
        self._schema = schema
        pool: ConnectionPool[Connection] = ConnectionPool(
            self._conninfo,
            kwargs={"autocommit": True},
            min_size=1,
            max_size=self._max_size,
            open=False,
            configure=self._configure,
            name="store-pool",
            timeout=self._timeout,
            num_workers=2,
            reconnect_timeout=RECONNECT_EVERY,
            reconnect_failed=self._reconnect_failed,
        )
        try:
            pool.open(wait=True, timeout=self._timeout)
        except psycopg.Error as error:
            pool.close()
            raise StoreError(f"{self.location}: cannot connect: {error}") from error
        with self._lock:
            self._pool = pool
            _OPEN.add(self)

    def close(self) -> None:
        """Close the pool: calls in progress finish, later ones fail. Idempotent."""
        with self._lock:
            pool, self._pool = self._pool, None
            _OPEN.discard(self)
        if pool is not None:
            pool.close(timeout=self._timeout)

    @property
    def forked(self) -> bool:
        """Whether this is a copy in a process forked from the one that opened it."""
        return self._forked

    def live_pool(self) -> ConnectionPool[Connection]:
        """Return the open pool.

        Raises:
            StoreError: The store is not open, or this is a forked child.
        """
        with self._lock:
            if self._forked:
                raise StoreError(
                    f"{self.location}: the store cannot be used in a process forked from the one "
                    "that opened it; open a store of its own"
                )
            if self._pool is None:
                raise StoreError(f"{self.location}: the store is not open")
            return self._pool

    def run(
        self,
        op: str,
        work: Callable[[Connection], T],
        *,
        begin: str | None = None,
        repeatable: bool = True,
        pipelined: bool = False,
    ) -> T:
        """Run ``work`` on a pooled connection; return its result.

        Args:
            op: The operation's name, for messages.
            work: What to do; it may raise ``psycopg.Error`` (wrapped here) or anything else
                (passed on after rolling back).
            begin: ``None``: autocommit (each statement its own transaction). Otherwise the
                statement that opens the transaction (``"BEGIN"``, or with an isolation level)
                and ``COMMIT`` follows ``work``.
            repeatable: Whether ``work`` may run twice; if not, it is retried only when it
                failed before ``COMMIT`` was sent.
            pipelined: Send ``begin`` and ``work``'s statements in pipeline mode: each goes
                out without waiting for the one before, and the first fetch waits for them all
                (``work`` must ask for no result it does not need before its next statement).
                Saves one round trip per statement sent before a fetch; ``COMMIT`` is sent after.

        Raises:
            StoreError: The call failed (after the retry, if any).
        """
        for attempt in (1, 2):
            pool = self.live_pool()
            committing = False
            try:
                with pool.connection(timeout=self._timeout) as db:
                    try:
                        result = _begun(db, begin, work, pipelined=pipelined)
                        if begin is not None:
                            committing = True
                            db.execute("COMMIT")
                    except BaseException:
                        self._rollback(db)
                        raise
                return result
            except PoolTimeout as error:
                raise StoreError(
                    f"{self.location}: {op} failed: no connection to the server within "
                    f"{self._timeout:g} s ({error})"
                ) from error
            except PoolClosed as error:
                raise StoreError(f"{self.location}: {op} failed: the store is closed") from error
            except psycopg.OperationalError as error:
                if error.sqlstate in _TIMED_OUT:  # a bound: trying again would double it
                    raise StoreError(f"{self.location}: {op} failed: {self.bounds.explain(error)}") from error
                if (error.sqlstate or "08").startswith(_CONNECTION_LOST):
                    self._check(pool)
                if attempt == 1 and (repeatable or not committing):
                    logger.info("%s: %s failed, trying once more: %s", self.location, op, error)
                    continue
                if committing and not repeatable:
                    raise StoreError(
                        f"{self.location}: {op} failed at commit, so it may or may not have been "
                        f"committed: {error}"
                    ) from error
                raise StoreError(f"{self.location}: {op} failed: {error}") from error
            except psycopg.Error as error:
                raise StoreError(f"{self.location}: {op} failed: {self.bounds.explain(error)}") from error
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _reconnect_failed(self, pool: ConnectionPool[Connection]) -> None:
        # The pool's worker thread, after a connection could not be made for RECONNECT_EVERY
        # seconds: start a fresh attempt now (a check grows an empty pool), not after a backoff.
        if pool.closed:
            return
        logger.debug("%s: no connection to the server yet; trying again", self.location)
        self._check(pool)

    def _check(self, pool: ConnectionPool[Connection]) -> None:
        # Replace the pool's dead idle connections before the retry takes one of them.
        try:
            pool.check()
        except psycopg.Error:  # closed meanwhile: the retry says so
            logger.debug("%s: pool check failed", self.location, exc_info=True)

    def _rollback(self, db: Connection) -> None:
        if db.info.transaction_status in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR):
            try:
                db.execute("ROLLBACK")
            except psycopg.Error:  # the connection is broken: the server rolls back anyway
                logger.warning("%s: rollback failed", self.location, exc_info=True)

    def _abandon_in_child(self) -> None:
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._forked = True
        self._pool = None  # the parent's: never closed here


class OwnConnection:
    """A connection of its own (not pooled) for one kind of call, one call at a time.

    For renewals: a lease keeper must not queue behind callers that hold every pooled
    connection. Made on first use; after an ``OperationalError`` it is replaced and the call
    tried once more (renewals may be repeated). ``run`` and ``close`` from any thread.
    """

    def __init__(self, connections: PostgresConnections, purpose: str) -> None:
        """Prepare; nothing is connected until the first ``run``."""
        self._connections = connections
        self._purpose = purpose
        self._lock = threading.Lock()  # guards _db: one call at a time on it
        self._db: Connection | None = None

    def run(self, op: str, work: Callable[[Connection], T]) -> T:
        """Run ``work`` (autocommit) on the connection; return its result.

        Raises:
            StoreError: The store is closed, or the call failed (after the retry, if any).
        """
        location = self._connections.location
        with self._lock:
            for attempt in (1, 2):
                self._connections.live_pool()  # refuses once the store is closed, or in a fork
                try:
                    if self._db is None:
                        self._db = self._connections.connect(self._purpose)
                    return work(self._db)
                except psycopg.Error as error:
                    self._discard()
                    timed_out = error.sqlstate in _TIMED_OUT  # a bound: trying again would double it
                    if attempt == 1 and isinstance(error, psycopg.OperationalError) and not timed_out:
                        logger.info("%s: %s failed, trying once more: %s", location, op, error)
                        continue
                    reason = self._connections.bounds.explain(error)
                    raise StoreError(f"{location}: {op} failed: {reason}") from error
        raise AssertionError("unreachable: the second attempt returns or raises")

    def close(self) -> None:
        """Close the connection, after the call in progress. Idempotent."""
        with self._lock:
            self._discard()

    def _discard(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            db.close()


def _begun(db: Connection, begin: str | None, work: Callable[[Connection], T], *, pipelined: bool) -> T:
    """Send ``begin`` (a constant from the store's modules), if any, then do ``work``."""
    if not pipelined:
        if begin is not None:
            db.execute(begin)
        return work(db)
    with db.pipeline():
        if begin is not None:
            db.execute(begin)
        return work(db)


# The open pools: what a forked child must disown.
_OPEN: Final[weakref.WeakSet[PostgresConnections]] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for connections in list(_OPEN):
        connections._abandon_in_child()
    _OPEN.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
