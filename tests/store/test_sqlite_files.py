"""The SQLite store's file: pragmas, refusing files that are not ours, migration, inspection."""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from actors.errors import StoreError, StoreLockedError
from actors.store import SQLiteStore
from actors.store.sqlite_schema import APPLICATION_ID, SCHEMA_VERSION
from tests.store.helpers import definition, fingerprint, record, update


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def pragma(path: Path, name: str) -> object:
    db = raw(path)
    try:
        return db.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        db.close()


def schema(path: Path) -> list[tuple[str, str, str]]:
    db = raw(path)
    try:
        rows = db.execute("SELECT type, name, sql FROM sqlite_schema ORDER BY name").fetchall()
    finally:
        db.close()
    return [(kind, name, " ".join((sql or "").split())) for kind, name, sql in rows]


def test_a_new_file_is_marked_as_ours_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with SQLiteStore(path) as store:
        store.add(definition("a"))

    assert pragma(path, "application_id") == APPLICATION_ID
    assert pragma(path, "user_version") == SCHEMA_VERSION
    assert pragma(path, "journal_mode") == "wal"
    assert (tmp_path / "new.db.lock").exists()


def test_an_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with SQLiteStore(path) as store:
        store.add(definition("a"))
    with SQLiteStore(path) as store:
        assert [t.task_id for t in store.load()] == ["a"]


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="synchronous"):
        SQLiteStore("x.db", synchronous="OFF")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="run_history"):
        SQLiteStore("x.db", run_history=-1)


def test_synchronous_full_works(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "full.db", synchronous="FULL") as store:
        store.add(definition("a"))
        assert store.cancel("a")


# -- files that are not a current store of ours ------------------------------------------------


def random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(8192))


def foreign_database(path: Path) -> None:
    db = raw(path)
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    db.execute("INSERT INTO users (name) VALUES ('ada')")
    db.close()


def foreign_application(path: Path) -> None:
    db = raw(path)
    db.execute("PRAGMA application_id = 1234")
    db.close()


def newer_store(path: Path) -> None:
    with SQLiteStore(path) as store:
        store.add(definition("a"))
    db = raw(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()


def damaged_store(path: Path) -> None:
    db = raw(path)
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    db.execute("CREATE TABLE task (x)")
    db.close()


BAD_FILES: list[tuple[Callable[[Path], None], str]] = [
    (random_bytes, "file is not a database"),
    (foreign_database, r"not a pykka-taskscheduler store \(application_id 0x0, tables: users\)"),
    (foreign_application, r"not a pykka-taskscheduler store \(application_id 0x4d2, tables: none\)"),
    (newer_store, f"schema version {SCHEMA_VERSION + 1}, newer than"),
    (damaged_store, "damaged pykka-taskscheduler store .* missing tables: run, store_meta"),
]


def open_store(path: Path) -> None:
    SQLiteStore(path).open()


def inspect_store(path: Path) -> None:
    SQLiteStore.inspect(path)


@pytest.mark.parametrize("opener", [open_store, inspect_store])
@pytest.mark.parametrize(("make", "reason"), BAD_FILES, ids=[make.__name__ for make, _ in BAD_FILES])
def test_a_file_that_is_not_ours_is_refused_and_left_untouched(
    tmp_path: Path, make: Callable[[Path], None], reason: str, opener: Callable[[Path], None]
) -> None:
    path = tmp_path / "bad.db"
    make(path)
    before = fingerprint(path)
    lock_existed = (tmp_path / "bad.db.lock").exists()

    with pytest.raises(StoreError, match=reason) as refused:
        opener(path)

    assert not isinstance(refused.value, StoreLockedError)
    assert str(refused.value).startswith(str(path))
    assert fingerprint(path) == before
    assert (tmp_path / "bad.db.lock").exists() == lock_existed  # not even a lock file was made


def test_a_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="nowhere"):
        SQLiteStore(tmp_path / "nowhere" / "s.db").open()


def test_inspecting_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such store file"):
        SQLiteStore.inspect(tmp_path / "missing.db")
    assert list(tmp_path.iterdir()) == []


# -- migration -----------------------------------------------------------------------------------

# Schema version 1, written out by hand: what the first layout was. Opening it must migrate it.
V1_SCHEMA = [
    """CREATE TABLE task (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL UNIQUE,
        fn_ref TEXT NOT NULL,
        args_json TEXT NOT NULL,
        kwargs_json TEXT NOT NULL,
        trigger_json TEXT NOT NULL,
        options_json TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('scheduled', 'completed', 'failed', 'cancelled')),
        next_due REAL CHECK (next_due IS NULL OR status = 'scheduled'),
        run_count INTEGER NOT NULL DEFAULT 0,
        failure_count INTEGER NOT NULL DEFAULT 0,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        last_outcome TEXT,
        updated_at REAL NOT NULL
    )""",
    "CREATE INDEX task_terminal ON task (updated_at, seq) WHERE status <> 'scheduled'",
    """CREATE TABLE run (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        task_seq INTEGER NOT NULL,
        run INTEGER NOT NULL,
        due REAL NOT NULL,
        started REAL,
        finished REAL NOT NULL,
        outcome TEXT NOT NULL,
        error TEXT,
        UNIQUE (task_seq, run)
    )""",
    "CREATE INDEX run_by_task ON run (task_id, id)",
]


