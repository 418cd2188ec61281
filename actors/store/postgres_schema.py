"""The PostgreSQL store's layout: how a schema is recognised, created and migrated.

A store lives in one PostgreSQL schema (``public`` unless told otherwise). Its ``store_meta``
row marks the schema as ours (``application``) and carries the layout's version;
``prepare`` judges the schema, then creates or migrates it, all in one transaction under a
transaction-level advisory lock, so that several nodes opening the same store at once
neither race on the DDL nor see a half-made layout; a refusal rolls back, so nothing is
written, not even the schema.

Layouts:
    v1: ``store_meta``, ``task`` (with the shared-store columns ``owner``, ``lease_until``,
        ``fence`` and ``change``) and ``run``.
    v2: ``task`` also says what the holder of a lease did with it: ``started_fence`` (the fence
        of the claim whose run has started), ``sealed_fence`` (the same, for a run a cancel can
        no longer stop: a one-time task's), ``replaced_fence`` (the fence of the claim that was
        in flight when the task was replaced: that run's outcome keeps the new definition's
        status and due time) and ``interrupt_fence`` (the fence of the claim whose run a cancel
        asked to stop).
    v3: ``task_after``: the edges of ``schedule_after`` not met yet (a waiting row's
        dependencies, by ``seq``; ``actors/store/postgres_after.py``); empty when migrated.
    v4: ``run`` also keeps each run's ``attempt``, ``reason``, ``node`` (which node ran it),
        ``manual`` and, for ``keep_result``, ``value_json`` or ``value_note`` (as SQLite's v3).
    v5: ``task`` keeps the operations of issue 24: ``paused`` (no claim takes the row's
        scheduled runs), ``grid_due`` (set by ``run_now``: the due time the extra run did not
        take, the row's ``next_due`` being that run's) and ``manual_fence`` (the fence of the
        claim that took the extra run); ``task_free`` leaves paused rows out, so claims and
        wake-ups never walk past them.
    v6: ``task`` counts ``lost_runs``: how many times in a row a claim retook the row's run
        after the lease of a run that had started ended (its node died or stalled with it);
        at ``PostgresStore(max_lost_runs=...)`` the run fails with ``RunLostError``.

To change the layout: bump ``SCHEMA_VERSION``, edit ``CREATE`` to the new layout (fresh
schemas are created directly at the newest version), and append a step to ``MIGRATIONS``
that brings a schema of the previous version to the same result (as the SQLite store does).

Threads: these functions use the connection they are given, on the caller's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from actors.errors import StoreError

logger = logging.getLogger(__name__)

Connection = psycopg.Connection[TupleRow]

APPLICATION: Final = "pykka-taskscheduler"
SCHEMA_VERSION: Final = 6
TABLES: Final = frozenset({"task", "run", "store_meta", "task_after"})  # what a current schema must have
MIN_SERVER: Final = 130000  # pg_current_xact_id() and pg_current_snapshot(): PostgreSQL 13

# A row a claim may take (task_free's predicate; the claim and the wake-up repeat it word for
# word, so the planner matches the partial index): live, held by nobody, and not paused, or
# paused with a run_now run waiting (grid_due set).
FREE_ROW: Final = "status = 'scheduled' AND owner IS NULL AND (NOT paused OR grid_due IS NOT NULL)"

# The newest layout. Statements run with search_path set to the store's schema alone.
#
# Times are UTC epoch seconds (double precision), as in the API; the database's clock is
# extract(epoch FROM now()). The change column is the id of the transaction that last wrote
# the row's StoredTask fields (not a sequence: sequence numbers are taken in one order and
# committed in another, so a reader could step past a row committed late; see
# postgres_sql.CHANGES). Ownership (owner, lease_until, fence) is changed by claim, renew
# and release without touching change, since a StoredTask does not show it.
#
# Indexes: task_free serves the claim and next_wakeup (the free live rows, in claim order: a
# claimed row leaves it, so claims never walk past the runs in flight); task_owned the owned
# rows by lease end (few: the runs in flight); task_terminal pruning (it holds only terminal
# rows, so pruning never walks the live million); task_change the change feed.
CREATE: Final[tuple[str, ...]] = (
    """CREATE TABLE store_meta (
        id integer PRIMARY KEY CHECK (id = 1),
        application text NOT NULL,
        schema_version integer NOT NULL,
        minted_high_water bigint NOT NULL CHECK (minted_high_water >= 0)
    )""",
    """CREATE TABLE task (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id text NOT NULL UNIQUE,
        fn_ref text NOT NULL,
        args_json text NOT NULL,
        kwargs_json text NOT NULL,
        trigger_json text NOT NULL,
        options_json text NOT NULL,
        status text NOT NULL CHECK (status IN ('scheduled', 'completed', 'failed', 'cancelled')),
        next_due double precision CHECK (next_due IS NULL OR status = 'scheduled'),
        run_count bigint NOT NULL DEFAULT 0,
        failure_count bigint NOT NULL DEFAULT 0,
        consecutive_failures bigint NOT NULL DEFAULT 0,
        last_error text,
        last_outcome text,
        updated_at double precision NOT NULL,
        owner text,
        lease_until double precision,
        fence bigint NOT NULL DEFAULT 0,
        change bigint NOT NULL DEFAULT pg_current_xact_id()::text::bigint,
        started_fence bigint,
        sealed_fence bigint,
        replaced_fence bigint,
        interrupt_fence bigint,
        paused boolean NOT NULL DEFAULT false,
        grid_due double precision,
        manual_fence bigint,
        lost_runs bigint NOT NULL DEFAULT 0,
        CHECK ((owner IS NULL) = (lease_until IS NULL))
    )""",
    f"CREATE INDEX task_free ON task (next_due, seq) WHERE {FREE_ROW}",
    "CREATE INDEX task_owned ON task (lease_until) WHERE owner IS NOT NULL",
    "CREATE INDEX task_terminal ON task (updated_at, seq) WHERE status <> 'scheduled'",
    "CREATE INDEX task_change ON task (change)",
    """CREATE TABLE run (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id text NOT NULL,
        task_seq bigint NOT NULL,
        run bigint NOT NULL,
        due double precision NOT NULL,
        started double precision,
        finished double precision NOT NULL,
        outcome text NOT NULL,
        error text,
        attempt bigint NOT NULL DEFAULT 1,
        reason text,
        node text,
        manual boolean NOT NULL DEFAULT false,
        value_json text,
        value_note text,
        UNIQUE (task_seq, run)
    )""",
    "CREATE INDEX run_by_task ON run (task_id, id)",
    # Keyed by the dependency first: an outcome looks up its waiters (postgres_after.settle).
    """CREATE TABLE task_after (
        dependency_seq bigint NOT NULL,
        waiter_seq bigint NOT NULL,
        dependency_id text NOT NULL,
        delay double precision NOT NULL,
        PRIMARY KEY (dependency_seq, waiter_seq)
    )""",
    "CREATE INDEX task_after_waiter ON task_after (waiter_seq)",
)
_MARK: Final = (
    "INSERT INTO store_meta (id, application, schema_version, minted_high_water) VALUES (1, %s, %s, 0)"
)


@dataclass(frozen=True, slots=True)
class Migration:
    """One step: brings a schema at ``from_version`` to ``from_version + 1``.

    Attributes:
        from_version: The version the step starts from.
        summary: What changes, for the log.
        apply: Runs the step's statements inside the caller's transaction.
    """

    from_version: int
    summary: str
    apply: Callable[[Connection], None]


def _v1_to_v2(db: Connection) -> None:
    # Nullable columns without a default: a change of the catalogue only, no table rewrite.
    db.execute(
        "ALTER TABLE task ADD COLUMN started_fence bigint, ADD COLUMN sealed_fence bigint, "
        "ADD COLUMN replaced_fence bigint, ADD COLUMN interrupt_fence bigint"
    )


def _v2_to_v3(db: Connection) -> None:
    db.execute(CREATE[-2])  # task_after and its index, as a fresh schema has them
    db.execute(CREATE[-1])


def _v3_to_v4(db: Connection) -> None:
    # Constant defaults and nullable columns: a change of the catalogue only, no table rewrite.
    db.execute(
        "ALTER TABLE run ADD COLUMN attempt bigint NOT NULL DEFAULT 1, ADD COLUMN reason text, "
        "ADD COLUMN node text, ADD COLUMN manual boolean NOT NULL DEFAULT false, "
        "ADD COLUMN value_json text, ADD COLUMN value_note text"
    )


def _operations_step(db: Connection) -> None:
    # A self-contained step (issue 24): new columns (a constant default is a change of the
    # catalogue only, no rewrite), and task_free made again without the paused rows.
    db.execute(
        "ALTER TABLE task ADD COLUMN paused boolean NOT NULL DEFAULT false, "
        "ADD COLUMN grid_due double precision, ADD COLUMN manual_fence bigint"
    )
    db.execute("DROP INDEX IF EXISTS task_free")  # (gone already if a column it used was dropped)
    db.execute(f"CREATE INDEX task_free ON task (next_due, seq) WHERE {FREE_ROW}")


def _v5_to_v6(db: Connection) -> None:
    # A constant default: a change of the catalogue only, no table rewrite.
    db.execute("ALTER TABLE task ADD COLUMN lost_runs bigint NOT NULL DEFAULT 0")


MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(1, "record started, sealed, replaced and interrupted runs of leased rows", _v1_to_v2),
    Migration(2, "add task_after, the edges of schedule_after", _v2_to_v3),
    Migration(3, "add the run ledger's attempt, reason, node, manual and kept value", _v3_to_v4),
    Migration(4, "keep paused tasks and run-now requests (pause, resume, run_now)", _operations_step),
    Migration(5, "count the runs lost with their node (the poison-pill limit)", _v5_to_v6),
)
# Step i starts from version i + 1, and the last one reaches SCHEMA_VERSION.
assert [m.from_version for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION))

_RELATIONS: Final = """
    SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
     ORDER BY c.relname"""
_META_COLUMNS: Final = """
    SELECT a.attname FROM pg_attribute a
     WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped"""
_READ_MARK: Final = "SELECT application, schema_version FROM store_meta WHERE id = 1"


def lock_key(schema: str, purpose: str) -> str:
    """The text an advisory lock of ``schema`` is keyed on (hashed by the server)."""
    return f"{APPLICATION}:{schema}:{purpose}"


def set_search_path(db: Connection, schema: str, *, local: bool) -> None:
    """Make ``schema`` the only schema unqualified names resolve in (``pg_catalog`` aside).

    ``local``: for the current transaction only (else for the session).
    """
    path = sql.Identifier(schema).as_string(db)
    db.execute("SELECT set_config('search_path', %s, %s)", (path, local))


def read_version(db: Connection, location: str, schema: str) -> int:
    """Judge ``schema`` without writing; return its layout version (0: missing or empty).

    Raises:
        StoreError: The schema holds tables that are not a store of ours, a damaged store,
            or a store of a newer version; the message names it and says why.
    """
    relations: dict[str, str] = dict(db.execute(_RELATIONS, (schema,)).fetchall())
    if "store_meta" not in relations:
        if not relations:
            return 0
        raise StoreError(
            f"{location}: schema {schema!r} holds tables that are not a {APPLICATION} store "
            f"(tables: {', '.join(relations)}); use an empty schema (schema=...)"
        )
    qualified = sql.Identifier(schema, "store_meta").as_string(db)
    columns = {row[0] for row in db.execute(_META_COLUMNS, (qualified,))}
    mark = db.execute(_READ_MARK).fetchone() if {"application", "schema_version"} <= columns else None
    if mark is None or mark[0] != APPLICATION:
        raise StoreError(
            f"{location}: schema {schema!r} is not a {APPLICATION} store "
            f"(its store_meta is not ours; tables: {', '.join(relations)})"
        )
    version: int = mark[1]
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{location}: schema {schema!r} has store schema version {version}, newer than this "
            f"version of {APPLICATION} understands ({SCHEMA_VERSION}); upgrade {APPLICATION}"
        )
    expected = TABLES if version >= 3 else TABLES - {"task_after"}
    missing = sorted(expected - relations.keys())
    if version < 1 or missing:
        raise StoreError(
            f"{location}: schema {schema!r} is a damaged {APPLICATION} store "
            f"(schema version {version}, missing tables: {', '.join(missing) or 'none'})"
        )
    return version


def prepare(
    db: Connection,
    location: str,
    schema: str,
    *,
    migrations: Sequence[Migration] = MIGRATIONS,
    version: int = SCHEMA_VERSION,
) -> None:
    """Create the store in ``schema`` (and the schema), or migrate an older one, or check it.

    One transaction, under an advisory lock on the schema's name: concurrent ``prepare``
    calls on the same schema run one after the other, so exactly one creates or migrates.
    ``db`` must be in autocommit mode, with no transaction open. ``migrations`` and
    ``version`` are for tests of the migration machinery.

    Raises:
        StoreError: as ``read_version``, or the server is older than PostgreSQL 13.
        psycopg.Error: The database refused a statement (for instance, no privilege).
    """
    if db.info.server_version < MIN_SERVER:
        raise StoreError(
            f"{location}: PostgreSQL {db.info.server_version // 10000} is too old for the task "
            f"store (it needs {MIN_SERVER // 10000} or newer)"
        )
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key(schema, "ddl"),))
        exists = db.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        if exists is None:
            db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        set_search_path(db, schema, local=True)
        found = read_version(db, location, schema)
        if found == 0:
            for statement in CREATE:
                db.execute(statement)  # constant DDL: no parameters
            db.execute(_MARK, (APPLICATION, version))
            logger.info("created task store %s (schema version %d)", location, version)
        elif found < version:
            for step in migrations[found - 1 :]:
                logger.info(
                    "migrating task store %s from schema version %d: %s",
                    location,
                    step.from_version,
                    step.summary,
                )
                step.apply(db)
            db.execute("UPDATE store_meta SET schema_version = %s WHERE id = 1", (version,))
