"""The PostgreSQL store on its own: opening, refusing schemas that are not ours, migration,
errors, reconnecting, forks. (The Store contract itself is in test_conformance.)"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import sql

from actors.errors import StoreError
from actors.store import PostgresStore
from actors.store.postgres_connections import redact
from actors.store.postgres_schema import MIGRATIONS, SCHEMA_VERSION, Migration, prepare
from tests.store.helpers import ROOT, definition, record, update
from tests.store.pg import DSN, admin, backends, drop_schemas, spawn_node, terminate, unique_node

Node = Callable[..., PostgresStore]


@pytest.fixture
def schema(pg_schema: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A raw connection whose search_path is the test's schema, for setting up by hand."""
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        yield db


def relations(db: psycopg.Connection[tuple[object, ...]], name: str) -> list[object]:
    query = "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = %s"
    return sorted(row[0] for row in db.execute(query, (name,)))


def test_location_names_server_database_and_schema_but_no_password(pg_schema: str) -> None:
    url = PostgresStore("postgresql://ada:s3cret@db.example:6543/sched?sslmode=prefer", schema="s")
    assert url.location == "postgresql://ada@db.example:6543/sched?sslmode=prefer (schema s)"
    plain = PostgresStore("host=db.example dbname=sched user=ada password=s3cret", schema="s")
    assert "s3cret" not in plain.location
    assert "db.example" in plain.location

    with PostgresStore(DSN, schema=pg_schema) as store:
        assert store.location.endswith(f"(schema {pg_schema})")


def test_an_unreachable_server_is_a_store_error_naming_it() -> None:
    store = PostgresStore("postgresql://nobody:pw@127.0.0.1:1/nowhere", schema="s", timeout=2)

    with pytest.raises(StoreError, match=r"127\.0\.0\.1:1/nowhere .*cannot connect") as refused:
        store.open()

    assert isinstance(refused.value.__cause__, psycopg.OperationalError)
    assert "pw" not in str(refused.value)
    with pytest.raises(StoreError, match="not open"):
        store.get("a")


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="lease"):
        PostgresStore(DSN, lease=0)
    with pytest.raises(ValueError, match="poll"):
        PostgresStore(DSN, poll=float("inf"))
    with pytest.raises(ValueError, match="schema"):
        PostgresStore(DSN, schema="x" * 64)
    with pytest.raises(ValueError, match="node"):
        PostgresStore(DSN, node="")
    with pytest.raises(ValueError, match="run_history"):
        PostgresStore(DSN, run_history=-1)
    with pytest.raises(ValueError, match="lock_timeout"):
        PostgresStore(DSN, lock_timeout=0)
    with pytest.raises(ValueError, match="statement_timeout"):
        PostgresStore(DSN, statement_timeout=float("nan"))
    with pytest.raises(ValueError, match="connection string"):
        PostgresStore("host=a = b")


def test_a_missing_schema_is_created_and_the_default_is_the_current_schema(pg_schema: str) -> None:
    missing = f"{pg_schema}_new"
    try:
        with PostgresStore(DSN, schema=missing) as store:
            store.add(definition("a"))
        with admin() as db:
            assert relations(db, missing) != []
    finally:
        drop_schemas([missing])

    # No schema given: the connection's current one (here set through the DSN's options).
    dsn = psycopg.conninfo.make_conninfo(DSN, options=f"-c search_path={pg_schema}")
    with PostgresStore(dsn) as store:
        assert store.location.endswith(f"(schema {pg_schema})")
        store.add(definition("b"))
    with PostgresStore(DSN, schema=pg_schema) as store:
        assert [t.task_id for t in store.load()] == ["b"]