def make_v1(path: Path) -> None:
    db = raw(path)
    db.execute("BEGIN")
    for statement in V1_SCHEMA:
        db.execute(statement)
    insert = (
        "INSERT INTO task (task_id, fn_ref, args_json, kwargs_json, trigger_json, options_json,"
        " status, next_due, run_count, updated_at) VALUES (?, 'jobs:fn', '[]', '{}', '{}', '{}', ?, ?, ?, 0)"
    )
    db.execute(insert, ("task-7", "scheduled", 100.0, 2))
    db.execute(insert, ("nightly", "scheduled", 200.0, 0))
    db.execute(insert, ("task-9x", "cancelled", None, 0))  # not a minted id
    db.execute(  # a ledger row of a task pruned long ago
        "INSERT INTO run (task_id, task_seq, run, due, finished, outcome) VALUES (?, 99, 1, 1, 2, 'done')",
        ("task-12",),
    )
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    db.execute("COMMIT")
    db.close()


def test_a_v1_file_is_migrated_forward(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    make_v1(path)
    with pytest.raises(StoreError, match=r"schema version 1.*open it with a scheduler"):
        SQLiteStore.inspect(path)

    with SQLiteStore(path) as store:
        assert store.minted_high_water() == 12  # task-12 from the ledger: never minted again
        assert store.reserve_minted(1) == range(13, 14)
        assert [(t.task_id, t.next_due, t.run_count) for t in store.load()] == [
            ("task-7", 100.0, 2),
            ("nightly", 200.0, 0),
        ]
        assert [r.task_id for r in store.runs()] == ["task-12"]

    assert pragma(path, "user_version") == SCHEMA_VERSION
    fresh = tmp_path / "fresh.db"
    with SQLiteStore(fresh):
        pass
    assert schema(path) == schema(fresh)
    with SQLiteStore.inspect(path) as reader:
        assert reader.minted_high_water() == 13


# -- checkpoints -------------------------------------------------------------------------------


def test_checkpoints_run_on_a_thread_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        checkpointer = store._checkpointer  # white box: the thread has no public face
        assert checkpointer is not None
        assert "store-checkpoint" in {t.name for t in threading.enumerate()}
        size = path.stat().st_size
        for i in range(300):  # more rows than one checkpoint request needs
            store.add(definition(f"t{i}"))

        assert checkpointer.wait_completed(1, timeout=10)
        assert path.stat().st_size > size  # the log was copied into the file
    assert "store-checkpoint" not in {t.name for t in threading.enumerate()}


# -- failures inside a transaction ---------------------------------------------------------------


def test_a_save_that_fails_keeps_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        a, _ = store.add(definition("a"))
        other = raw(path)  # a real failure from inside SQLite: a trigger that aborts
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON run WHEN NEW.outcome = 'refused' "
            "BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END"
        )

        with pytest.raises(StoreError, match=f"^{path}: save failed: refused by trigger"):
            store.save([update(a, run_count=2)], [record(a, 1), record(a, 2, outcome="refused")])

        assert store.get("a") == a
        assert store.runs() == []
        other.execute("DROP TRIGGER refuse")
        other.close()
        assert store.save([update(a, run_count=1)], [record(a, 1)]) == 1  # the connection is fine


def test_a_save_writes_a_new_trigger_of_a_live_task_only(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        a, _ = store.add(definition("a"))
        b, _ = store.add(definition("b"))
        store.save([update(a), update(b)])  # no trigger given: each keeps its own
        same = store.get("a")
        assert same is not None
        assert same.trigger_json == a.trigger_json
        store.save([update(a, trigger_json='{"delay": 5.0}')])
        kept = store.get("a")
        assert kept is not None
        assert kept.trigger_json == '{"delay": 5.0}'
        assert store.cancel("b") is True
        store.save([update(b, trigger_json='{"delay": 5.0}')])  # a terminal row keeps its trigger
        ended = store.get("b")
        assert ended is not None
        assert ended.trigger_json == b.trigger_json
    with pytest.raises(TypeError, match="trigger_json"):
        update(a, trigger_json=5)


# -- inspection ----------------------------------------------------------------------------------


def test_inspect_reads_committed_data_while_a_scheduler_holds_and_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        a, _ = store.add(definition("a"))
        with SQLiteStore.inspect(path) as reader:
            assert reader.location == str(path)
            assert reader.load() == [a]

            store.save([update(a, run_count=1, last_outcome="completed")], [record(a, 1)])
            store.add(definition("b"))
            assert store.cancel("b")
            store.reserve_minted(5)

            assert reader.get("a") == store.get("a")
            assert reader.tasks() == store.tasks()
            assert [t.task_id for t in reader.load()] == ["a"]
            assert reader.runs("a") == [record(a, 1)]
            assert reader.minted_high_water() == 5
        store.add(definition("c"))  # the scheduler never noticed

    with SQLiteStore.inspect(path) as reader:
        reader.close()
        with pytest.raises(StoreError, match="closed"):
            reader.load()


def test_inspect_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        a, _ = store.add(definition("a"))
        store.save([], [record(a, 1)])
    before = fingerprint(path)

    with SQLiteStore.inspect(path) as reader:
        assert [t.task_id for t in reader.tasks()] == ["a"]
        assert len(reader.runs()) == 1

    assert fingerprint(path) == before