def test_several_nodes_can_open_a_new_store_at_once(pg_schema: str) -> None:
    stores = [PostgresStore(DSN, schema=pg_schema, node=f"n{i}") for i in range(6)]
    start = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def opener(store: PostgresStore) -> None:
        try:
            start.wait(timeout=10)
            store.open()
            store.add(definition(store.node))
        except BaseException as error:  # reported by the test below
            errors.append(error)

    threads = [threading.Thread(target=opener, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    try:
        assert not errors
        assert sorted(t.task_id for t in stores[0].load()) == [f"n{i}" for i in range(6)]
    finally:
        for store in stores:
            store.close()


# -- schemas that are not a current store of ours ------------------------------------------------


def foreign_tables(db: psycopg.Connection[tuple[object, ...]]) -> None:
    db.execute("CREATE TABLE users (id int PRIMARY KEY, name text)")
    db.execute("INSERT INTO users VALUES (1, 'ada')")


def foreign_meta(db: psycopg.Connection[tuple[object, ...]]) -> None:
    db.execute("CREATE TABLE store_meta (id int PRIMARY KEY, version int)")


def newer_store(db: psycopg.Connection[tuple[object, ...]]) -> None:
    db.execute("CREATE TABLE store_meta (id int, application text, schema_version int)")
    db.execute(
        "INSERT INTO store_meta VALUES (1, 'pykka-taskscheduler', %s)",
        (SCHEMA_VERSION + 1,),
    )


def damaged_store(db: psycopg.Connection[tuple[object, ...]]) -> None:
    db.execute("CREATE TABLE store_meta (id int, application text, schema_version int)")
    db.execute("INSERT INTO store_meta VALUES (1, 'pykka-taskscheduler', %s)", (SCHEMA_VERSION,))
    db.execute("CREATE TABLE task (x int)")


BAD_SCHEMAS = [
    (foreign_tables, r"holds tables that are not a pykka-taskscheduler store \(tables: users\)"),
    (foreign_meta, r"is not a pykka-taskscheduler store \(its store_meta is not ours"),
    (newer_store, f"has store schema version {SCHEMA_VERSION + 1}, newer than"),
    (damaged_store, r"damaged pykka-taskscheduler store .*missing tables: run, task_after\)"),
]


@pytest.mark.parametrize(("make", "reason"), BAD_SCHEMAS, ids=[make.__name__ for make, _ in BAD_SCHEMAS])
def test_a_schema_that_is_not_ours_is_refused_and_left_untouched(
    schema: psycopg.Connection[tuple[object, ...]],
    pg_schema: str,
    make: Callable[[psycopg.Connection[tuple[object, ...]]], None],
    reason: str,
) -> None:
    make(schema)
    before = relations(schema, pg_schema)

    with pytest.raises(StoreError, match=reason) as refused:
        PostgresStore(DSN, schema=pg_schema).open()

    assert str(refused.value).startswith(f"{redact(DSN)} (schema {pg_schema}): schema {pg_schema!r} ")
    assert relations(schema, pg_schema) == before


def test_the_migration_steps_run_in_order_in_one_transaction(pg_schema: str) -> None:
    with PostgresStore(DSN, schema=pg_schema) as store:
        store.add(definition("a"))
    applied: list[int] = []

    def step(db: psycopg.Connection[tuple[object, ...]]) -> None:
        applied.append(1)
        db.execute("ALTER TABLE task ADD COLUMN note text")

    with admin() as db:
        steps = [*MIGRATIONS, Migration(SCHEMA_VERSION, "add task.note", step)]
        prepare(db, "here", pg_schema, migrations=steps, version=SCHEMA_VERSION + 1)
        assert applied == [1]
        with pytest.raises(StoreError, match="newer than"):  # this code knows the current version only
            prepare(db, "here", pg_schema)
        columns = db.execute(
            "SELECT count(*) FROM information_schema.columns"
            " WHERE table_schema = %s AND column_name = 'note'",
            (pg_schema,),
        ).fetchone()
        assert columns == (1,)


# -- errors and connections ----------------------------------------------------------------------


def test_a_save_that_fails_keeps_nothing_and_says_why(
    make_node: Node, schema: psycopg.Connection[tuple[object, ...]]
) -> None:
    store = make_node("a")
    a, _ = store.add(definition("a"))
    schema.execute(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'refused by trigger'; END $$"
    )
    schema.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON run FOR EACH ROW "
        "WHEN (NEW.outcome = 'refused') EXECUTE FUNCTION refuse()"
    )

    with pytest.raises(StoreError, match=r"save failed: refused by trigger") as failed:
        store.save([update(a, run_count=2)], [record(a, 1), record(a, 2, outcome="refused")])

    assert isinstance(failed.value.__cause__, psycopg.errors.RaiseException)
    assert store.get("a") == a
    assert store.runs() == []
    schema.execute("DROP TRIGGER refuse ON run")
    assert store.save([update(a, run_count=1)], [record(a, 1)]) == 1  # the pool is fine


def test_a_node_carries_on_after_its_connections_are_cut(make_node: Node) -> None:
    name = unique_node("a")  # only this test's connections are cut
    store = make_node(name)
    store.add(definition("a"))
    assert store.renew([]) == []
    pids = [pid for pid, _ in backends(name)]
    assert pids

    terminate(pids)

    assert [t.task_id for t in store.load()] == ["a"]  # one retry, on a fresh connection
    store.add(definition("b"))
    assert store.cancel("b")
    assert {pid for pid, _ in backends(name)}.isdisjoint(pids)


@pytest.mark.parametrize(
    ("bounds", "ended_by"),
    [
        ({"lock_timeout": 0.15, "statement_timeout": 30.0}, "lock_timeout=0.15 s"),
        ({"lock_timeout": 30.0, "statement_timeout": 0.15}, "statement_timeout=0.15 s"),
    ],
    ids=["lock_timeout", "statement_timeout"],
)
def test_every_call_ends_within_its_bound_while_another_session_locks_the_tables(
    make_node: Node, pg_schema: str, bounds: dict[str, float], ended_by: str
) -> None:
    store = make_node("bounded", **bounds)
    held = store.add(definition("held", next_due=store.db_now() - 1))[0]
    store.add(definition("free", next_due=store.db_now() - 1))
    (lease,) = store.claim_due(1)
    calls: dict[str, Callable[[], object]] = {
        "add": lambda: store.add(definition("new")),
        "add_many": lambda: store.add_many([definition("new-1"), definition("new-2")]),
        "cancel": lambda: store.cancel("free"),
        "save": lambda: store.save([update(held, run_count=1)], [record(held, 1)]),
        "save_outcomes": lambda: store.save_outcomes([update(held, run_count=1)]),
        "reserve_minted": lambda: store.reserve_minted(4),
        "minted_high_water": store.minted_high_water,
        "get": lambda: store.get("held"),
        "load": store.load,
        "tasks": store.tasks,
        "runs": store.runs,
        "claim_due": lambda: store.claim_due(4),
        "renew": lambda: store.renew([lease]),
        "start": lambda: store.start(lease, seal=True),
        "release": lambda: store.release([lease]),
        "runs_in_flight": store.runs_in_flight,
        "next_wakeup": store.next_wakeup,
        "changes": lambda: store.changes(0),
        "references": lambda: store.references(0),
        "open": lambda: make_node("bounded-too", **bounds),
    }
    with admin() as locker:
        locker.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        locker.execute("BEGIN")
        locker.execute("LOCK TABLE task, run, store_meta IN ACCESS EXCLUSIVE MODE")
        for name, call in calls.items():
            began = time.monotonic()
            op = name.removesuffix("_outcomes")  # save_outcomes is a save
            with pytest.raises(StoreError, match=f"{op} failed|cannot be prepared") as failed:
                call()
            took = time.monotonic() - began
            assert ended_by in str(failed.value), name
            assert took < 3.0, f"{name} took {took:.1f} s"  # one bound of 0.15 s, not retried
        assert store.db_now() > 0  # touches no table: it completes
        locker.execute("ROLLBACK")
    assert store.renew([lease]) != []  # the store carries on once the lock is gone


def test_a_forked_child_refuses_the_store_and_leaves_the_parent_s_sessions_alone(pg_schema: str) -> None:
    process = spawn_node("fork", DSN, pg_schema)
    out, _ = process.communicate(timeout=30)

    assert out.splitlines() == ["child refused", "parent ok hint renewed 1"]
    assert process.returncode == 0


def test_a_closed_store_refuses_the_shared_calls(make_node: Node) -> None:
    store = make_node("a")
    store.close()
    for call in (
        store.db_now,
        lambda: store.claim_due(1),
        lambda: store.claim_due(0),
        lambda: store.renew([]),
        lambda: store.release([]),
        store.next_wakeup,
        lambda: store.changes(0),
    ):
        with pytest.raises(StoreError, match="not open"):
            call()


def test_a_store_cannot_be_opened_twice(pg_schema: str) -> None:
    with PostgresStore(DSN, schema=pg_schema) as store, pytest.raises(StoreError, match="open already"):
        store.open()


def test_the_package_imports_without_psycopg() -> None:
    program = (
        "import sys\n"
        "sys.modules['psycopg'] = sys.modules['psycopg_pool'] = None  # as if not installed\n"
        "import actors, actors.store\n"
        "from actors.store import SQLiteStore, SharedStore, Lease\n"
        "try:\n"
        "    actors.store.PostgresStore\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "install pykka-taskscheduler[postgres]" in done.stdout
